"""YAML parsing that reports where a document is broken and refuses duplicate keys.

PyYAML keeps the last of two equal keys without a word; in a config that silently drops a
setting, so a duplicate is reported like any syntax error, with its line.

PyYAML's C parser builds the node tree; turning nodes into Python data is PyYAML's pure-Python
constructor, which costs several times the parse. A rendered config is a plain tree (mappings, sequences and scalars, no anchors, aliases,
merge keys or custom tags), and for such a tree ``plain`` builds the same data directly, calling
PyYAML's own constructor for every scalar that is not a string. Anything else in the tree hands
the whole document to PyYAML's constructor.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from .._common.errors import OtelConfigError

_STR = "tag:yaml.org,2002:str"
_MAP = "tag:yaml.org,2002:map"
_SEQ = "tag:yaml.org,2002:seq"
_MERGE = "tag:yaml.org,2002:merge"


class _NotPlain(Exception):
    """The tree holds something ``plain`` leaves to PyYAML's constructor."""


def _loader_class() -> type:
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

    return StrictLoader


def _duplicate(key: Any, key_node: Any) -> Exception:
    import yaml

    return yaml.constructor.ConstructorError(
        None, None, f"duplicate key {key!r}", key_node.start_mark
    )


def _plain_constructor() -> Callable[[Any, Any], Any]:
    """``plain(loader, node)``: the data the constructor above would build from ``node``, for a
    plain tree; it raises ``_NotPlain`` on anything else."""
    from yaml import MappingNode, ScalarNode, SequenceNode

    def scalar(loader: Any, node: Any) -> Any:
        tag = node.tag
        if tag == _STR:
            return node.value
        construct = loader.yaml_constructors.get(tag)
        if construct is None or tag in (_MAP, _SEQ):
            raise _NotPlain
        return construct(loader, node)

    def plain(loader: Any, node: Any, seen: set[int]) -> Any:
        node_type = type(node)
        if node_type is ScalarNode:
            return scalar(loader, node)  # an aliased scalar is an equal value: no harm
        if id(node) in seen:  # an aliased collection: PyYAML shares the object, leave it to it
            raise _NotPlain
        seen.add(id(node))
        if node_type is SequenceNode and node.tag == _SEQ:
            return [plain(loader, item, seen) for item in node.value]
        if node_type is MappingNode and node.tag == _MAP:
            data: dict[Any, Any] = {}
            for key_node, value_node in node.value:
                if type(key_node) is not ScalarNode or key_node.tag == _MERGE:
                    raise _NotPlain
                key = scalar(loader, key_node)
                if key in data:
                    raise _duplicate(key, key_node)
                data[key] = (
                    value_node.value
                    if type(value_node) is ScalarNode and value_node.tag == _STR
                    else plain(loader, value_node, seen)
                )
            return data
        raise _NotPlain

    return lambda loader, node: plain(loader, node, set())


def _load(text: str, loader_class: type, plain: Callable[[Any, Any], Any]) -> Any:
    loader = loader_class(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        try:
            return plain(loader, node)
        except _NotPlain:
            return loader.construct_document(node)
    finally:
        loader.dispose()


@functools.cache
def _parts() -> tuple[type, Callable[[Any, Any], Any]]:
    return _loader_class(), _plain_constructor()


def parse_yaml(text: str, source: str, error: Callable[[str, str], OtelConfigError]) -> Any:
    """Parse one YAML document; a syntax error becomes ``error(path, message)`` naming ``source:line``."""
    import yaml

    try:
        return _load(text, *_parts())
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"{source}:{mark.line + 1}" if mark is not None else source
        problem = exc.problem or exc.context or "malformed YAML"
        raise error(where, f"{problem}; fix the YAML syntax at that line") from None
    except yaml.YAMLError as exc:
        raise error(source, f"not valid YAML ({exc}); fix the YAML syntax") from None
