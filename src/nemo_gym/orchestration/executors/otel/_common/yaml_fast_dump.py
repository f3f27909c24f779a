"""The YAML dump's fast path: a plain tree handed to libyaml's emitter as events.

``yaml.dump`` with ``CSafeDumper`` emits in C, but represents in Python: every value becomes a
node through PyYAML's representer (alias bookkeeping, a lookup of the value's type), and libyaml
asks PyYAML's resolver, twice per scalar, whether the scalar may go unquoted. For a job's drain
config (written at every job's write, about 400 values) that took as long as checking its
``collector.yaml``, 2 ms (docs/maintainers/performance.md). This emits the same events the representer and
serializer would (the same tags, implicit flags and block style), resolving each distinct text
once per process, so libyaml writes the very same text. Anything but a plain tree (mappings
with string keys, lists, strings, ints, bools, None, floats; no object twice, which PyYAML
would anchor) makes it give up (:class:`NotPlain`) and the caller dumps the reference way.

It earns its place only while the 500-job goal needs it; ``tests/test_libraries_agree.py``
holds it to ``yaml.dump`` on every golden rendering's drain config, edge cases and generated
documents.
"""

from __future__ import annotations

import io
from typing import Any

from .yaml_fast_path import NotPlain

_STR = "tag:yaml.org,2002:str"
_INT = "tag:yaml.org,2002:int"
_FLOAT = "tag:yaml.org,2002:float"
_BOOL = "tag:yaml.org,2002:bool"
_NULL = "tag:yaml.org,2002:null"
_MAP = "tag:yaml.org,2002:map"
_SEQ = "tag:yaml.org,2002:seq"

# (dumper, text, tag) -> its scalar event (the emitter only reads it), shared by every dump of
# the process: the jobs of a submission repeat most of their scalars. Emptied when full, so a
# long-lived process rendering many submissions holds no more than this.
_scalar_events: dict[tuple[type, str, str], Any] = {}
_MAX_CACHED = 20_000


def dump_plain(document: Any, dumper: type, *, width: int) -> str:
    """``yaml.dump(document, Dumper=dumper, sort_keys=False, allow_unicode=True, width=width)``
    for a plain tree, or :class:`NotPlain`."""
    import yaml

    if dumper.yaml_path_resolvers:
        raise NotPlain  # tags that depend on a value's place
    events = _Events(dumper, yaml)
    events.add(document)
    stream = io.StringIO()
    emitter = dumper(stream, width=width, allow_unicode=True)
    try:
        emitter.emit(yaml.StreamStartEvent())
        emitter.emit(yaml.DocumentStartEvent(explicit=False))
        for event in events.out:
            emitter.emit(event)
        emitter.emit(yaml.DocumentEndEvent(explicit=False))
        emitter.emit(yaml.StreamEndEvent())
    finally:
        emitter.dispose()
    return stream.getvalue()


class _Events:
    """The events of a plain tree's nodes, as PyYAML's representer and serializer make them."""

    def __init__(self, dumper: type, yaml: Any) -> None:
        self.dumper, self.yaml = dumper, yaml
        self.resolve = dumper.__new__(dumper).resolve
        self.out: list[Any] = []
        self.seen: set[int] = set()

    def add(self, node: Any) -> None:
        kind, yaml = type(node), self.yaml
        if kind is dict or kind is list:
            if id(node) in self.seen:
                raise NotPlain  # PyYAML would write an anchor and an alias
            self.seen.add(id(node))
            if kind is dict:
                self.out.append(yaml.MappingStartEvent(None, _MAP, True, flow_style=False))
                for key, value in node.items():
                    if type(key) is not str:
                        raise NotPlain
                    self.scalar(key, _STR)
                    self.add(value)
                self.out.append(yaml.MappingEndEvent())
            else:
                self.out.append(yaml.SequenceStartEvent(None, _SEQ, True, flow_style=False))
                for item in node:
                    self.add(item)
                self.out.append(yaml.SequenceEndEvent())
        elif kind is str:
            self.scalar(node, _STR)
        elif kind is bool:
            self.scalar("true" if node else "false", _BOOL)
        elif kind is int:
            self.scalar(str(node), _INT)
        elif node is None:
            self.scalar("null", _NULL)
        elif kind is float:
            self.scalar(_float_text(node), _FLOAT)
        else:
            raise NotPlain

    def scalar(self, text: str, tag: str) -> None:
        """The event PyYAML's serializer makes of a scalar node: ``implicit`` says whether the
        text reads back as its tag unquoted, and whether quoted (only a string does)."""
        key = (self.dumper, text, tag)
        event = _scalar_events.get(key)
        if event is None:
            if len(_scalar_events) >= _MAX_CACHED:
                _scalar_events.clear()
            plain = self.resolve(self.yaml.ScalarNode, text, (True, False)) == tag
            event = _scalar_events[key] = self.yaml.ScalarEvent(
                None, tag, (plain, tag == _STR), text
            )
        self.out.append(event)


def _float_text(value: float) -> str:
    """A float's text as PyYAML's ``SafeRepresenter.represent_float`` writes it."""
    if value != value:
        return ".nan"
    if value == float("inf"):
        return ".inf"
    if value == float("-inf"):
        return "-.inf"
    text = repr(value).lower()
    if "." not in text and "e" in text:
        text = text.replace("e", ".0e", 1)
    return text
