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


# Measured on both lines' binaries: a value of the Prometheus receiver's scrape config holding
# one of these fails the receiver's own YAML round trip (yaml: could not find expected ':' /
# control characters are not allowed), so the collector does not start.
_PROMETHEUS_YAML = frozenset("\u2028\u2029\ufffe\uffff")


def prometheus_unreadable(text: str) -> str | None:
    """The first character the Prometheus receiver cannot read back, if any: it rewrites its
    scrape config as YAML, where Unicode's line and paragraph separators break a line and its
    noncharacters U+FFFE and U+FFFF are refused."""
    return next((char for char in text if char in _PROMETHEUS_YAML), None)
