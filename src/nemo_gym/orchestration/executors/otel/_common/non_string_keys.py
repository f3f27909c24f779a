"""Keys YAML reads as something other than a string.

An unquoted ``on``, ``null``, ``8080`` or ``2001-12-14`` as a key becomes a boolean, None, an
integer or a date; a JSON Schema speaks only of string keys, and a benchmark or component named
that way would be silently retyped. Both the submit config and a collector config report such
a key here, before their schema runs, with the one fix: quote it.
"""

from __future__ import annotations

from typing import Any

from .errors import Violation, dotted

_SHOWN = 40  # a longer key (an integer of thousands of digits) is not repeated


def non_string_key(path: list[Any], key: Any) -> Violation:
    """The violation for ``key`` under ``path``."""
    shown = repr(key)
    named = f"the key {shown}" if len(shown) <= _SHOWN else "a long key"
    return Violation(
        dotted(path),
        f"has {named}, which YAML reads as {type(key).__name__}; quote it to make it a string",
    )
