"""``nemo-gym-otel drain`` honours a backend's Retry-After longer than the stop's drain's hop
bound (issue 38), on the real collector of each line.

One job directory with the default rendering (the disk queue), its collector and sender started
as the job step starts them: an outage (503, no Retry-After) while a batch of log records is on
its way, then the job's stop, which leaves the batch in the disk queue (the stop's drain, which
would meet the same outage, is left out: it would leave the same). Then the real CLI, twice:

- against 429 with ``Retry-After: 60`` and ``--timeout``: the run ends within the timeout and
  the sender's stop bound, exits 4, and nothing reaches the backend inside the delay;
- against 503 with ``Retry-After`` longer than ``DRAIN_HOP_TIMEOUT_SECONDS``, answered once: no
  request reaches the backend inside the delay (1 s of slack for one already on its way), the
  next one after it is taken, and the drain ends with the queue empty.

The backend then holds every record exactly once (by its body, unique), with the job's
attributes and the tenant; the files held each once already.
"""

from __future__ import annotations

import json
import secrets
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from support import helpers
from support.e2e_job import (
    CLUSTER,
    SERVICE_NAME,
    SLURM_JOB_ID,
    TOKEN_ENV,
    running,
    wait_for,
)
from support.e2e_life import BENCHMARK, GYM_JOB_ID, Life
from support.e2e_otlp import TENANT_ATTRIBUTE
from support.e2e_push_back import (
    TIMER_SLACK,
    arrival_times,
    bodies_of,
    inside_delays,
    post_logs,
)
from support.otelcol import collector_binary

from nemo_gym.orchestration.executors.otel._common.constants import (
    DRAIN_HOP_TIMEOUT_SECONDS,
    SENDER_STOP_SECONDS,
)

pytestmark = pytest.mark.collector

LINES = tuple(helpers.line_metadata())
# Past the stop's drain's hop bound, which cut the wait short (the queue asked again 15 s plus
# its back-off after the push-back), and short enough for a test.
RETRY_AFTER = DRAIN_HOP_TIMEOUT_SECONDS + 5
HELD_RETRY_AFTER = 60
TIMEOUT_SECONDS = 4
# The CLI's start (Python, then the sender and the queue's collector: 1.4 s measured) and the
# queue's TERM, with a margin for a busy machine. A TERM that waited for the hop's request (the
# one process before, its hop bound 15 s) took 16.9 s in all.
START_AND_END_SECONDS = 5


def _drain(life: Life, *timeout: str) -> tuple[int, dict[str, Any], float]:
    started = time.monotonic()
    result = helpers.run_cli(
        *("drain", life.job_dir, "--collector", life.binary, "--format", "json", *timeout),
        cwd=life.tmp_path,
        env=helpers.cli_env(**{TOKEN_ENV: life.token}),
    )
    assert result.returncode in (0, 4), result.stderr
    return result.returncode, json.loads(result.stdout), time.monotonic() - started


def _at_backend(life: Life, bodies: set[str]) -> Counter[str]:
    """How often the backend holds each of ``bodies`` (those it holds)."""
    return bodies_of([r for r in life.backend.items("logs") if r.body in bodies])


@pytest.mark.parametrize("line", LINES)
def test_the_cli_drain_waits_out_a_long_retry_after(line: str, tmp_path: Path) -> None:
    host = f"127.0.0.{210 + LINES.index(line)}"
    life = Life(line, host, tmp_path, collector_binary(line), secrets.token_urlsafe(48))
    outside = tmp_path / "outside-job-dir"
    outside.mkdir()
    proxy = life.proxy
    try:
        collector = life.collector(life.collector_env(outside), outside / "collector.log")
        with running(collector):
            collector.wait_healthy()
            proxy.start_outage()
            sent = post_logs(host, "queued", records=20)
            wait_for(lambda: proxy.refused["logs"] > 0, 30, "the outage to refuse the batch")
            collector.stop()  # the sender first, killed holding the batch, as the step's stop
        files = bodies_of(life.file_items("logs"))
        assert {b: files[b] for b in sent} == dict.fromkeys(sent, 1)
        assert not _at_backend(life, sent), "the outage let the batch through"
        proxy.end_outage()

        # --timeout inside a 60 s delay: the run ends, what the sender held stays queued.
        seen = len(proxy.arrivals["logs"])
        began = proxy.push_back(429, HELD_RETRY_AFTER, 600)
        status, outcome, seconds = _drain(life, "--timeout", str(TIMEOUT_SECONDS))
        arrivals = proxy.arrivals["logs"][seen:]
        times = arrival_times(arrivals, began)
        print(
            f"{line} drain --timeout {TIMEOUT_SECONDS}, 429 Retry-After 60: {seconds:.2f}s; {times}"
        )
        assert status == 4 and not outcome["empty"], outcome
        assert seconds < TIMEOUT_SECONDS + SENDER_STOP_SECONDS + START_AND_END_SECONDS, seconds
        assert any(a.pushed_back for a in arrivals), times
        assert not inside_delays(arrivals, HELD_RETRY_AFTER), times
        assert not _at_backend(life, sent), times

        # A delay past the stop's drain's hop bound, answered once: waited out, then delivered.
        seen = len(proxy.arrivals["logs"])
        began = proxy.push_back(503, RETRY_AFTER, 600, requests=1)
        status, outcome, seconds = _drain(life, "--timeout", "120")
        arrivals = proxy.arrivals["logs"][seen:]
        times = arrival_times(arrivals, began)
        print(f"{line} drain, 503 Retry-After {RETRY_AFTER} once: {seconds:.2f}s; {times}")
        assert status == 0 and outcome["empty"], outcome
        assert arrivals and arrivals[0].pushed_back, times
        assert not inside_delays(arrivals, RETRY_AFTER), times
        assert arrivals[-1].at - arrivals[0].at >= RETRY_AFTER - TIMER_SLACK, times

        assert _at_backend(life, sent) == dict.fromkeys(sent, 1)
        job = {
            "service.name": SERVICE_NAME,
            "run_id": GYM_JOB_ID,
            "benchmark": BENCHMARK,
            "slurm_job_id": SLURM_JOB_ID,
            "cluster": CLUSTER,
            TENANT_ATTRIBUTE: life.token,
        }
        for record in life.backend.items("logs"):
            assert {k: record.resource.get(k) for k in job} == job, record.resource
        records = (life.otel_dir / "drain.jsonl").read_text(encoding="utf-8").splitlines()
        assert [json.loads(r)["empty"] for r in records] == [False, True]
    finally:
        life.close()
