"""YAML parsing that reports where a document is broken and refuses duplicate keys.

PyYAML keeps the last of two equal keys without a word; in a config that silently drops a
setting, so a duplicate is reported like any syntax error, with its line.

Most documents are plain trees, built straight from the C parser's events by
:mod:`.yaml_fast_path`; anything else, and anything wrong (a duplicate key, a scalar its type
cannot hold, a syntax error), makes it give up, and the document is parsed again the reference
way below: composed, measured, then constructed by PyYAML's own constructor, which finds and
words the problem.

Hostile input is answered in time linear in its size. libyaml refuses nesting beyond 1000
levels; below that the node graph is measured before anything is built: nesting deeper than
``MAX_DEPTH`` (as the aliases expand it) and aliases that repeat more than ``MAX_ALIAS_NODES``
nodes in all (a "billion laughs" of a few hundred bytes) are refused at the line that makes
them, as are characters YAML forbids and scalars that their type cannot hold (an integer of
thousands of digits, a date that does not exist, ``!!int x``).

A collector config's plain scalars are resolved as the collector's YAML library resolves them
(:mod:`.go_yaml_scalars`: ``off`` is text, ``0o17`` an integer), a submit config's by PyYAML.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any

from .errors import OtelConfigError
from .yaml_fast_path import NotPlain, plain_from_events
from .yaml_reparse import Parsed, remember, reparsed

_MERGE = "tag:yaml.org,2002:merge"
# A collector config nests about ten levels, a submit config six.
MAX_DEPTH = 100
# How many nodes the aliases of a document may repeat, over its own nodes, in all; a long
# scalar counts as one node per 64 characters, so repeating text is bounded too.
MAX_ALIAS_NODES = 10_000
_CHARACTERS_PER_NODE = 64
# What the YAML reader refuses (PyYAML's own set), found here to name the line.
_FORBIDDEN_CHARACTER = re.compile(
    "[^\x09\x0a\x0d\x20-\x7e\x85\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]"
)
_UNREADABLE_SCALAR = (
    "cannot be read as its YAML type (an integer of thousands of digits, a date that does not "
    "exist, or a value its !!tag refuses); quote it to keep it as text, or fix the value"
)


class _Refused(Exception):
    """A document refused before or while it is built, at the line of ``mark``."""

    def __init__(self, mark: Any, message: str) -> None:
        super().__init__(message)
        self.mark = mark
        self.message = message


@functools.cache
def _strict_loader() -> type:
    import yaml

    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class StrictLoader(base):  # type: ignore[misc, valid-type]
        def construct_mapping(self, node: Any, deep: bool = False) -> dict[Any, Any]:
            seen: set[Any] = set()
            for key_node, _ in node.value:
                if key_node.tag == _MERGE:
                    continue  # merged keys may be overridden; PyYAML merges them below
                key = self.construct_object(key_node, deep=True)
                try:
                    duplicate = key in seen
                except TypeError:
                    continue  # unhashable: PyYAML's construct_mapping reports it, with its line
                if duplicate:
                    raise _duplicate(key, key_node)
                seen.add(key)
            return super().construct_mapping(node, deep=deep)

        def construct_object(self, node: Any, deep: bool = False) -> Any:
            try:
                return super().construct_object(node, deep=deep)
            except (ValueError, OverflowError):
                raise _Refused(node.start_mark, _UNREADABLE_SCALAR) from None

    return StrictLoader


@functools.cache
def _collector_loader() -> type:
    """The strict loader with plain scalars resolved as the collector's YAML library does
    (:mod:`.go_yaml_scalars`): ``off`` is text, ``0o17`` an integer, ``1:30`` text."""
    import yaml

    from . import go_yaml_scalars as go

    class CollectorLoader(_strict_loader()):  # type: ignore[misc]
        def resolve(self, kind: Any, value: Any, implicit: Any) -> Any:
            if kind is yaml.ScalarNode and implicit[0]:
                return go.MERGE if value == "<<" else go.go_scalar(value)[0]
            return super().resolve(kind, value, implicit)

    def construct(loader: Any, node: Any) -> Any:
        """A scalar of a resolved or explicit (``!!int 0o17``) tag; Go YAML refuses a value
        its explicit tag does not resolve to, but lets an integer be a !!float."""
        tag, value = go.go_scalar(node.value)
        if tag == node.tag:
            return value
        if node.tag == go.FLOAT and tag == go.INT:
            return float(value)
        raise ValueError(f"{node.value!r} is not {node.tag}")

    for tag in (go.NULL, go.BOOL, go.INT, go.FLOAT, go.TIMESTAMP):
        CollectorLoader.add_constructor(tag, construct)
    return CollectorLoader


def _duplicate(key: Any, key_node: Any) -> Exception:
    import yaml

    return yaml.constructor.ConstructorError(
        None, None, f"duplicate key {key!r}", key_node.start_mark
    )


def _measure(root: Any) -> None:
    """Refuse a node graph nested deeper than ``MAX_DEPTH`` or whose aliases repeat more than
    ``MAX_ALIAS_NODES`` nodes, in one pass over its distinct nodes (iterative: no recursion)."""
    sizes: dict[int, int] = {}  # expanded node count
    distinct = 0  # the nodes measured so far, each counted once
    heights: dict[int, int] = {}
    open_nodes: set[int] = set()
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, finished = stack.pop()
        key = id(node)
        children = _children(node)
        if finished:
            open_nodes.discard(key)
            own = 1 + len(node.value) // _CHARACTERS_PER_NODE if not children else 1
            sizes[key] = own + sum(sizes[id(c)] for c in children)
            distinct += own
            heights[key] = 1 + max((heights[id(c)] for c in children), default=0)
            if heights[key] > MAX_DEPTH:
                raise _Refused(
                    node.start_mark,
                    f"nests deeper than {MAX_DEPTH} levels (aliases included); flatten the document",
                )
            repeated = sizes[key] - distinct  # at most the smallest node that breaks the budget
            if repeated > MAX_ALIAS_NODES:
                raise _Refused(
                    node.start_mark,
                    f"its aliases and merge keys repeat {repeated} nodes, more than the "
                    f"{MAX_ALIAS_NODES} allowed; write the repeated parts out or use fewer aliases",
                )
            continue
        if key in sizes:
            continue
        if key in open_nodes:
            raise _Refused(
                node.start_mark, "an alias refers to a node that contains it; remove the loop"
            )
        open_nodes.add(key)
        stack.append((node, True))
        stack.extend((child, False) for child in children if id(child) not in sizes)


def _children(node: Any) -> list[Any]:
    value = node.value
    if not isinstance(value, list):
        return []
    if value and isinstance(value[0], tuple):
        return [part for pair in value for part in pair]
    return value


# Block nesting needs a column of indentation or a "- " / "? " indicator per level (and one
# more for a compact mapping), flow nesting an opening bracket: an upper bound on a document's
# depth read in one pass of the C regex engine.
_LINE_PREFIX = re.compile(r"^[ ?-]*", re.MULTILINE)


def _may_nest_deeper(text: str) -> bool:
    prefix = max(map(len, _LINE_PREFIX.findall(text)), default=0)
    return prefix + 2 + text.count("[") + text.count("{") > MAX_DEPTH


def _check_nesting(text: str, loader_class: type) -> None:
    """Refuse nesting deeper than ``MAX_DEPTH`` from the parser's events, before anything is
    composed: a composer recurses once per level (in C, with no limit in some PyYAML builds:
    6.0.1's crashes at 50,000 levels; PyYAML's own composer in Python), so it never sees one."""
    import yaml

    loader = loader_class(text)
    depth = 0
    try:
        while (event := loader.get_event()) is not None:
            kind = type(event)
            if kind is yaml.MappingStartEvent or kind is yaml.SequenceStartEvent:
                depth += 1
                if depth > MAX_DEPTH:
                    raise _Refused(
                        event.start_mark,
                        f"nests deeper than {MAX_DEPTH} levels (aliases included); flatten the document",
                    )
            elif kind is yaml.MappingEndEvent or kind is yaml.SequenceEndEvent:
                depth -= 1
    finally:
        loader.dispose()


# The last plain trees parsed in full, per loader class, newest first: a rendering that differs
# from one of them only inside quoted values is built from its tree (:mod:`.yaml_reparse`).
_EARLIER: dict[type, list[Parsed]] = {}
_EARLIER_KEPT = 4


def _load(text: str, loader_class: type) -> Any:
    earlier = _EARLIER.setdefault(loader_class, [])
    for parsed in earlier:
        tree = reparsed(text, parsed)
        if tree is not None:
            return tree
    try:
        tree = plain_from_events(text, loader_class, MAX_DEPTH)
    except NotPlain:
        return _load_composed(text, loader_class)
    kept = remember(text, tree, loader_class)
    if kept is not None:
        earlier[:] = [kept, *earlier[: _EARLIER_KEPT - 1]]
    return tree


def _load_composed(text: str, loader_class: type) -> Any:
    """The reference way: any document, measured before it is built."""
    if _may_nest_deeper(text):
        _check_nesting(text, loader_class)
    loader = loader_class(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _measure(node)
        return loader.construct_document(node)
    finally:
        loader.dispose()


def parse_yaml(
    text: str,
    source: str,
    error: Callable[[str, str], OtelConfigError],
    *,
    collector: bool = False,
) -> Any:
    """Parse one YAML document; a syntax error becomes ``error(path, message)`` naming ``source:line``.

    ``collector``: a collector config, whose plain scalars are read as the collector reads them
    (Go YAML v3, :mod:`.go_yaml_scalars`) rather than by PyYAML's YAML 1.1 rules."""
    import yaml

    forbidden = _FORBIDDEN_CHARACTER.search(text)
    if forbidden is not None:
        line = text.count("\n", 0, forbidden.start()) + 1
        raise error(
            f"{source}:{line}",
            f"holds the character U+{ord(forbidden[0]):04X} (NUL or another control character), "
            "which YAML does not allow; remove it or write it as an escape in a double-quoted string",
        )
    try:
        return _load(text, _collector_loader() if collector else _strict_loader())
    except _Refused as exc:
        raise error(f"{source}:{exc.mark.line + 1}", exc.message) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"{source}:{mark.line + 1}" if mark is not None else source
        problem = exc.problem or exc.context or "malformed YAML"
        raise error(where, f"{problem}; fix the YAML syntax at that line") from None
    except yaml.YAMLError as exc:
        raise error(source, f"not valid YAML ({exc}); fix the YAML syntax") from None
