"""Golden files: every line x combination rendered from every fixture config.

A template change shows up here as a diff to review. Regenerate on purpose only:
``python -m pytest tests/test_golden.py --update-golden``, then read the diff.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from support import helpers

from nemo_gym.orchestration.api import SubmitConfig

GOLDEN = helpers.REPO / "tests" / "golden"
CASES = [(name, path) for name, path in helpers.fixture_configs().items()]


def golden_path(config_name: str, line: str, combination: str) -> Path:
    return GOLDEN / config_name / line / f"{combination}.yaml"


@pytest.mark.parametrize(("name", "path"), CASES, ids=[c[0] for c in CASES])
def test_rendered_output_matches_golden(
    name: str, path: Path, request: pytest.FixtureRequest
) -> None:
    config = SubmitConfig.from_yaml(path)
    update = request.config.getoption("--update-golden")
    mismatched = []
    for line, combination, text in helpers.render_variants(config):
        target = golden_path(name, line, combination)
        if update:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
        elif not target.is_file() or target.read_text(encoding="utf-8") != text:
            mismatched.append(str(target.relative_to(helpers.REPO)))
    assert not mismatched, (
        f"re-render differs from golden files (run with --update-golden and review): {mismatched}"
    )


def test_every_line_and_combination_has_golden_files() -> None:
    expected = {
        golden_path(name, line, combination)
        for name in helpers.fixture_configs()
        for line in helpers.line_versions()
        for combination in helpers.COMBINATIONS
    }
    present = set(GOLDEN.glob("*/*/*.yaml"))
    assert len(helpers.line_versions()) >= 2
    assert expected == present, (
        f"missing: {sorted(expected - present)}; stale: {sorted(present - expected)}"
    )
