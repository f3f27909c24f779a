"""Shared fixtures: the repository's own files and the realistic inputs in ../shared/fixtures."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
FIXTURES = Path(os.environ.get("NEMO_GYM_OTEL_FIXTURES", REPO.parent / "shared" / "fixtures"))
CONFIGS = REPO / "tests" / "data" / "configs"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden",
        action="store_true",
        help="rewrite tests/golden/ from the current templates (review the diff by eye)",
    )


# The `user` attribute comes from the login name; pin it (before any module renders at
# collection time) so renders are reproducible.
os.environ["LOGNAME"] = "gym-user"


@pytest.fixture(autouse=True)
def _no_ambient_overrides(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NEMO_GYM_OTEL_TEMPLATE_PATH", raising=False)


def load_mapping(path: Path) -> dict:
    with path.open(encoding="utf-8") as handle:
        return yaml.safe_load(handle)


@pytest.fixture
def example_mapping() -> dict:
    return load_mapping(REPO / "examples" / "submit.yaml")


def fixture_configs() -> dict[str, Path]:
    """Every submit config the golden and property tests render, by a short name."""
    configs = {
        "shared-submit": FIXTURES / "submit.yaml",
        "example": REPO / "examples" / "submit.yaml",
    }
    configs.update({p.stem: p for p in sorted(CONFIGS.glob("*.yaml"))})
    return configs
