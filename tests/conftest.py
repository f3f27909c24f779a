"""pytest's hooks and fixtures; what the tests share lives in ``support/`` (``support.helpers``
first), imported as modules."""

from __future__ import annotations

import os

import pytest
from support import helpers


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


@pytest.fixture
def example_mapping() -> dict:
    return helpers.load_mapping(helpers.EXAMPLE)
