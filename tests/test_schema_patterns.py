"""Every ``pattern`` in every shipped schema is anchored on the whole string.

JSON Schema matches patterns anywhere (``re.search`` in Python's jsonschema), and Python's ``$``
also matches before a final line break: ``^[A-Za-z_]+$`` lets ``"OTEL_TOKEN\\n"`` through. The
schemas end their anchored patterns with ``(?![\\s\\S])`` ("no character follows"), which means
the same in Python, ECMA 262 and jsonschema-rs.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import jsonschema
import jsonschema_rs
import pytest
from support import helpers

SCHEMAS = sorted((helpers.REPO / "schemas").glob("*.schema.json"))
END = "(?![\\s\\S])"


def _patterns(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "pattern" and isinstance(value, str):
                yield value
            if key == "patternProperties" and isinstance(value, dict):
                yield from value
            yield from _patterns(value)
    elif isinstance(node, list):
        for item in node:
            yield from _patterns(item)


@pytest.mark.parametrize("schema", SCHEMAS, ids=lambda p: p.name)
def test_no_pattern_ends_with_a_dollar(schema: Any) -> None:
    patterns = list(_patterns(json.loads(schema.read_text(encoding="utf-8"))))
    assert patterns
    for pattern in patterns:
        assert not re.search(r"(?<!\\)\$$", pattern), pattern
        assert not pattern.startswith("^") or pattern.endswith(END) or pattern == "^/", pattern


@pytest.mark.parametrize("pattern", ["^[A-Za-z_][A-Za-z0-9_]*" + END, "^otlp(/[^\\s]+)?" + END])
def test_the_end_anchor_refuses_a_final_line_break_in_both_libraries(pattern: str) -> None:
    schema = {"type": "string", "pattern": pattern}
    for validator in (jsonschema.Draft202012Validator(schema), jsonschema_rs.validator_for(schema)):
        assert validator.is_valid("OTEL_TOKEN" if "A-Z" in pattern else "otlp/x")
        assert not validator.is_valid(("OTEL_TOKEN" if "A-Z" in pattern else "otlp/x") + "\n")
