"""The YAML fast path: a plain tree's data built straight from PyYAML's C parser events.

Composing the events into a node tree and constructing Python data from the nodes (PyYAML's
pure-Python constructor) costs more than the parse itself. Most documents are plain trees
(mappings, sequences and scalars, no anchors, aliases, merge keys, collection tags or complex
keys); for them this builds the data from the events, calling PyYAML's resolver and
constructors for each scalar, so every value gets the type PyYAML gives it. Anything else makes
it give up (:class:`NotPlain`), and :mod:`.yaml_loader` parses the document the reference way.

It earns its place only while the render path's speed needs it (the 500-job goal: every
rendering is parsed in full before it is written). Measured here on the example's rendering
(``otlp_http+file``, current line, 8.9 kB), interleaved in one process, median of 15 runs of 20:
this path 0.57 ms, the reference way (composed, measured, constructed) 2.48 ms, stock
``yaml.CSafeLoader`` 1.18 ms. ``tests/test_libraries_agree.py`` holds it to the stock loader on
every golden file, edge cases and generated documents, and to the reference way near the
nesting limit.
"""

from __future__ import annotations

from typing import Any

_STR = "tag:yaml.org,2002:str"
_MAP = "tag:yaml.org,2002:map"
_SEQ = "tag:yaml.org,2002:seq"
_MERGE = "tag:yaml.org,2002:merge"


class NotPlain(Exception):
    """Not a plain tree, or a wrong one: the document is parsed again the reference way."""


def plain_from_events(text: str, loader_class: type, max_depth: int) -> Any:
    """The data of a plain tree, built from the parser's events; :class:`NotPlain` for any
    other document, or one nested ``max_depth`` levels deep or more."""
    import yaml

    scalar_node, scalar_event, end = yaml.ScalarNode, yaml.ScalarEvent, yaml.StreamEndEvent
    mapping_start, mapping_end = yaml.MappingStartEvent, yaml.MappingEndEvent
    sequence_start, sequence_end = yaml.SequenceStartEvent, yaml.SequenceEndEvent
    document_end = yaml.DocumentEndEvent
    if loader_class.yaml_path_resolvers:
        raise NotPlain  # tags that depend on a value's place: only the composer knows them
    loader = loader_class(text)
    containers: list[Any] = []  # open mappings and sequences, innermost last
    keys: list[Any] = []  # per open container: the mapping's pending key, or _NO_KEY
    root: Any = None
    try:
        next_event = loader.get_event
        next_event()  # stream start
        if type(next_event()) is end:
            return None  # nothing but comments
        while True:
            event = next_event()
            kind = type(event)
            if kind is scalar_event:
                value = _scalar(loader, event, scalar_node)
            elif kind is mapping_start or kind is sequence_start:
                tag = _MAP if kind is mapping_start else _SEQ
                if event.anchor is not None or event.tag not in (None, tag):
                    raise NotPlain
                if len(containers) >= max_depth - 1:
                    raise NotPlain  # near the limit: the reference way judges, and words it
                if containers and type(containers[-1]) is dict and keys[-1] is _NO_KEY:
                    raise NotPlain  # a mapping or sequence as a key
                containers.append({} if kind is mapping_start else [])
                keys.append(_NO_KEY)
                continue
            elif kind is mapping_end or kind is sequence_end:
                value = containers.pop()
                keys.pop()
            elif kind is document_end and type(next_event()) is end:
                return root
            else:
                raise NotPlain  # an alias, a second document
            if not containers:
                root = value
                continue
            parent = containers[-1]
            if type(parent) is list:
                parent.append(value)
            elif keys[-1] is _NO_KEY:
                if value in parent:
                    raise NotPlain  # a duplicate, worded by the reference way with its line
                keys[-1] = value
            else:
                parent[keys[-1]] = value
                keys[-1] = _NO_KEY
    except (yaml.YAMLError, ValueError, OverflowError, TypeError):
        raise NotPlain from None
    finally:
        loader.dispose()


_NO_KEY = object()  # a mapping waiting for its next key


def _scalar(loader: Any, event: Any, scalar_node: type) -> Any:
    if event.anchor is not None:
        raise NotPlain
    tag = event.tag
    if tag is None or tag == "!":
        if not event.implicit[0]:
            return event.value  # quoted or a block: text, whatever it looks like
        tag = _resolved(loader, scalar_node, event.value, event.implicit)
    if tag == _STR:
        return event.value
    construct = loader.yaml_constructors.get(tag)
    if construct is None or tag in (_MAP, _SEQ, _MERGE):
        raise NotPlain
    return construct(
        loader, scalar_node(tag, event.value, event.start_mark, event.end_mark, event.style)
    )


# The tag PyYAML's resolver gives a plain scalar depends only on its text here (the loader has no
# path resolvers, and its implicit resolvers are fixed when the class is made), and the same keys
# and values recur in every document: resolving each once saves a third of the construction.
# Keyed by the loader's class too: a collector config's scalars resolve as the collector's YAML
# library resolves them, a submit config's as PyYAML does (yaml_loader).
_RESOLVED: dict[tuple[type, str, tuple[bool, bool]], str] = {}
_RESOLVED_MAX = 4096


def _resolved(loader: Any, scalar_node: type, value: str, implicit: tuple[bool, bool]) -> str:
    key = (type(loader), value, implicit)
    tag = _RESOLVED.get(key)
    if tag is None:
        tag = loader.resolve(scalar_node, value, implicit)
        if len(_RESOLVED) < _RESOLVED_MAX:
            _RESOLVED[key] = tag
    return tag
