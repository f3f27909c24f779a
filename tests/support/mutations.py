"""Random edits of a parsed document, for tests that compare two judges of the same document."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import strategies as st

# Values of every JSON type and the look-alikes jsonschema tells apart (True is not 1).
VALUES = st.recursive(
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


def paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if isinstance(node, dict):
        for key, value in node.items():
            found += paths(value, (*prefix, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found += paths(value, (*prefix, index))
    return found


def mutate(document: Any, path: tuple[Any, ...], action: str, value: Any) -> Any:
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
