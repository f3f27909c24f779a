"""The two libraries on the check path answer exactly as the references they stand in for.

jsonschema-rs gives the yes/no answer of the schema check and jsonschema only explains a
failure, so a jsonschema-rs "valid" where jsonschema finds a violation would let a broken config
through: the two are compared on every golden file, the whole collector corpus and
hypothesis-mutated documents. The YAML loader is PyYAML's C loader plus a refusal of duplicate
keys and a direct construction of plain trees: it is compared with stock ``yaml.CSafeLoader``.
"""

from __future__ import annotations

import copy
import functools
from pathlib import Path
from typing import Any

import collector_corpus
import helpers
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from nemo_gym.orchestration.executors.otel import TemplateError
from nemo_gym.orchestration.executors.otel._common.json_schema import (
    _is_valid,
    _registry,
    violations,
)
from nemo_gym.orchestration.executors.otel._common.resources import load_schema, schema_names
from nemo_gym.orchestration.executors.otel._common.yaml_loader import parse_yaml

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


def _agree(document: Any, schema_name: str) -> None:
    assert _is_valid(schema_name)(document) == _reference(schema_name).is_valid(document)


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
        document = yaml.safe_load(case.text)
        if not all(isinstance(key, str) for key in document):
            continue  # the package reports such keys before any schema runs
        name = f"collector-{case.line}.schema.json"
        _agree(document, name)
        outcomes.add(_reference(name).is_valid(document))
    assert outcomes == {True, False}, "the corpus must hold valid and invalid documents"


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
