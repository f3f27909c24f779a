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


# (dumper, width, section, repr of the component's id and body) -> the text of the document
# {section: {id: body}}; emptied when full, like the scalar events.
_part_texts: dict[tuple[type, int, str, str, str], str] = {}
_MAX_PARTS = 4096


def dump_in_parts(document: Any, dumper: type, *, width: int) -> str:
    """:func:`dump_plain`'s text of a mapping, each entry of a section that is a mapping (a
    collector config's component, or a part of its service) dumped once per distinct content
    and process: the configs cut from a submission's jobs repeat all but a few components.

    A block mapping's entries are written one after the other at one indentation, each by its
    own key and value alone, so the text of ``{section: {id: body, ...}}`` is the section's line
    followed by each entry's lines as ``{section: {id: body}}`` writes them, and a document's is
    its sections' texts in order (``tests/test_libraries_agree.py`` holds this to ``yaml.dump``
    on every golden rendering and its cuts, and on generated documents). A part is kept by the
    ``repr`` of its id and body, which tells any two plain trees apart (strings quoted, ``1``,
    ``1.0`` and ``True`` distinct, keys in their order); only a plain tree's text is kept, and
    an object met twice (which ``yaml.dump`` anchors) makes the whole document go the reference
    way (:class:`NotPlain`)."""
    if type(document) is not dict or not document:
        return dump_plain(document, dumper, width=width)
    _refuse_shared(document)
    out: list[str] = []
    for section, body in document.items():
        if type(section) is not str:
            raise NotPlain
        if type(body) is not dict or not body:
            out.append(dump_plain({section: body}, dumper, width=width))
            continue
        head = None
        for entry, value in body.items():
            first, _, rest = _part(dumper, width, section, entry, value).partition("\n")
            if not (first.endswith(":") and rest.startswith(" ")):
                raise NotPlain  # a key written over several lines: only the whole says how
            if head is None:
                head = first
                out.append(first + "\n")
            elif first != head:
                raise NotPlain
            out.append(rest)
    return "".join(out)


def _part(dumper: type, width: int, section: str, entry: Any, value: Any) -> str:
    key = (dumper, width, section, repr(entry), repr(value))
    text = _part_texts.get(key)
    if text is None:
        text = dump_plain({section: {entry: value}}, dumper, width=width)
        if len(_part_texts) >= _MAX_PARTS:
            _part_texts.clear()
        _part_texts[key] = text
    return text


def _refuse_shared(document: Any) -> None:
    """:class:`NotPlain` when a mapping or list occurs twice in ``document``."""
    seen = {id(document)}
    stack = [document]
    while stack:
        node = stack.pop()
        for child in node.values() if type(node) is dict else node:
            kind = type(child)
            if kind is dict or kind is list:
                if id(child) in seen:
                    raise NotPlain
                seen.add(id(child))
                stack.append(child)


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
