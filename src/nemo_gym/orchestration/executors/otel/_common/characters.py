"""The characters no collector value, and no command line of the job step, can carry."""

from __future__ import annotations


def invalid_character(text: str) -> str | None:
    """The first character no collector value may hold (controls, lone surrogates), if any:
    YAML refuses them, and a line break or NUL ends the step's command line too."""
    for char in text:
        code = ord(char)
        if code < 0x20 or code == 0x7F or 0x80 <= code < 0xA0 or 0xD800 <= code <= 0xDFFF:
            return char
    return None
