"""Parsing a rendering by reusing the parse of an earlier rendering of the same template.

A submission renders one template once per benchmark job, and the renderings differ in a few
one-line quoted values (the benchmark's name, its file paths). Parsing YAML is the largest
cost of a render, so a rendering that differs from the previous full parse only in such values
takes that parse's data and swaps the values in.

Why that is the same as parsing: lines before a changed line are identical, so the parser
reaches it in the same state; on the changed line the text before the value is identical, and
in both texts the rest of the line is exactly one double-quoted scalar, closed on that line.
The tokens of the two texts therefore differ only in that scalar's value, and so does the data.
Anything outside that shape (a changed line that is not such a value, a new value holding an
escape or a non-ASCII character, a value with an anchor or a tag, a different number of lines,
line breaks other than ``\\n``) is parsed in full, which also gives a broken text its usual
error. ``tests/test_fast_paths.py`` compares both ways on mutated renderings.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ._errors import OtelConfigError
from ._yaml import STR_TAG, parse_yaml_tree

# One double-quoted scalar of printable ASCII without escapes: its value is the text between
# the quotes, whatever the context.
_SIMPLE_QUOTED = re.compile(r'"[ !#-\[\]-~]*"')
_OTHER_BREAKS = ("\r", "\x85", "\u2028", "\u2029", "\ufeff")  # \ufeff: a BOM shifts columns
_KEEP = 16  # earlier full parses kept, one per template


@dataclass(frozen=True)
class _Parsed:
    lines: list[str]
    data: Any
    values: dict[int, tuple[int, tuple[Any, ...]]]  # line -> (column of the value, path)


def _quoted_values(
    node: Any, data: Any, lines: list[str]
) -> dict[int, tuple[int, tuple[Any, ...]]]:
    """Each line whose rest, from some column, is one double-quoted string value, with that
    column (in characters, as YAML marks count) and the value's path in the data. A value with
    an anchor or a tag is left out (its node starts at the ``&`` or ``!``), so no alias shares
    a value that may change."""
    from yaml import MappingNode, ScalarNode, SequenceNode

    found: dict[int, tuple[int, tuple[Any, ...]]] = {}

    def visit(node: Any, data: Any, path: tuple[Any, ...]) -> None:
        if type(node) is MappingNode:
            # plain() inserted keys in node order and refused duplicates, so the two align.
            for (_, value_node), key in zip(node.value, data, strict=True):
                visit(value_node, data[key], (*path, key))
        elif type(node) is SequenceNode:
            for index, item in enumerate(node.value):
                visit(item, data[index], (*path, index))
        elif type(node) is ScalarNode and node.style == '"' and node.tag == STR_TAG:
            start, end = node.start_mark, node.end_mark
            line = lines[start.line]
            if start.line == end.line and end.column == len(line) and line[start.column] == '"':
                found[start.line] = (start.column, path)

    visit(node, data, ())
    return found


def _replaced(data: Any, path: tuple[Any, ...], value: str) -> Any:
    """``data`` with the value at ``path`` replaced; only the containers on the path are copied,
    the rest is shared with the earlier parse, which nobody modifies."""
    if not path:
        return value
    head, rest = path[0], path[1:]
    copy = dict(data) if isinstance(data, dict) else list(data)
    copy[head] = _replaced(data[head], rest, value)
    return copy


class RenderingParser:
    """Parses renderings, reusing the last full parse made under the same ``key``.

    The data it returns shares parts with earlier results: callers must not modify it.
    """

    def __init__(self) -> None:
        self._parsed: dict[Any, _Parsed] = {}
        self._lock = threading.Lock()  # an executor may render from several threads

    def parse(
        self, text: str, key: Any, source: str, error: Callable[[str, str], OtelConfigError]
    ) -> Any:
        earlier = self._parsed.get(key)
        if earlier is not None:
            data = _reuse(earlier, text)
            if data is not None:
                return data
        data, node = parse_yaml_tree(text, source, error)
        if node is not None and not any(b in text for b in _OTHER_BREAKS):
            lines = text.split("\n")
            parsed = _Parsed(lines, data, _quoted_values(node, data, lines))
            with self._lock:
                if len(self._parsed) >= _KEEP and key not in self._parsed:
                    del self._parsed[next(iter(self._parsed))]
                self._parsed[key] = parsed
        return data


def _reuse(earlier: _Parsed, text: str) -> Any | None:
    """The data of ``text`` built from ``earlier``, or None when it cannot be."""
    lines = text.split("\n")
    if len(lines) != len(earlier.lines):
        return None
    data = earlier.data
    for number, (old, new) in enumerate(zip(earlier.lines, lines, strict=True)):
        if old == new:
            continue
        where = earlier.values.get(number)
        if where is None:
            return None
        column, path = where
        value = new[column:]
        if new[:column] != old[:column] or not _SIMPLE_QUOTED.fullmatch(value):
            return None
        data = _replaced(data, path, value[1:-1])
    return data


# Renderings in this process, by template file.
RENDERINGS = RenderingParser()
