"""A backend's Retry-After, honoured end to end on the real collector of each line (issue 38).

One job directory with the default rendering (the disk queue), its collector and sender started
as the job step starts them (``support/e2e_job.start_collector``), a backend that pushes back:

- 429 with ``Retry-After: 3`` for a few seconds: no request reaches the backend within the delay
  after a request it pushed back (1 s of slack for a request already on its way), delivery
  resumes after it, and every item arrives exactly once;
- 503 with ``Retry-After: 30`` and the job's stop during the delay: the stop kills the sender,
  which holds the request, within its bound, and the collector's TERM is not held by the delay;
  the files hold everything accepted, and no request reached the backend inside the delay;
- the stop's drain against 503 with ``Retry-After: 30``: nothing reaches the backend inside the
  delay, and its TERM, inside the delay, ends within the drain's hop bound;
- the stop's drain against 429 with ``Retry-After: 3``: the same timing, and what the stop left
  queued arrives exactly once.
"""

from __future__ import annotations

import secrets
import time
from pathlib import Path

import pytest
from support import helpers
from support.e2e_job import running, wait_for
from support.e2e_life import Life
from support.e2e_otlp import read_signal
from support.e2e_push_back import (
    TIMER_SLACK,
    arrival_times,
    bodies_of,
    inside_delays,
    post_logs,
    taken,
)
from support.otelcol import collector_binary

from nemo_gym.orchestration.executors.otel._common.constants import (
    DRAIN_HOP_TIMEOUT_SECONDS,
    DRAIN_SECONDS,
    SENDER_STOP_SECONDS,
)

pytestmark = pytest.mark.collector

LINES = tuple(helpers.line_metadata())
RETRY_AFTER = 3
LONG_RETRY_AFTER = 30


@pytest.mark.parametrize("line", LINES)
def test_retry_after_is_honoured_by_the_job_and_by_the_drain(line: str, tmp_path: Path) -> None:
    host = f"127.0.0.{200 + LINES.index(line)}"
    life = Life(line, host, tmp_path, collector_binary(line), secrets.token_urlsafe(48))
    outside = tmp_path / "outside-job-dir"
    outside.mkdir()
    env = life.collector_env(outside)
    proxy = life.proxy
    try:
        collector = life.collector(env, outside / "collector.log")  # as the job step starts it
        sender = collector.sender
        assert sender is not None, "the default rendering runs the backend path as the sender"
        with running(collector):
            collector.wait_healthy()
            # 429, Retry-After: 3, for 7 s: the request waits, is refused again, then taken.
            began = proxy.push_back(429, RETRY_AFTER, 7)
            first = post_logs(host, "first")
            wait_for(
                lambda: first <= set(taken(proxy.arrivals.get("logs", []))), 40, "the first batch"
            )
            arrivals = list(proxy.arrivals["logs"])
            timeline = arrival_times(arrivals, began)
            assert sum(1 for a in arrivals if a.pushed_back) >= 2, timeline
            assert not inside_delays(arrivals, RETRY_AFTER), timeline
            assert arrivals[-1].at - began >= 7 - TIMER_SLACK, timeline  # resumed after it
            print(f"{line} job, 429 Retry-After {RETRY_AFTER} for 7s: {timeline}")

            # 503, Retry-After: 30, and the stop in the middle of the delay.
            seen = len(proxy.arrivals["logs"])
            began = proxy.push_back(503, LONG_RETRY_AFTER, 600)
            second = post_logs(host, "second")
            wait_for(
                lambda: any(a.pushed_back for a in proxy.arrivals["logs"][seen:]),
                20,
                "the second batch to be pushed back",
            )
            time.sleep(2)  # well inside the delay
            termed = time.monotonic()
            collector_status = collector.stop()  # the sender first, as the step's stop
            stop_seconds = time.monotonic() - termed
            arrivals = list(proxy.arrivals["logs"][seen:])
            timeline = arrival_times(arrivals, began)
            print(
                f"{line} job, 503 Retry-After {LONG_RETRY_AFTER}, stop 2s into it: sender "
                f"killed={sender.killed} after {sender.exit_seconds:.2f}s, collector exited "
                f"{collector_status} after {collector.exit_seconds:.2f}s; {timeline}"
            )
            assert sender.killed, "the sender held the request through the delay"
            assert sender.exit_seconds is not None
            assert sender.exit_seconds < SENDER_STOP_SECONDS + 1
            assert collector.exit_seconds is not None and collector.exit_seconds < 10
            assert stop_seconds < SENDER_STOP_SECONDS + 10
            assert not inside_delays(arrivals, LONG_RETRY_AFTER), timeline
        files = bodies_of(read_signal(life.otel_dir, "logs"))
        assert {b: files[b] for b in first | second} == dict.fromkeys(first | second, 1)

        # The stop's drain against 503 with Retry-After: 30: it runs its bound, its TERM comes
        # inside the delay and ends within the hop's bound, and nothing reaches the backend.
        seen = len(proxy.arrivals["logs"])
        began = proxy.push_back(503, LONG_RETRY_AFTER, 600)
        assert life.stop_drain(env, outside / "drain-held.log") == 0
        drain_seconds = time.monotonic() - began
        arrivals = list(proxy.arrivals["logs"][seen:])
        timeline = arrival_times(arrivals, began)
        print(f"{line} drain, 503 Retry-After {LONG_RETRY_AFTER}: {drain_seconds:.2f}s; {timeline}")
        assert any(a.pushed_back for a in arrivals), timeline
        assert not inside_delays(arrivals, LONG_RETRY_AFTER), timeline
        assert drain_seconds < DRAIN_SECONDS + DRAIN_HOP_TIMEOUT_SECONDS + 5

        # The stop's drain, against 429 with Retry-After: 3 for 2.5 s.
        seen = len(proxy.arrivals["logs"])
        began = proxy.push_back(429, RETRY_AFTER, 2.5)
        assert life.stop_drain(env, outside / "drain.log") == 0
        arrivals = list(proxy.arrivals["logs"][seen:])
        timeline = arrival_times(arrivals, began)
        print(f"{line} drain, 429 Retry-After {RETRY_AFTER} for 2.5s: {timeline}")
        assert any(a.pushed_back for a in arrivals), timeline
        assert not inside_delays(arrivals, RETRY_AFTER), timeline
        backend = bodies_of(life.backend.items("logs"))
        assert {b: backend[b] for b in first | second} == dict.fromkeys(first | second, 1)
    finally:
        life.close()
