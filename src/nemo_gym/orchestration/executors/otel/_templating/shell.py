"""The one way a value enters the job step's bash.

The step's templates (``templates/_step/``) never paste raw text: every value goes through
:func:`shell_words`, shell quoting as ``shlex.quote`` does it (a word that needs no quotes stays
as it is; any other is single-quoted), so a path holding spaces, quotes, ``$`` or backquotes is
one literal word, never code. Integers are digits; a list is its items as words, one space apart
(a command line, a list of files).
"""

from __future__ import annotations

import shlex
from pathlib import PurePath
from typing import Any


def shell_word(value: Any) -> str:
    """``value`` as one bash word that reads back exactly as ``value``."""
    if isinstance(value, bool):  # before int: True is an int, and no bash value
        raise TypeError("cannot render a bool as a shell word")
    if isinstance(value, int):
        return str(value)
    if isinstance(value, (str, PurePath)):
        return shlex.quote(str(value))
    raise TypeError(f"cannot render a {type(value).__name__} as a shell word")


def shell_words(value: Any) -> str:
    """:func:`shell_word` of ``value``, or of each item of a list or tuple, one space apart."""
    if isinstance(value, (list, tuple)):
        return " ".join(shell_word(item) for item in value)
    return shell_word(value)
