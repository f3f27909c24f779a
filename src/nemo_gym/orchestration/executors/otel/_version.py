"""The installed package's version, read lazily (importlib.metadata costs a few milliseconds)."""

from __future__ import annotations

import functools


@functools.cache
def package_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("nemo-gym-otel")
    except PackageNotFoundError:  # running from a source tree that was never installed
        return "0+unknown"


def package_version_tuple() -> tuple[int, int, int]:
    release = package_version().split("+")[0].split(".")
    numbers = [int(part) if part.isdigit() else 0 for part in release] + [0, 0, 0]
    return numbers[0], numbers[1], numbers[2]
