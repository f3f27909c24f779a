"""The README's two commands, run as a new user would: in a fresh clone, with nothing beside it.

The clone sits alone in an empty folder, so anything the commands need from outside the
repository (a sibling ``shared/`` folder, an installed checkout) makes them fail here. The test
command is run with ``PYTEST_ADDOPTS=--collect-only``: the whole suite must collect from the clone
(running it again inside itself would build the collectors twice and never end).
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest
from support import helpers

pytestmark = pytest.mark.slow

README = (helpers.REPO / "README.md").read_text(encoding="utf-8")


def _commands() -> list[str]:
    section = README.split("## The two commands\n", 1)[1].split("\n#", 1)[0]
    return re.findall(r"```bash\n(.*?)\n```", section, flags=re.DOTALL)


@pytest.fixture(scope="module")
def clone(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("empty") / "nemo-gym-otel"
    subprocess.run(
        ["git", "clone", "-q", "--no-hardlinks", str(helpers.REPO), str(target)],
        check=True,
        capture_output=True,
        text=True,
    )
    assert sorted(p.name for p in target.parent.iterdir()) == ["nemo-gym-otel"]
    return target


def _run(command: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """``command`` in a new user's shell: none of the tests' variables, and no ingest token."""
    environ = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PYTEST_", "VIRTUAL_ENV")) and k != "OTEL_TOKEN"
    }
    return subprocess.run(
        ["bash", "-c", command],
        cwd=cwd,
        env={**environ, **env},
        capture_output=True,
        text=True,
        timeout=900,
    )


def test_the_readme_has_two_commands() -> None:
    render, tests = _commands()
    assert "nemo-gym-otel render examples/submit.yaml" in render
    assert "python -m pytest" in tests


def test_the_render_command_prints_a_collector_config(clone: Path) -> None:
    render, _ = _commands()
    result = _run(render, clone)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stderr == "", "a new user's first command warns of nothing"
    assert result.stdout.startswith("# OpenTelemetry Collector config rendered by nemo-gym-otel")
    assert "\nservice:\n" in result.stdout


def test_the_test_command_collects_every_test_from_the_clone(clone: Path) -> None:
    _, tests = _commands()
    result = _run(tests, clone, PYTEST_ADDOPTS="--collect-only -q -p no:cacheprovider")
    assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]
    assert result.stderr == "", result.stderr[-3000:]
    collected = re.search(r"(\d+) tests? collected", result.stdout)
    assert collected and int(collected[1]) > 300, result.stdout[-1000:]


def test_nothing_in_the_repository_reads_outside_it() -> None:
    tracked = subprocess.run(
        ["git", "ls-files"], cwd=helpers.REPO, capture_output=True, text=True, check=True
    ).stdout.split()
    readers = [
        name
        for name in tracked
        if name.endswith((".py", ".sh", "run", "build-otelcol"))
        and name != f"tests/{Path(__file__).name}"  # the pattern below names what it looks for
        and re.search(r"\.\./shared|shared/fixtures", (helpers.REPO / name).read_text("utf-8"))
    ]
    assert readers == [], f"files that read outside the repository: {readers}"
