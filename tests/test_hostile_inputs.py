"""Hostile inputs, by class (issue 10): every file in tests/data/hostile/ is refused the way the
error contract says, within bounds of time and memory, and writes nothing.

``submit/*.yaml``      submit configs ``render`` must refuse
``collector/*.yaml``   collector configs ``validate`` must refuse (or accept, with ``valid: true``)
``templates/<case>/``  override folders ``check --template-dir`` must refuse; ``case.yaml``
                       holds the expectation

Each case states its expectation as YAML behind ``#: `` (``case.yaml`` for a template folder),
like the malformed-config corpus: ``path`` the error must name (``<case file>[:line]`` for the
file itself), ``says`` text it must contain, optional ``absent`` (a value that must not be
repeated), ``benchmark``, ``job_dir`` (``{tmp}`` is the test's folder), ``token_env``,
``listen_host``, ``endpoint`` and ``allow_plain_http`` (validate's flags), ``valid``. The file names say the class: ``c1-`` token and
tenant rules, ``c2-`` resource exhaustion, ``c3-`` the error contract, ``c4-`` values the
collector would refuse or misread, ``c5-`` YAML as the collector reads it.

Every run goes through the installed console script under :mod:`support.bounded`: exit 1, one
``<path>: <message>`` line per problem, no traceback, under the CPU and memory limits.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from support import helpers
from support.bounded import assert_within_bounds, run_bounded

HOSTILE = helpers.DATA / "hostile"
SUBMIT_CASES = sorted((HOSTILE / "submit").glob("*.yaml"))
COLLECTOR_CASES = sorted((HOSTILE / "collector").glob("*.yaml"))
TEMPLATE_CASES = sorted(p for p in (HOSTILE / "templates").iterdir() if p.is_dir())
_KEYS = {
    "path",
    "says",
    "absent",
    "benchmark",
    "job_dir",
    "token_env",
    "listen_host",
    "endpoint",
    "allow_plain_http",
    "valid",
}
CLASSES = ("c1-", "c2-", "c3-", "c4-", "c5-")


def expectation(text: str, name: str) -> dict[str, Any]:
    expected = helpers.case_header(text)
    assert set(expected) <= _KEYS, f"{name}: unknown expectation keys"
    assert "valid" in expected or {"path", "says"} <= set(expected), f"{name}: path and says"
    return expected


def _expected_of(case: Path) -> dict[str, Any]:
    if case.is_dir():
        return expectation((case / "case.yaml").read_text(encoding="utf-8"), case.name)
    return expectation(case.read_bytes().decode("utf-8", "replace"), case.name)


def test_every_class_has_cases() -> None:
    names = [p.name for p in [*SUBMIT_CASES, *COLLECTOR_CASES, *TEMPLATE_CASES]]
    for prefix in CLASSES:
        assert sum(n.startswith(prefix) for n in names) >= 5, prefix


def _check_refusal(result: Any, expected: dict[str, Any], where: Path, name: str) -> None:
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    lines = helpers.error_lines(result.stderr)
    path = str(expected["path"])
    if path.startswith(name):
        path = str(where / path)
    assert any(line.startswith(f"{path}: ") and expected["says"] in line for line in lines), lines
    if "absent" in expected:
        assert str(expected["absent"]) not in result.stderr + result.stdout
    assert_within_bounds(result)


@pytest.mark.parametrize("case", SUBMIT_CASES, ids=lambda p: p.stem)
def test_render_refuses_hostile_submit_configs(case: Path, tmp_path: Path) -> None:
    expected = _expected_of(case)
    config, job_dir = helpers.staged_submit_case(case, tmp_path, expected)
    (tmp_path / "a-file").write_text("not a folder\n", encoding="utf-8")
    before = helpers.tree(tmp_path)
    result = run_bounded(
        [
            helpers.CLI,
            "render",
            config,
            "--benchmark",
            str(expected.get("benchmark", "aime25")),
            "--job-dir",
            job_dir,
        ],
        cwd=tmp_path,
        env=helpers.cli_env(OTEL_TOKEN="token-is-set"),
    )
    _check_refusal(result, expected, config.parent, case.name)
    assert result.stdout == ""
    assert helpers.tree(tmp_path) == before


@pytest.mark.parametrize("case", COLLECTOR_CASES, ids=lambda p: p.stem)
def test_validate_judges_hostile_collector_configs(case: Path, tmp_path: Path) -> None:
    expected = _expected_of(case)
    flags = []
    for key in ("token_env", "listen_host", "endpoint"):
        if key in expected:
            flags += [f"--{key.replace('_', '-')}", str(expected[key])]
    if expected.get("allow_plain_http"):
        flags.append("--allow-plain-http")
    result = run_bounded(
        [helpers.CLI, "validate", case, *flags], cwd=tmp_path, env=helpers.cli_env()
    )
    if expected.get("valid"):
        assert result.returncode == 0, result.stderr
        assert_within_bounds(result)
    else:
        _check_refusal(result, expected, case.parent, case.name)


@pytest.mark.parametrize("case", TEMPLATE_CASES, ids=lambda p: p.name)
def test_check_refuses_hostile_override_templates(case: Path, tmp_path: Path) -> None:
    expected = _expected_of(case)
    overrides = tmp_path / "overrides"
    shutil.copytree(case, overrides, ignore=shutil.ignore_patterns("case.yaml"))
    result = run_bounded(
        [helpers.CLI, "check", "--template-dir", overrides], cwd=tmp_path, env=helpers.cli_env()
    )
    assert result.returncode == 1, result.stdout + result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    problems = [line for line in result.stderr.splitlines() if not line.endswith("found")]
    for line in problems:
        assert line.startswith(helpers.ERROR), line
    assert any(
        str(expected["path"]).replace("{dir}", str(overrides)) in line and expected["says"] in line
        for line in problems
    ), problems
    assert_within_bounds(result)
