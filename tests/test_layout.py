"""The package's layout shows the flow, and every import points down it.

Stages, in the order data flows through them: shared parts (``_common``), the submit config
(``_submit``), templating (``_templating``), checks (``_checks``), the pipeline that runs them in
order (``_pipeline``), and the entry points (``_cli``, ``_step``). A module may import from its
own stage and the stages before it, never from a later one.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from nemo_gym.orchestration.executors import otel

PACKAGE = Path(otel.__file__).parent
STAGES = ["_common", "_submit", "_templating", "_checks", "_pipeline", "_cli"]
ENTRY_POINTS = {
    "_cli",
    "_step",
    "_report_view",
    "_delivery_report",
    "_collector_log",
    "_scrape_health",
}  # and the report
MODULES = sorted(p for p in PACKAGE.rglob("*.py") if p.name != "__init__.py" or p.parent != PACKAGE)


def _stage(parts: tuple[str, ...]) -> int:
    top = parts[0].removesuffix(".py")
    return STAGES.index("_cli" if top in ENTRY_POINTS else top)


def _imported_stages(path: Path) -> list[tuple[str, int]]:
    """(module imported, its stage) for every relative import, function-local ones too."""
    own = path.relative_to(PACKAGE).parts
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = list(own[:-1])[: len(own) - node.level]
            target = [*base, *(node.module or "").split(".")]
            found.append((".".join(target), _stage(tuple(target))))
    return found


def test_the_stages_are_one_listing() -> None:
    listed = {p.name.removesuffix(".py") for p in PACKAGE.iterdir() if not p.name.startswith(".")}
    assert set(STAGES) <= listed


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_import_goes_back_up_the_flow(path: Path) -> None:
    stage = _stage(path.relative_to(PACKAGE).parts)
    later = [module for module, other in _imported_stages(path) if other > stage]
    assert later == [], f"{path.relative_to(PACKAGE)} imports from a later stage: {later}"


def test_the_check_is_not_vacuous() -> None:
    """The pipeline imports from every earlier stage; the shared parts from none of the others."""
    pipeline = {other for _, other in _imported_stages(PACKAGE / "_pipeline.py")}
    assert pipeline == {0, 1, 2, 3}
    for path in (PACKAGE / "_common").glob("*.py"):
        assert {other for _, other in _imported_stages(path)} <= {0}, path.name
