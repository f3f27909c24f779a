"""The two libraries on the check path answer exactly as the references they stand in for.

jsonschema-rs gives the yes/no answer of the schema check and jsonschema only explains a
failure, so a jsonschema-rs "valid" where jsonschema finds a violation would let a broken config
through: the two are compared on every golden file, the whole collector corpus and
hypothesis-mutated documents. The YAML loader is PyYAML's C loader plus a refusal of duplicate
keys and a direct construction of plain trees: it is compared with stock ``yaml.CSafeLoader``.
The drain config's dump feeds libyaml's emitter events made straight from a plain tree: it is
compared with ``yaml.dump``.
"""

from __future__ import annotations

import copy as copy_module
import functools
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from support import collector_corpus, helpers, mutations

from nemo_gym.orchestration.executors.otel import TemplateError
from nemo_gym.orchestration.executors.otel._common import yaml_fast_path, yaml_loader
from nemo_gym.orchestration.executors.otel._common.json_schema import (
    _is_valid,
    _registry,
    violations,
)
from nemo_gym.orchestration.executors.otel._common.resources import load_schema, schema_names
from nemo_gym.orchestration.executors.otel._common.yaml_fast_dump import (
    dump_in_parts,
    dump_plain,
)
from nemo_gym.orchestration.executors.otel._common.yaml_loader import parse_yaml
from nemo_gym.orchestration.executors.otel._render.drain_config import drain_document
from nemo_gym.orchestration.executors.otel._render.sender_config import split_documents

GOLDEN = sorted((helpers.REPO / "tests" / "golden").glob("*/*/*.yaml"))
COLLECTOR_SCHEMAS = [
    n for n in schema_names() if n.startswith("collector-") and "-components" not in n
]


def _line(path: Path) -> str:
    return path.parent.name


@functools.cache
def _documents() -> list[tuple[str, Any]]:
    return [(_line(p), yaml.load(p.read_text("utf-8"), Loader=yaml.CSafeLoader)) for p in GOLDEN]


@functools.cache
def _reference(schema_name: str) -> Any:
    return Draft202012Validator(load_schema(schema_name), registry=_registry())


def _agree(document: Any, schema_name: str) -> bool:
    """Both libraries' verdict on ``document``, once they are found to agree."""
    verdict = _reference(schema_name).is_valid(document)
    assert _is_valid(schema_name)(document) == verdict
    return verdict


@pytest.mark.parametrize(
    "path", GOLDEN, ids=lambda p: str(p.relative_to(helpers.REPO / "tests" / "golden"))
)
def test_golden_documents_agree(path: Path) -> None:
    document = yaml.safe_load(path.read_text(encoding="utf-8"))
    for name in COLLECTOR_SCHEMAS:
        _agree(document, name)
    assert violations(document, f"collector-{_line(path)}.schema.json") == []


def test_corpus_documents_agree() -> None:
    """Valid and invalid alike: every rendered variant and every mutation of the corpus."""
    cases = collector_corpus.corpus()
    outcomes = set()
    for case in cases:
        document = yaml.load(case.text, Loader=yaml.CSafeLoader)  # the schemas are compared here
        if not all(isinstance(key, str) for key in document):
            continue  # the package reports such keys before any schema runs
        outcomes.add(_agree(document, f"collector-{case.line}.schema.json"))
    assert outcomes == {True, False}, "the corpus must hold valid and invalid documents"


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data())
def test_mutated_documents_agree(data: st.DataObject) -> None:
    line, document = data.draw(st.sampled_from(_documents()))
    for _ in range(data.draw(st.integers(1, 3))):
        path = data.draw(st.sampled_from(mutations.paths(document)))
        action = data.draw(st.sampled_from(["replace", "delete", "add", "rename"]))
        document = mutations.mutate(document, path, action, data.draw(mutations.VALUES))
    _agree(document, f"collector-{line}.schema.json")


# -- YAML ------------------------------------------------------------------------------------

_YAML_CASES = [
    "a: 1\nb: [x, 'y', 2.5, true, null, ~, 0x1F, 1_000]\nc: {d: 2020-01-02, e: !!binary aGk=}\n",
    "anchor: &a {x: 1}\nalias: *a\n",
    "base: &b {x: 1, y: 2}\nmerged:\n  <<: *b\n  y: 3\n",
    "set: !!set {a, b}\nomap: !!omap [{a: 1}, {b: 2}]\n",
    "? [complex, key]\n: value\n",
    "'1': string key\n1: int key\n",
    "on: yes\noff: [no, 0o17, 017, .inf, -.nan, 1e3]\n",
    "",
    "# only a comment\n",
    "- just\n- a list\n",
    "plain scalar\n",
    "a: [1, 2\n",
    "a: b: c\n",
    "a:\n\t- x\n",
    # Beyond a plain tree: tags on collections, several documents, aliases without anchors,
    # complex and null keys, explicit scalar tags, and a duplicate before a syntax error.
    "!!map {a: 1}\n",
    "!!seq [1, 2]\n",
    "!!seq {a: 1}\n",
    "! {a: 1}\n",
    "--- a\n--- b\n",
    "---\n",
    "*undefined\n",
    "a: !!str 1\nb: !!int '2'\nc: !!float '1.5'\nd: !!bool 'true'\n",
    "? a\n: b\n{c: , : d}: e\n",
    "[a, {b: c}, [d, [e]]]\n",
    "a:\n  - b:\n      c: [1, {d: e}]\n",
    "a: 1\na: 2\nb: [\n",
    "a: <<\n",
]


def _outcome(load: Any) -> Any:
    """The data, or ("error", line number) of the problem."""
    try:
        return load()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        return ("error", mark.line + 1)
    except TemplateError as exc:
        return ("error", int(exc.path.rpartition(":")[2]))


def _same(got: Any, expected: Any) -> bool:
    """Equal data; NaN, which equals nothing, compared by position."""
    if isinstance(expected, float) and expected != expected:
        return isinstance(got, float) and got != got
    if isinstance(expected, dict):
        return (
            isinstance(got, dict)
            and list(got) == list(expected)
            and all(_same(got[k], expected[k]) for k in expected)
        )
    if isinstance(expected, list):
        return (
            isinstance(got, list)
            and len(got) == len(expected)
            and all(_same(g, e) for g, e in zip(got, expected, strict=True))
        )
    return type(got) is type(expected) and got == expected


@pytest.mark.parametrize("text", _YAML_CASES)
def test_yaml_matches_stock_pyyaml(text: str) -> None:
    """The same data, of the same types, or an error on the same line, as stock CSafeLoader."""
    expected = _outcome(lambda: yaml.load(text, Loader=yaml.CSafeLoader))
    got = _outcome(lambda: parse_yaml(text, "case", TemplateError))
    assert _same(got, expected), (got, expected)


# Data of every YAML type the safe loader builds, with keys that YAML may read as other types.
_DATA = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.floats(allow_nan=False),
        st.text(max_size=8),
        st.sampled_from(["on", "1e3", "0x1F", "2001-12-14", "~", "<<", "&a", "*a", "!x"]),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.one_of(st.text(max_size=6), st.integers(-5, 5)), inner, max_size=4),
    ),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(data=_DATA, flow=st.sampled_from([None, True, False]))
def test_generated_yaml_matches_stock_pyyaml(data: Any, flow: bool | None) -> None:
    text = yaml.safe_dump(data, default_flow_style=flow, allow_unicode=True)
    expected = _outcome(lambda: yaml.load(text, Loader=yaml.CSafeLoader))
    assert _same(_outcome(lambda: parse_yaml(text, "case", TemplateError)), expected)


@pytest.mark.parametrize("depth", [97, 98, 99, 100, 101, 102])
@pytest.mark.parametrize("leaf", ["x", "[]", "{}"])
def test_nesting_near_the_limit_is_judged_the_reference_way(
    depth: int, leaf: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Around the nesting limit the loader's fast construction gives up, so deep documents get
    the same answer as with no fast construction at all (the composed, measured way)."""
    text = "".join(f"{'  ' * n}k{n}:\n" for n in range(depth)) + f"{'  ' * depth}{leaf}\n"
    got = _outcome(lambda: parse_yaml(text, "case", TemplateError))

    def give_up(text: str, loader_class: type, max_depth: int) -> Any:
        raise yaml_fast_path.NotPlain

    monkeypatch.setattr(yaml_loader, "plain_from_events", give_up)
    assert _same(got, _outcome(lambda: parse_yaml(text, "case", TemplateError)))


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("a: 1\na: 2\n", 2),
        ("x:\n  k: 1\n  k: 1\n", 3),
        ("1: a\n1.0: b\n", 2),
        ("true: a\nTrue: b\n", 2),
        ("base: &b {x: 1}\nm:\n  <<: *b\n  y: 1\n  y: 2\n", 5),
    ],
)
def test_yaml_duplicates_are_refused_on_their_line(text: str, line: int) -> None:
    """Stock PyYAML keeps the last of two equal keys; the loader names the second one's line."""
    with pytest.raises(TemplateError) as raised:
        parse_yaml(text, "case", TemplateError)
    assert "duplicate key" in raised.value.message
    assert raised.value.path == f"case:{line}"


@pytest.mark.parametrize(
    "path", GOLDEN, ids=lambda p: str(p.relative_to(helpers.REPO / "tests" / "golden"))
)
def test_golden_yaml_matches_stock_pyyaml(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert _same(
        parse_yaml(text, str(path), TemplateError), yaml.load(text, Loader=yaml.CSafeLoader)
    )


# -- YAML dump -------------------------------------------------------------------------------

_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def _reference_dump(document: Any) -> str:
    return yaml.dump(document, Dumper=_DUMPER, sort_keys=False, allow_unicode=True, width=100)


@pytest.mark.parametrize(
    "path", GOLDEN, ids=lambda p: str(p.relative_to(helpers.REPO / "tests" / "golden"))
)
def test_golden_drain_configs_dump_as_pyyaml_does(path: Path) -> None:
    """Each golden rendering's cuts (the drain config and the job step's two, dumped at every
    job's write), and the rendering itself, written by the fast path, whole and in parts (each
    part twice: once dumped, once as kept), exactly as ``yaml.dump`` writes them."""
    document = yaml.load(path.read_text("utf-8"), Loader=yaml.CSafeLoader)
    drain = drain_document(document)
    cuts = [*([drain] if drain is not None else []), *(split_documents(document) or ())]
    for each in [document, *cuts]:
        reference = _reference_dump(each)
        assert dump_plain(each, _DUMPER, width=100) == reference
        assert dump_in_parts(each, _DUMPER, width=100) == reference
        assert dump_in_parts(each, _DUMPER, width=100) == reference


_DUMP_CASES = [
    {"a": ["yes", "no", "on", "1", "1.5", "0x1F", "2001-12-14", "~", "null", "", " x", "x "]},
    {"a": ["#x", "x #y", "a: b", "- x", "[x]", "{x}", "&a", "*a", "!x", "%x", "@x", "`x", "|"]},
    {"multi\nline": "one\ntwo\n", "tab": "a\tb", "quote": 'it\'s "q"', "bs": "a\\b"},
    {"unicode": "héllo ✓ 😀", "controls": "\x00\x07\x1b\x7f\x85\u2028\ufeff", "nbsp": "a\xa0b"},
    {"long": "word " * 40, "long unbroken": "x" * 150, "url": "http://h:1/" + "p" * 120},
    {"n": [0, -1, 10**30, 1.0, -0.0, 1e20, 1.5e-7, float("inf"), float("-inf"), True, None]},
    {"empty": {}, "none": [], "nested": [[], [{}], {"a": [{"b": {}}]}], "": ""},
    [{"top": "list"}, "x"],
    "just a scalar",
    None,
    {"a": "<<", "<<": "a", "? x": 1, "=": "=", "-": "-", ":": ":"},
]


@pytest.mark.parametrize("document", _DUMP_CASES)
def test_dump_matches_pyyaml(document: Any) -> None:
    assert dump_plain(document, _DUMPER, width=100) == _reference_dump(document)
    copy = functools.partial(copy_module.deepcopy, document)
    sections = {"s": copy(), "t": {"u": copy()}, "v": {"w": copy(), "x": [copy()]}}
    assert dump_in_parts(sections, _DUMPER, width=100) == _reference_dump(sections)


def test_dump_in_parts_gives_up_on_an_object_in_two_parts() -> None:
    """``yaml.dump`` anchors an object met twice, also across two sections or components."""
    shared = {"a": 1}
    for document in ({"s": {"x": shared}, "t": {"y": shared}}, {"s": {"x": shared, "y": shared}}):
        with pytest.raises(yaml_fast_path.NotPlain):
            dump_in_parts(document, _DUMPER, width=100)


def test_dump_in_parts_gives_up_on_a_key_over_several_lines() -> None:
    for key in ("k" * 200, "a\nb"):
        document = {key: {"x": 1, "y": 2}, "s": {key: 1, "t": 2}}
        try:
            got = dump_in_parts(document, _DUMPER, width=100)
        except yaml_fast_path.NotPlain:
            continue
        assert got == _reference_dump(document)


def test_dump_of_nan_matches_pyyaml() -> None:
    assert dump_plain({"x": float("nan")}, _DUMPER, width=100) == "x: .nan\n"
    assert _reference_dump({"x": float("nan")}) == "x: .nan\n"


@pytest.mark.parametrize(
    "document",
    [
        {1: "int key"},
        {"a": ("tu", "ple")},
        {"a": {1, 2}},
        {"a": b"bytes"},
        {"a": Path("x")},
        {"a": (shared := ["x"]), "b": shared},
    ],
    ids=["int-key", "tuple", "set", "bytes", "path", "shared-object"],
)
def test_dump_gives_up_beyond_a_plain_tree(document: Any) -> None:
    """Keys PyYAML writes otherwise, types it represents its own way, and an object twice
    (which it anchors): the caller dumps these the reference way."""
    with pytest.raises(yaml_fast_path.NotPlain):
        dump_plain(document, _DUMPER, width=100)


@settings(max_examples=300, deadline=None)
@given(data=_DATA)
def test_generated_dumps_match_pyyaml(data: Any) -> None:
    try:
        got = dump_plain(data, _DUMPER, width=100)
    except yaml_fast_path.NotPlain:
        assert not _string_keys(data)
        return
    assert got == _reference_dump(data)


@settings(max_examples=300, deadline=None)
@given(
    data=st.dictionaries(
        st.text(max_size=6), st.dictionaries(st.text(max_size=6), _DATA, max_size=4), max_size=4
    )
)
def test_generated_dumps_in_parts_match_pyyaml(data: Any) -> None:
    """Mappings of mappings (a config's sections of components), dumped in parts; it gives up
    only where the whole would too, or on a key written over several lines."""
    try:
        got = dump_in_parts(data, _DUMPER, width=100)
    except yaml_fast_path.NotPlain:
        keys = [*data, *(k for v in data.values() if isinstance(v, dict) for k in v)]
        assert not _string_keys(data) or not all(map(_one_line_key, keys))
        return
    assert got == _reference_dump(data)


def _one_line_key(key: Any) -> bool:
    first, _, rest = _reference_dump({key: {"x": 1}}).partition("\n")
    return first.endswith(":") and rest.startswith(" ")


def _string_keys(data: Any) -> bool:
    if isinstance(data, dict):
        return all(type(k) is str and _string_keys(v) for k, v in data.items())
    if isinstance(data, list):
        return all(_string_keys(item) for item in data)
    return True
