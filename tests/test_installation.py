"""The tests exercise the installed package; make sure it is this checkout's."""

from __future__ import annotations

from importlib import resources

import pytest
from support import helpers

PACKAGE = resources.files("nemo_gym.orchestration.executors.otel")


@pytest.mark.parametrize("folder", ["templates", "schemas"])
def test_installed_resources_match_the_checkout(folder: str) -> None:
    checkout = {
        p.relative_to(helpers.REPO / folder).as_posix(): p.read_bytes()
        for p in (helpers.REPO / folder).rglob("*")
        if p.is_file()
    }
    installed = {}
    stack = [(PACKAGE / folder, "")]
    while stack:
        node, prefix = stack.pop()
        for child in node.iterdir():
            name = f"{prefix}{child.name}"
            if child.is_dir():
                stack.append((child, f"{name}/"))
            else:
                installed[name] = child.read_bytes()
    stale = sorted(
        k for k in checkout.keys() | installed.keys() if checkout.get(k) != installed.get(k)
    )
    assert not stale, (
        f"installed {folder}/ differs from the checkout in {stale}: run `pip install '.[test]'` again"
    )
