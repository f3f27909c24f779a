"""Every file in tests/data/malformed/ is a submit config the render command must refuse.

Each case states what the one error line must say in its header, as YAML behind ``#: ``
(a case that cannot hold comments, the empty file, keeps it in a ``<name>.expect`` sidecar):

``path``       the path the error names: a submit-config key (``otel.endpoint``), a command-line
               flag (``--job-dir``), or ``<case file name>[:line]`` for the file itself
``says``       text the message must contain (the fix, or the closest known key)
``absent``     optional: text that must not appear (a value from the config)
``benchmark``  optional ``--benchmark`` (default ``aime25``)
``job_dir``    optional ``--job-dir``, where ``{tmp}`` is the test's (empty) working directory

The render runs through the installed console script in an empty working directory and must
exit 1 with exactly one error line, no traceback, and nothing written anywhere.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from support import helpers

MALFORMED = helpers.REPO / "tests" / "data" / "malformed"
CASES = sorted(MALFORMED.glob("*.yaml"))
_KEYS = {"path", "says", "absent", "benchmark", "job_dir"}


def expectation(case: Path) -> dict[str, str]:
    sidecar = case.with_suffix(".expect")
    if sidecar.exists():
        expected = yaml.safe_load(sidecar.read_text(encoding="utf-8")) or {}
    else:
        expected = helpers.case_header(case.read_bytes().decode("utf-8", "replace"))
    assert {"path", "says"} <= set(expected) <= _KEYS, f"{case.name}: bad expectation header"
    return expected


def test_there_are_enough_cases() -> None:
    assert len(CASES) >= 25
    assert len({expectation(case)["path"] for case in CASES}) >= 25, "cover many different keys"


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.stem)
def test_render_refuses_naming_the_key_and_writes_nothing(case: Path, tmp_path: Path) -> None:
    expected = expectation(case)
    config, job_dir = helpers.staged_submit_case(case, tmp_path, expected)
    before = helpers.tree(tmp_path)

    result = helpers.run_cli(
        "render",
        config,
        "--benchmark",
        expected.get("benchmark", "aime25"),
        "--job-dir",
        job_dir,
        cwd=tmp_path,
        env=helpers.cli_env(OTEL_TOKEN="token-is-set"),
    )

    assert result.returncode == 1, result.stderr
    assert result.stdout == ""
    (message,) = helpers.error_lines(result.stderr)
    path = expected["path"]
    if path.startswith(case.name):
        path = str(config.parent / path)
    assert message.startswith(f"{path}: "), message
    assert expected["says"] in message
    if "absent" in expected:
        assert expected["absent"] not in result.stderr
    assert helpers.tree(tmp_path) == before
    assert not (tmp_path / "runs").exists()
