"""A rendering built from an earlier one's tree (``_common/yaml_reparse.py``) is the full parse's.

The jobs of a submission differ only inside double-quoted values, and only such a difference
may reuse a tree: every golden rendering with its quoted values changed (hypothesis picks which
and to what, from characters that mean something to YAML outside quotes) must give exactly the
tree a full parse gives, and each change that could mean something else (a quote or backslash
inside, a changed key, a line more, another line break) must be parsed in full.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support import helpers

from nemo_gym.orchestration.executors.otel import TemplateError
from nemo_gym.orchestration.executors.otel._common import yaml_loader
from nemo_gym.orchestration.executors.otel._common.yaml_fast_path import plain_from_events
from nemo_gym.orchestration.executors.otel._common.yaml_reparse import (
    Parsed,
    remember,
    reparsed,
)

GOLDEN = sorted((helpers.REPO / "tests" / "golden").glob("*/*/*.yaml"))
LOADER = yaml_loader._collector_loader()
# Characters that end, nest or comment outside quotes, and some that take more than a byte.
INSIDE = st.text(st.sampled_from(list("ab/_-.: #{}[],&*!|>'%@`~=?é€😀\t")), max_size=40)


def _full(text: str) -> Any:
    return plain_from_events(text, LOADER, yaml_loader.MAX_DEPTH)


@functools.cache
def _remembered(path: Path) -> tuple[str, Parsed]:
    text = path.read_text("utf-8")
    parsed = remember(text, _full(text), LOADER)
    assert parsed is not None and parsed.places, f"{path}: no quoted value to vary"
    return text, parsed


def _with(text: str, parsed: Parsed, values: dict[int, str]) -> str:
    lines = text.split("\n")
    for number, inside in values.items():
        place = parsed.places[number]
        line = lines[number]
        lines[number] = f'{line[: place.start]}"{inside}"{line[place.end :]}'
    return "\n".join(lines)


@pytest.mark.parametrize("path", GOLDEN, ids=lambda p: "/".join(p.parts[-3:]))
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_changed_quoted_values_give_the_full_parse(path: Path, data: st.DataObject) -> None:
    text, parsed = _remembered(path)
    chosen = data.draw(st.lists(st.sampled_from(sorted(parsed.places)), unique=True, min_size=1))
    changed = _with(text, parsed, {n: data.draw(INSIDE) for n in chosen})
    tree = reparsed(changed, parsed)
    assert tree is not None
    assert tree == _full(changed)


def test_the_tree_handed_out_is_a_copy() -> None:
    text, parsed = _remembered(GOLDEN[0])
    first = reparsed(text, parsed)
    first.clear()
    assert reparsed(text, parsed) == _full(text)


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(lambda line, p: f'{line[: p.start]}"a"b"{line[p.end :]}', id="quote"),
        pytest.param(lambda line, p: f'{line[: p.start]}"a\\tb"{line[p.end :]}', id="backslash"),
        pytest.param(lambda line, p: f"{line[: p.start]}'a'{line[p.end :]}", id="single-quoted"),
        pytest.param(lambda line, p: f"{line[: p.start]}a{line[p.end :]}", id="plain"),
        pytest.param(lambda line, p: f'{line[: p.start]}"a"  # x{line[p.end :]}', id="after"),
        pytest.param(lambda line, p: f'x{line[: p.start]}"a"{line[p.end :]}', id="before"),
        pytest.param(lambda line, p: f'{line[: p.start]}"{"a" * 1100}"{line[p.end :]}', id="long"),
        pytest.param(lambda line, p: f'{line[: p.start]}"a\rb"{line[p.end :]}', id="cr"),
        pytest.param(lambda line, p: f'{line[: p.start]}"a\u2028b"{line[p.end :]}', id="ls"),
        pytest.param(lambda line, p: f'{line[: p.start]}"a"\n{line[p.end :]}', id="line-more"),
    ],
)
def test_other_changes_are_parsed_in_full(change: Any) -> None:
    text, parsed = _remembered(GOLDEN[0])
    number = min(parsed.places)
    lines = text.split("\n")
    lines[number] = change(lines[number], parsed.places[number])
    assert reparsed("\n".join(lines), parsed) is None


def test_keys_are_never_replaced() -> None:
    text = 'a:\n  "b": "c"\n  d: ["e", "f"]\n  g: "h"\n'
    parsed = remember(text, _full(text), LOADER)
    assert parsed is not None
    # "c" (after a quoted key) and "h" are values; the flow list's line holds two of them.
    assert sorted(parsed.places) == [1, 3]
    assert reparsed(text.replace('"b"', '"x"'), parsed) is None
    assert reparsed(text.replace('"e"', '"x"'), parsed) is None
    assert reparsed(text.replace('"h"', '"x: y"'), parsed) == {
        "a": {"b": "c", "d": ["e", "f"], "g": "x: y"}
    }


def test_parse_yaml_reuses_and_still_refuses() -> None:
    """Through the loader: a job's rendering after another's, and a broken one after both."""
    text, parsed = _remembered(GOLDEN[0])
    number = min(parsed.places)
    again = _with(text, parsed, {number: "other"})
    assert yaml_loader.parse_yaml(text, "t", TemplateError, collector=True) == _full(text)
    assert yaml_loader.parse_yaml(again, "t", TemplateError, collector=True) == _full(again)
    broken = _with(text, parsed, {number: 'a" b'})
    with pytest.raises(TemplateError):
        yaml_loader.parse_yaml(broken, "t", TemplateError, collector=True)
