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
from typing import Any


class OtelConfigError(ValueError):
    """Base class: something the package was given cannot produce a working collector config."""

    def __init__(self, path: str, message: str) -> None:
        self.path = path
        self.message = message
        super().__init__(f"{path}: {message}" if path else message)


class SubmitConfigError(OtelConfigError):
    """The submit config (or the submitting environment it names) is invalid."""


class TemplateError(OtelConfigError):
    """A template is missing, malformed, or incompatible with this package or collector."""


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


@dataclass(frozen=True)
class Violation:
    """One problem in a collector config, at a dotted YAML path."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path or '<root>'}: {self.message}"


class CollectorConfigError(OtelConfigError):
    """A collector config fails the schema or the checks the schema cannot express.

    ``violations`` holds every problem found; the message shows one per line as
    ``<yaml path>: <message>``.
    """

    def __init__(self, violations: Sequence[Violation], source: str = "collector config") -> None:
        self.violations = tuple(violations)
        first = self.violations[0] if self.violations else Violation("", "invalid")
        super().__init__(first.path, first.message)
        self.args = (f"{source} is invalid:\n" + "\n".join(str(v) for v in self.violations),)

    def __str__(self) -> str:
        return str(self.args[0])
