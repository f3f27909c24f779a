"""The one way a value enters a rendered collector config.

Templates never paste raw text: every interpolated value goes through :func:`scalar`, which emits
a double-quoted YAML scalar (so no value can change type, open a mapping or start a comment) and
doubles ``$`` (so the collector's start-up expansion leaves the text as written). Only
:class:`EnvRef` objects, which the renderer creates and templates cannot, emit a ``${env:...}``
expansion.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from .._common.characters import invalid_character

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# Characters YAML must escape in a double-quoted scalar, or that would read ambiguously.
_NEEDS_ESCAPE = {"\\": "\\\\", '"': '\\"'}
# Printable ASCII without the characters that change: the text is its own escaped form.
_PLAIN = re.compile(r"[ !#%-\[\]-~]*\Z")


@dataclass(frozen=True)
class EnvRef:
    """A value the collector resolves from its own environment at start-up."""

    name: str

    def __post_init__(self) -> None:
        if not _ENV_NAME.match(self.name):
            raise ValueError(f"{self.name!r} is not an environment variable name")

    def __str__(self) -> str:
        return "${env:" + self.name + "}"


@dataclass(frozen=True)
class Joined:
    """Literal text around renderer placeholders, e.g. ``Bearer ${env:OTEL_TOKEN}``."""

    parts: tuple[str | EnvRef, ...]


def joined(*parts: str | EnvRef) -> Joined:
    for part in parts:
        if not isinstance(part, (str, EnvRef)):
            raise TypeError("joined() takes strings and renderer placeholders only")
    return Joined(parts)


def _escape_text(text: str) -> str:
    if _PLAIN.match(text):  # most values: nothing to check or escape
        return text
    bad = invalid_character(text)
    if bad is not None:
        raise ValueError(f"contains the control character U+{ord(bad):04X}")
    out = []
    for char in text.replace("$", "$$"):
        if char in _NEEDS_ESCAPE:
            out.append(_NEEDS_ESCAPE[char])
        elif char.isascii() or char.isprintable():
            out.append(char)
        elif ord(char) > 0xFFFF:
            out.append(f"\\U{ord(char):08X}")
        else:
            out.append(f"\\u{ord(char):04X}")
    return "".join(out)


def scalar(value: Any) -> str:
    """A YAML scalar that the collector reads back as exactly ``value``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return '"' + _escape_text(value) + '"'
    if isinstance(value, EnvRef):
        return f'"{value}"'
    if isinstance(value, Joined):
        return (
            '"'
            + "".join(str(p) if isinstance(p, EnvRef) else _escape_text(p) for p in value.parts)
            + '"'
        )
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(scalar(v) for v in value) + "]"
    raise TypeError(f"cannot render a {type(value).__name__} as a collector value")
