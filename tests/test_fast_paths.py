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
