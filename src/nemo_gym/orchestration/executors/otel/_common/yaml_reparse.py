"""A rendering parsed from an earlier one's tree when the two differ only inside quoted values.

The jobs of a submission render one template with their own job directory and benchmark name,
and the templates put every such value into a one-line double-quoted scalar (``_templating/
scalar.py``): two jobs' renderings have the same lines but for the text between two quotes.
Parsing each in full cost a quarter of a job's CPU (the 500-job goal, docs/maintainers/
performance.md), so the first rendering's tree is kept with the place of every such value, and
a later rendering that differs from it only there gets a fresh copy of that tree with its own
values put in.

Why the result is the full parse's: the two texts have the same lines; on each line that
differs, the text before the opening quote and after the closing quote of the one double-quoted
value that starts and ends on it is the same, and the new text between the quotes holds no
``"`` and no ``\\``. The scanner reads the same tokens up to the opening quote, reads a
double-quoted scalar up to the same closing quote (nothing inside can end or escape it, and a
line break cannot be inside a line), and then the same tokens again: the events differ only in
that scalar's text, which, without escapes and line breaks, is the value itself, a string
whatever it looks like (a quoted scalar is never resolved to another type). Keys are never
replaced (a changed key could repeat another), nor tagged scalars. Texts holding a line break
other than ``\\n`` (``\\r``, NEL, U+2028, U+2029, which the scanner counts as line ends too)
are always parsed in full; the caller has already refused the characters YAML forbids.
``tests/test_yaml_reparse.py`` holds it to the full parse on every golden rendering with its
quoted values changed, and on the changes it must refuse.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

# Line ends of the YAML scanner besides "\n" (a text with one is parsed in full).
_OTHER_BREAKS = re.compile("[\r\x85\u2028\u2029]")
_UNSAFE_INSIDE = re.compile(r'["\\]')
# Well below the 1024 characters within which the scanner may still take a scalar for a key.
_LONGEST = 1000


@dataclass(frozen=True)
class _Place:
    """A one-line double-quoted value: where it is in the tree and on its line."""

    path: tuple[Any, ...]  # keys and indexes from the root
    start: int  # the opening quote's column
    end: int  # just after the closing quote


@dataclass(frozen=True)
class Parsed:
    """A full parse kept to parse the next rendering from: its text's lines, its tree (never
    handed out, only copies of it) and its quoted values by line."""

    lines: tuple[str, ...]
    tree: Any
    places: dict[int, _Place]


def remember(text: str, tree: Any, loader_class: type) -> Parsed | None:
    """The places of ``text``'s one-line double-quoted values (one a line, not a key, no tag),
    read from the parser's events, with a private copy of its ``tree`` (a plain tree, as
    :mod:`.yaml_fast_path` built it); None for a text that is never reused."""
    import yaml

    if type(tree) not in (dict, list) or _OTHER_BREAKS.search(text):
        return None
    loader = loader_class(text)
    places: dict[int, _Place] = {}
    crowded: set[int] = set()  # lines with more than one quoted value
    path: list[Any] = []
    # Per open container: a mapping's pending key (_NO_KEY before it is read) or a list's index.
    pending: list[Any] = []
    is_map: list[bool] = []
    try:
        while (event := loader.get_event()) is not None:
            kind = type(event)
            if kind is yaml.MappingStartEvent or kind is yaml.SequenceStartEvent:
                _enter(path, pending)
                is_map.append(kind is yaml.MappingStartEvent)
                pending.append(_NO_KEY if is_map[-1] else 0)
            elif kind is yaml.MappingEndEvent or kind is yaml.SequenceEndEvent:
                is_map.pop()
                pending.pop()
                if path:
                    path.pop()
                _advance(pending, is_map)
            elif kind is yaml.ScalarEvent:
                if is_map and is_map[-1] and pending[-1] is _NO_KEY:
                    pending[-1] = event.value  # a key: never replaced
                    continue
                line = event.start_mark.line
                if (
                    event.style == '"'
                    and event.tag is None
                    and event.anchor is None
                    and event.end_mark.line == line
                    and event.end_mark.column - event.start_mark.column <= _LONGEST
                ):
                    key = pending[-1] if pending else None
                    if line in places:
                        crowded.add(line)
                    places[line] = _Place(
                        (*path, key) if pending else (),
                        event.start_mark.column,
                        event.end_mark.column,
                    )
                _advance(pending, is_map)
    finally:
        loader.dispose()
    lines = tuple(text.split("\n"))
    kept = {
        line: place
        for line, place in places.items()
        if line not in crowded and _holds(tree, place, _quoted(lines[line], place))
    }
    return Parsed(lines, copy_tree(tree), kept)


def _holds(tree: Any, place: _Place, quoted: str | None) -> bool:
    """Whether the tree holds the text between the quotes at the place's path (a key that was
    resolved to another type than text, say, leaves a path that finds nothing)."""
    try:
        return quoted is not None and _value_at(tree, place.path) == quoted
    except (KeyError, IndexError, TypeError):
        return False


_NO_KEY = object()


def _enter(path: list[Any], pending: list[Any]) -> None:
    """A container opens: its place in its parent (a key or an index) joins the path."""
    if pending:
        path.append(pending[-1])


def _advance(pending: list[Any], is_map: list[bool]) -> None:
    """After a value: a mapping waits for its next key, a list counts on."""
    if not pending:
        return
    if is_map[-1]:
        pending[-1] = _NO_KEY
    else:
        pending[-1] += 1


def _quoted(line: str, place: _Place) -> str | None:
    """The text between the quotes at ``place`` on ``line``, or None if they are not there."""
    if not (0 <= place.start < place.end - 1 < len(line)):
        return None
    if line[place.start] != '"' or line[place.end - 1] != '"':
        return None
    inside = line[place.start + 1 : place.end - 1]
    return None if _UNSAFE_INSIDE.search(inside) else inside


def _value_at(tree: Any, path: tuple[Any, ...]) -> Any:
    node = tree
    for step in path:
        node = node[step]
    return node


def reparsed(text: str, earlier: Parsed) -> Any | None:
    """``text``'s tree built from ``earlier``'s, or None unless it differs from that text only
    inside the double-quoted values ``earlier`` knows (see the module's docstring)."""
    if _OTHER_BREAKS.search(text):
        return None
    lines = text.split("\n")
    if len(lines) != len(earlier.lines):
        return None
    changes = []
    for number, (new, old) in enumerate(zip(lines, earlier.lines, strict=True)):
        if new == old:
            continue
        place = earlier.places.get(number)
        if place is None:
            return None
        tail = len(old) - place.end  # what follows the closing quote
        if len(new) < place.start + 2 + tail:
            return None
        if new[: place.start + 1] != old[: place.start + 1]:
            return None
        if new[len(new) - tail - 1 :] != old[place.end - 1 :]:
            return None
        inside = new[place.start + 1 : len(new) - tail - 1]
        if len(inside) + 2 > _LONGEST or _UNSAFE_INSIDE.search(inside):
            return None
        changes.append((place.path, inside))
    tree = copy_tree(earlier.tree)
    for path, value in changes:
        _value_at(tree, path[:-1])[path[-1]] = value
    return tree


def copy_tree(tree: Any) -> Any:
    """A copy of a plain tree's mappings and lists (its scalars are immutable)."""
    kind = type(tree)
    if kind is dict:
        return {key: copy_tree(value) for key, value in tree.items()}
    if kind is list:
        return [copy_tree(value) for value in tree]
    return tree
