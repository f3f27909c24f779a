"""The package's version, kept here and read by the build (``[tool.hatch.version]``).

A constant rather than ``importlib.metadata``: that import alone (email, csv, socket...) cost
a submission's first render tens of milliseconds.
"""

from __future__ import annotations

__version__ = "0.1.0"


def package_version() -> str:
    return __version__


def package_version_tuple() -> tuple[int, int, int]:
    release = package_version().split("+")[0].split(".")
    numbers = [int(part) if part.isdigit() else 0 for part in release] + [0, 0, 0]
    return numbers[0], numbers[1], numbers[2]
