"""One error family, so callers can catch everything this package refuses with one class.

Every error names the path of what is wrong (a submit-config key such as ``otel.endpoint``, a
template name, or a collector-config path such as ``exporters.otlp_http/backend.endpoint``) and
says how to fix it.  Messages never carry values that may be secret (the token) or the whole
config: only the path, the offending value where it is harmless, and the fix.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar


@dataclass(frozen=True)
class Violation:
    """One problem, at a dotted path (a submit-config key, a template, a collector-config path)."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path or '<root>'}: {self.message}"


_E = TypeVar("_E", bound="OtelConfigError")


class OtelConfigError(ValueError):
    """Base class: something the package was given cannot produce a working collector config.

    ``violations`` holds every problem found, as data, from construction on; ``path`` and
    ``message`` are the first one's. The message shows one problem per line.
    """

    def __init__(self, path: str, message: str) -> None:
        self._set((Violation(path, message),), "")

    @classmethod
    def of(cls: type[_E], violations: Sequence[Violation], source: str = "") -> _E:
        """An error listing several problems; ``source`` names what they were found in."""
        error = cls.__new__(cls)
        error._set(tuple(violations) or (Violation("", "invalid"),), source)
        return error

    def _set(self, violations: tuple[Violation, ...], source: str) -> None:
        self.violations = violations
        self.path = violations[0].path
        self.message = violations[0].message
        lines = "\n".join(str(v) for v in violations)
        ValueError.__init__(self, f"{source} is invalid:\n{lines}" if source else lines)


class SubmitConfigError(OtelConfigError):
    """The submit config (or the submitting environment it names) is invalid."""


class TemplateError(OtelConfigError):
    """A template is missing, malformed, or incompatible with this package or collector."""


class JobDirError(OtelConfigError):
    """A file of a job directory cannot be read as the collector or the package wrote it (not
    a regular file, unreadable): ``report`` and ``drain`` name it and read nothing more."""


def dotted(path: Iterable[Any]) -> str:
    """``otel.exporters[1]``-style path. A key that would break the one-line message (a line
    break, an empty key) is written as a JSON string in brackets: ``driver.benchmarks["a\\nb"]``.
    """
    text = ""
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        elif not part or not str(part).isprintable():
            text += f"[{json.dumps(str(part))}]"
        else:
            text += f".{part}" if text else str(part)
    return text


class CollectorConfigError(OtelConfigError):
    """A collector config fails the schema or the checks the schema cannot express."""

    def __init__(self, violations: Sequence[Violation], source: str = "collector config") -> None:
        self._set(tuple(violations) or (Violation("", "invalid"),), source)


class OtelConfigWarning(UserWarning):
    """Something that works but is likely not what was meant (a job directory outside
    ``job.output_path``, and the collector-config findings below); raised through
    :mod:`warnings` for Python callers, printed as ``warning:`` lines by the CLI. ``violation``
    holds it as data."""

    def __init__(self, violation: Violation) -> None:
        super().__init__(str(violation))
        self.violation = violation


class CollectorConfigWarning(OtelConfigWarning):
    """Something the collector accepts but this package advises against (a deprecated component
    name, a component no pipeline uses): ``violation`` holds its path and the fix. ``validate``
    prints it and exits 0."""
