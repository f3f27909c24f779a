"""Outages against the disk queue (issue 19), on the real collector of each line, in seconds.

Each scenario is one job directory and backend on a loopback address of its own
(``support/e2e_life.py``): the backend starts answering 503 while the job's last batches are on
their way, and the job ends during the outage. Then ``nemo-gym-otel drain`` runs with the
backend back:

- ``stopped``: the job's stop (TERM, then the stop's drain, which meets the outage too) leaves
  the refused items on disk; the drain sends them, a second drain sends nothing;
- ``killed``: SIGKILL instead of the stop, with the last batch already on disk; the drain sends
  everything that reached the disk queue.

Every item reaches the backend exactly as often as it was sent (the spans' ids are unique), the
token is in no file of the job directory (the queue's files included), and ``drain.jsonl``
records each drain. The long versions (10-minute outages at the large job's load) are in
``python -m benchmarks --only long_jobs``.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import pytest
from support import helpers
from support.e2e_job import TOKEN_ENV
from support.e2e_life import FAULTS, Life
from support.e2e_otlp import SIGNALS
from support.e2e_tally import assert_holds_exactly, at_backend, found, in_files, sent
from support.otelcol import collector_binary

pytestmark = pytest.mark.collector

LINES = tuple(helpers.line_metadata())
SCENARIOS = ("stopped", "killed")


@pytest.fixture(scope="module", params=LINES)
def outages(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Future[Life]]]:
    line = request.param
    binary = collector_binary(line)
    folders = {name: tmp_path_factory.mktemp(f"outage-{line}-{name}") for name in SCENARIOS}
    started: list[Life] = []

    def live(index: int, name: str) -> Life:
        host = f"127.0.0.{100 + 10 * LINES.index(line) + index}"
        life = Life(line, host, folders[name], binary, secrets.token_urlsafe(48))
        started.append(life)
        life.start(FAULTS["503"], kill=name == "killed")
        return life

    with ThreadPoolExecutor(max_workers=len(SCENARIOS)) as pool:
        futures = {name: pool.submit(live, i, name) for i, name in enumerate(SCENARIOS)}
        for future in futures.values():
            future.exception()
    yield futures
    for life in started:
        life.close()


def drain(life: Life) -> tuple[int, dict[str, Any]]:
    result = helpers.run_cli(
        "drain",
        life.job_dir,
        "--collector",
        life.binary,
        "--format",
        "json",
        "--timeout",
        "120",
        cwd=life.tmp_path,
        env=helpers.cli_env(**{TOKEN_ENV: life.token}),
    )
    assert result.returncode in (0, 4), result.stderr
    return result.returncode, json.loads(result.stdout)


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_drain_sends_what_the_outage_left_exactly_once(
    outages: dict[str, Future[Life]], scenario: str
) -> None:
    life = outages[scenario].result()
    before = found(at_backend(life))
    want = sent(life.runs)
    assert any(want[s] - before[s] for s in SIGNALS), "the outage cost the backend nothing"
    assert any((life.otel_dir / "queue").iterdir()), "no queue files in the job directory"
    life.proxy.end_outage()

    status, outcome = drain(life)

    assert status == 0 and outcome["empty"], outcome
    assert sum(outcome["sent"].values()) > 0, outcome
    files = found(in_files(life))
    if scenario == "stopped":
        assert_holds_exactly(files, want, "files")
    # What the files hold reached the disk queue too: the backend holds exactly that.
    assert_holds_exactly(found(at_backend(life)), files, "backend after the drain")
    again, second = drain(life)
    assert again == 0 and second["empty"] and sum(second["sent"].values()) == 0, second
    records = (life.otel_dir / "drain.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(r)["empty"] for r in records] == [True, True]
    token = life.token.encode()
    leaks = [p.name for p in life.job_dir.rglob("*") if p.is_file() and token in p.read_bytes()]
    assert not leaks, f"the token is written in {leaks}"
