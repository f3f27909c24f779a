"""The render path's fast paths answer exactly as the slow paths they stand in front of.

A compiled schema check that said "valid" where jsonschema finds a violation would let a broken
config through; a YAML construction that differed from PyYAML's would check something other
than what was written. Both are compared with the originals on every golden file and on
hypothesis-mutated documents.
"""

from __future__ import annotations

import copy
import functools
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import REPO
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from nemo_gym.orchestration.executors.otel import TemplateError
from nemo_gym.orchestration.executors.otel._resources import load_schema, schema_names
from nemo_gym.orchestration.executors.otel._schema_check import _registry, _valid, violations
from nemo_gym.orchestration.executors.otel._yaml import _loader_class, parse_yaml

GOLDEN = sorted((REPO / "tests" / "golden").glob("*/*/*.yaml"))
COLLECTOR_SCHEMAS = [
    n for n in schema_names() if n.startswith("collector-") and "-components" not in n
]


def _line(path: Path) -> str:
    return path.parent.name


@functools.cache
def _documents() -> list[tuple[str, Any]]:
    return [(_line(p), yaml.load(p.read_text("utf-8"), Loader=yaml.CSafeLoader)) for p in GOLDEN]


@functools.cache
def _slow(schema_name: str) -> Any:
    return Draft202012Validator(load_schema(schema_name), registry=_registry())


def _slow_valid(instance: Any, schema_name: str) -> bool:
    return _slow(schema_name).is_valid(instance)


def test_every_collector_schema_is_compiled() -> None:
    assert COLLECTOR_SCHEMAS
    for name in COLLECTOR_SCHEMAS:
        assert _valid(name) is not None, f"{name} fell back to jsonschema alone"


@pytest.mark.parametrize(
    "path", GOLDEN, ids=lambda p: str(p.relative_to(REPO / "tests" / "golden"))
)
def test_golden_documents_agree(path: Path) -> None:
    document = yaml.safe_load(path.read_text(encoding="utf-8"))
    for name in COLLECTOR_SCHEMAS:
        check = _valid(name)
        assert check is not None
        assert check(document) == _slow_valid(document, name), name
    assert violations(document, f"collector-{_line(path)}.schema.json") == []


# Values of every JSON type and the look-alikes jsonschema tells apart (True is not 1).
_values = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-3, 70000),
        st.sampled_from([0.0, 1.0, 2.5, -1.5]),
        st.sampled_from(["", "x", "5s", "localhost:4317", "json", "debug", "upsert", "${env:X}"]),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(
            st.sampled_from(["endpoint", "x", "level", "batch", "otlp"]), inner, max_size=3
        ),
    ),
    max_leaves=6,
)


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if isinstance(node, dict):
        for key, value in node.items():
            found += _paths(value, (*prefix, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found += _paths(value, (*prefix, index))
    return found


def _mutate(document: Any, path: tuple[Any, ...], action: str, value: Any) -> Any:
    mutated = copy.deepcopy(document)
    if not path:
        return value if action == "replace" else mutated
    parent = mutated
    for part in path[:-1]:
        parent = parent[part]
    last = path[-1]
    if action == "replace":
        parent[last] = value
    elif action == "delete":
        del parent[last]
    elif action == "add" and isinstance(parent, dict):
        parent[f"{last}_extra"] = value
    elif action == "rename" and isinstance(parent, dict):
        parent[f"{last}x"] = parent.pop(last)
    return mutated


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data())
def test_mutated_documents_agree(data: st.DataObject) -> None:
    line, document = data.draw(st.sampled_from(_documents()))
    for _ in range(data.draw(st.integers(1, 3))):
        path = data.draw(st.sampled_from(_paths(document)))
        action = data.draw(st.sampled_from(["replace", "delete", "add", "rename"]))
        document = _mutate(document, path, action, data.draw(_values))
    name = f"collector-{line}.schema.json"
    check = _valid(name)
    assert check is not None
    assert check(document) == _slow_valid(document, name)


# -- YAML ------------------------------------------------------------------------------------

_YAML_CASES = [
    "a: 1\nb: [x, 'y', 2.5, true, null, ~, 0x1F, 1_000]\nc: {d: 2020-01-02, e: !!binary aGk=}\n",
    "anchor: &a {x: 1}\nalias: *a\n",
    "base: &b {x: 1, y: 2}\nmerged:\n  <<: *b\n  y: 3\n",
    "set: !!set {a, b}\nomap: !!omap [{a: 1}, {b: 2}]\n",
    "? [complex, key]\n: value\n",
    "'1': string key\n1: int key\n",
    "",
    "# only a comment\n",
    "- just\n- a list\n",
    "plain scalar\n",
]


def _outcome(load: Any) -> Any:
    try:
        return load()
    except (yaml.YAMLError, TemplateError) as exc:
        return (
            "error",
            str(exc) if isinstance(exc, yaml.YAMLError) else f"{exc.path}: {exc.message}",
        )


@pytest.mark.parametrize("text", _YAML_CASES)
def test_yaml_matches_pyyaml(text: str) -> None:
    """The same data, or the same error, as PyYAML's constructor with the duplicate check."""
    expected = _outcome(lambda: yaml.load(text, Loader=_loader_class()))
    got = _outcome(lambda: parse_yaml(text, "case", TemplateError))
    if isinstance(expected, tuple):  # an error: the same problem, reported at its line
        assert isinstance(got, tuple)
        assert got[1].startswith("case:")
        assert got[1].split("; fix")[0].split(": ", 1)[1] in expected[1]
    else:
        assert got == expected


@pytest.mark.parametrize(
    "text",
    ["a: 1\na: 2\n", "x:\n  k: 1\n  k: 1\n", "1: a\n1.0: b\n", "true: a\nTrue: b\n"],
)
def test_yaml_duplicates_are_refused_on_their_line(text: str) -> None:
    with pytest.raises(TemplateError) as raised:
        parse_yaml(text, "case", TemplateError)
    assert "duplicate key" in raised.value.message
    with pytest.raises(yaml.MarkedYAMLError) as original:
        yaml.load(text, Loader=_loader_class())
    assert raised.value.path == f"case:{original.value.problem_mark.line + 1}"


@pytest.mark.parametrize(
    "path", GOLDEN, ids=lambda p: str(p.relative_to(REPO / "tests" / "golden"))
)
def test_golden_yaml_matches_pyyaml(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert parse_yaml(text, str(path), TemplateError) == yaml.load(text, Loader=_loader_class())


# -- reusing an earlier parse -----------------------------------------------------------------

# Strings a changed line may end with: simple quoted values, quoted values the shortcut must not
# take (escapes, non-ASCII, inner quotes), and text that is not one quoted value at all.
_LINE_ENDINGS = st.one_of(
    st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=12).map(
        lambda t: f'"{t}"'
    ),
    st.sampled_from(
        [
            '"a\\"b"',
            '"a\\nb"',
            '"caf\u00e9"',
            '"caf\\u00e9"',
            '"a" "b"',
            '"a": "b"',
            '"a" # note',
            '"a"  ',
            '"unterminated',
            "plain",
            "123",
            "[1, 2]",
            "{}",
            '&anchor "x"',
            '!!str "x"',
            "*nothing",
            "",
            '"a\r"',
            '"\u2028"',
        ]
    ),
)


def _full(text: str) -> Any:
    return _outcome(lambda: parse_yaml(text, "case", TemplateError))


def _reused(base: str, text: str) -> Any:
    from nemo_gym.orchestration.executors.otel._reparse import RenderingParser

    parser = RenderingParser()
    parser.parse(base, "key", "case", TemplateError)
    return _outcome(lambda: parser.parse(text, "key", "case", TemplateError))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_reused_parse_is_the_full_parse(data: st.DataObject) -> None:
    """Whatever a rendering changes (quoted values, other text, whole lines), parsing it after
    an earlier rendering gives exactly what parsing it alone gives, error or data."""
    base = data.draw(st.sampled_from(GOLDEN)).read_text(encoding="utf-8")
    lines = base.split("\n")
    for _ in range(data.draw(st.integers(1, 4))):
        number = data.draw(st.integers(0, len(lines) - 1))
        kind = data.draw(st.sampled_from(["value", "value", "tail", "line", "insert", "delete"]))
        if kind == "value" and '"' in lines[number]:
            lines[number] = lines[number][: lines[number].index('"')] + data.draw(_LINE_ENDINGS)
        elif kind == "tail":
            cut = data.draw(st.integers(0, len(lines[number])))
            lines[number] = lines[number][:cut] + data.draw(_LINE_ENDINGS)
        elif kind == "line":
            lines[number] = data.draw(st.text(max_size=20))
        elif kind == "insert":
            lines.insert(number, data.draw(st.text(max_size=20)))
        elif kind == "delete" and len(lines) > 1:
            del lines[number]
    text = "\n".join(lines)
    assert _reused(base, text) == _full(text)


@pytest.mark.parametrize(
    ("base", "changed"),
    [
        # The anchored value changes; its alias must follow (the shortcut leaves it alone).
        ('a: &x "one"\nb: *x\n', 'a: &x "two"\nb: *x\n'),
        ('a: !!str "one"\n', 'a: !!str "two"\n'),
        ('a: "one" # note\n', 'a: "two" # note\n'),
        ('a: ["one",\n  "two"]\n', 'a: ["one",\n  "three"]\n'),
        ('a:\n  - "one"\n  - "two"\n', 'a:\n  - "one"\n  - "three"\n'),
        ('a: "one"\r\nb: "x"\r\n', 'a: "two"\r\nb: "x"\r\n'),
        ('\ufeffa: "one"\n', '\ufeffa: "two"\n'),
        ('a: "x"\nb: "caf\u00e9"\n', 'a: "y"\nb: "caf\u00e9"\n'),
        ('a: "one"\n', 'a: "one"\n"b": 1\n'),
        ('a: "one"\n', 'a: "on\\"e"\n'),
        ('a: "one"\n', 'a: "a" \n'),
        # Each guard of the shortcut, on a text that would parse differently without it.
        ('a: ["one"]\nb: 1\n', 'a: ["x"\nb: 1\n'),  # the old value ended its line
        ('a: &x "one"\nb: *x\n', 'a: "two"\nb: *x\n'),  # the old line had a quote there
        ('x: 1\u2028a: "one"\nb: "two"\n', 'x: 1\u2028a: "one"\nb: "new"\n'),  # breaks
        ('a: "one"\n', 'a: "one"\n\n'),  # as many lines
    ],
)
def test_reused_parse_edge_cases(base: str, changed: str) -> None:
    assert _reused(base, changed) == _full(changed)


@pytest.mark.parametrize(
    ("base", "changed", "expected"),
    [
        ('\u00e9: "one"\nb: [1]\n', '\u00e9: "two"\nb: [1]\n', {"\u00e9": "two", "b": [1]}),
        ('a:\n  - "x"\n  - b: "y"\n', 'a:\n  - "x"\n  - b: "z"\n', {"a": ["x", {"b": "z"}]}),
    ],
)
def test_a_changed_quoted_value_takes_the_shortcut(
    base: str, changed: str, expected: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from nemo_gym.orchestration.executors.otel import _reparse

    parser = _reparse.RenderingParser()
    parser.parse(base, "key", "case", TemplateError)
    monkeypatch.setattr(_reparse, "parse_yaml_tree", None)  # a full parse would now fail
    assert parser.parse(changed, "key", "case", TemplateError) == expected


def test_renderings_of_two_benchmarks_share_one_full_parse(
    example_config: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from nemo_gym.orchestration.executors.otel import _reparse, render_collector_config

    full_parses = []
    original = _reparse.parse_yaml_tree
    monkeypatch.setattr(
        _reparse, "parse_yaml_tree", lambda *a: full_parses.append(a[0]) or original(*a)
    )
    monkeypatch.setattr(_reparse, "RENDERINGS", _reparse.RenderingParser())
    first = render_collector_config(example_config, "aime25", "/runs/g1/aime25")
    second = render_collector_config(
        example_config, "livecodebench_v6", "/runs/g1/livecodebench_v6"
    )
    assert full_parses == [first]
    assert second != first


def test_a_reused_parse_leaves_the_earlier_data_alone() -> None:
    from nemo_gym.orchestration.executors.otel._reparse import RenderingParser

    base = GOLDEN[0].read_text(encoding="utf-8")
    parser = RenderingParser()
    first = parser.parse(base, "key", "case", TemplateError)
    lines = base.split("\n")
    quoted = next(i for i, line in enumerate(lines) if line.endswith('"'))
    lines[quoted] = lines[quoted][: lines[quoted].index('"')] + '"changed"'
    changed = "\n".join(lines)
    second = parser.parse(changed, "key", "case", TemplateError)
    assert second != first
    assert first == parse_yaml(base, "case", TemplateError)
    assert second == parse_yaml(changed, "case", TemplateError)


# -- the atomic write -------------------------------------------------------------------------


def _files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


@pytest.fixture
def example_config() -> Any:
    from nemo_gym.orchestration.api import SubmitConfig

    return SubmitConfig.from_yaml(REPO / "examples" / "submit.yaml")


def test_write_makes_only_the_missing_folders(tmp_path: Path, example_config: Any) -> None:
    from nemo_gym.orchestration.executors.otel import write_collector_config

    (tmp_path / "runs").mkdir()
    target = write_collector_config(example_config, "aime25", tmp_path / "runs" / "g1" / "aime25")
    assert _files(tmp_path) == {
        "runs",
        "runs/g1",
        "runs/g1/aime25",
        "runs/g1/aime25/otel",
        "runs/g1/aime25/otel/collector.yaml",
    }
    again = write_collector_config(example_config, "aime25", tmp_path / "runs" / "g1" / "aime25")
    assert again == target and len(_files(tmp_path)) == 5


def test_a_failed_write_removes_what_it_made_and_nothing_else(
    tmp_path: Path, example_config: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from nemo_gym.orchestration.executors.otel import write_collector_config

    (tmp_path / "runs" / "keep").mkdir(parents=True)

    def broken_fsync(fd: int) -> None:
        raise OSError("disk full")

    monkeypatch.setattr("os.fsync", broken_fsync)
    with pytest.raises(OSError, match="disk full"):
        write_collector_config(example_config, "aime25", tmp_path / "runs" / "g1" / "aime25")
    assert _files(tmp_path) == {"runs", "runs/keep"}


def test_a_file_in_the_way_fails_without_leaving_folders(
    tmp_path: Path, example_config: Any
) -> None:
    from nemo_gym.orchestration.executors.otel import write_collector_config

    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "g1").write_text("not a folder")
    with pytest.raises(OSError):
        write_collector_config(example_config, "aime25", tmp_path / "runs" / "g1" / "aime25")
    assert _files(tmp_path) == {"runs", "runs/g1"}
