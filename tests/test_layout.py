"""The package's layout shows the flow, and every import points down it.

Stages, in the order data flows through them, one folder each: shared parts (``_common``), the
submit config (``_submit``), templating (``_templating``), checks of collector YAML
(``_checks``), rendering (``_render``: render, check, write), the collector's job step
(``_step``), reading a job directory back (``_job_dir``), views for people and scripts
(``_views``), and the command line (``_cli``). A module may import from its own stage and the
stages before it, never from a later one; nothing but the package's ``__init__`` sits loose.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from support.helpers import REPO

from nemo_gym.orchestration.executors import otel

PACKAGE = Path(otel.__file__).parent
STAGES = [
    "_common",
    "_submit",
    "_templating",
    "_checks",
    "_render",
    "_step",
    "_job_dir",
    "_views",
    "_cli",
]
DATA = {"templates", "schemas", "examples"}  # pyproject.toml's force-include
MODULES = sorted(p for p in PACKAGE.rglob("*.py") if p.name != "__init__.py" or p.parent != PACKAGE)


def _stage(parts: tuple[str, ...]) -> int:
    return STAGES.index(parts[0].removesuffix(".py"))


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


def test_the_stages_are_the_listing() -> None:
    """Every stage is a folder, and the package holds nothing else but its public ``__init__``
    (and the typing marker; the installed package also carries the data folders the build maps
    in): a new module has to pick its stage."""
    listed = {p.name for p in PACKAGE.iterdir() if p.name not in {"__pycache__", *DATA}}
    assert listed == {*STAGES, "__init__.py", "py.typed"}
    assert all((PACKAGE / stage / "__init__.py").is_file() for stage in STAGES)


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_import_goes_back_up_the_flow(path: Path) -> None:
    stage = _stage(path.relative_to(PACKAGE).parts)
    later = [module for module, other in _imported_stages(path) if other > stage]
    assert later == [], f"{path.relative_to(PACKAGE)} imports from a later stage: {later}"


def test_the_check_is_not_vacuous() -> None:
    """Rendering imports from every earlier stage (and its own: the drain config); the shared
    parts from none of the others."""
    rendering = {other for _, other in _imported_stages(PACKAGE / "_render" / "rendering.py")}
    assert rendering == {0, 1, 2, 3, 4}
    for path in (PACKAGE / "_common").glob("*.py"):
        assert {other for _, other in _imported_stages(path)} <= {0}, path.name


def test_the_architecture_page_lists_the_stages_in_order() -> None:
    """The maintainers' map of the package and the enforced order are one list."""
    page = (REPO / "docs" / "maintainers" / "architecture.md").read_text(encoding="utf-8")
    listing = page.split("```text\n", 1)[1].split("```", 1)[0]
    named = [line.split()[0].rstrip("/") for line in listing.splitlines() if line.startswith("  _")]
    named = [name for name in named if name != "__init__.py"]
    assert named == STAGES
