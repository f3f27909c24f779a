"""The fleet's load generator: every job's servers, one thread per job in the job's own network
namespace, all in one process beside the collectors.

``python -m benchmarks._fleet_load FD...``: one descriptor per job, in job order, each holding
the job's network namespace (passed open by the parent). A job's thread enters its namespace and
sends to the job's collector on ``localhost:4318``, as the job's servers do, numbered items
(``_fleet_items``) of each signal once a second, at the per-job rates of the first stdin line::

    {"rates": {"traces": 62.5, "logs": 31.25, "metrics": 14.4}}

Every job starts at its own moment within the first second (servers do not tick together).
While it sends, one line a second on stdout: ``{"t": <monotonic>, "accepted": <items>}``
(CLOCK_MONOTONIC is the machine's, so the parent compares it with its own clock). A second
stdin line (anything) stops it; the last stdout line then names the numbers each job's
collector accepted (``"<job>:<signal>" -> [[first, end), ...]``), the items refused and the
first errors.
"""

from __future__ import annotations

import http.client
import json
import random
import sys
import threading
import time
from typing import Any

from support import netns

from nemo_gym.orchestration.executors.otel import OTLP_HTTP_PORT

from ._fleet_items import add_range, numbered_body, templates
from ._otlp_load import BATCH, TIMEOUT_SECONDS, export

TICK_SECONDS = 1.0
PROGRESS_SECONDS = 1.0


class Job:
    """One job's servers: what they sent, and what its collector accepted."""

    def __init__(self, index: int, descriptor: int, rates: dict[str, float], state: State):
        self.index, self.descriptor, self.rates, self.state = index, descriptor, rates, state
        self.templates = templates(index)
        self.sent = dict.fromkeys(rates, 0)
        self.accepted: dict[str, list[list[int]]] = {signal: [] for signal in rates}

    def run(self, start: float) -> None:
        netns.enter(self.descriptor)  # this thread only: the job's loopback from now on
        connection = http.client.HTTPConnection(
            "localhost", OTLP_HTTP_PORT, timeout=TIMEOUT_SECONDS
        )
        begin = start + random.Random(self.index).random() * TICK_SECONDS
        tick = 0
        try:
            while not self.state.stop.is_set():
                tick += 1
                delay = begin + tick * TICK_SECONDS - time.monotonic()
                if delay > 0 and self.state.stop.wait(delay):
                    break
                for signal, rate in self.rates.items():
                    self._send(connection, signal, int(rate * tick * TICK_SECONDS))
        finally:
            connection.close()

    def _send(self, connection: http.client.HTTPConnection, signal: str, total: int) -> None:
        """Send the items due by now, in requests of at most ``BATCH``."""
        while self.sent[signal] < total:
            first = self.sent[signal] + 1
            count = min(total - self.sent[signal], BATCH)
            body = numbered_body(signal, self.templates[signal], first, count)
            accepted, _, error = export(connection, signal, body, count)
            self.sent[signal] += count
            whole = accepted == count  # a request with any item refused counts whole as refused
            if whole:
                add_range(self.accepted[signal], first, first + count)
            self.state.record(count if whole else 0, 0 if whole else count, error)


class State:
    """What every job's thread adds to: the accepted total, the refused, the first errors."""

    def __init__(self) -> None:
        self.stop = threading.Event()
        self._lock = threading.Lock()
        self.accepted = 0
        self.refused = 0
        self.errors: list[str] = []

    def record(self, accepted: int, refused: int, error: str | None) -> None:
        with self._lock:
            self.accepted += accepted
            self.refused += refused
            if error and len(self.errors) < 5:
                self.errors.append(error)


def main(argv: list[str]) -> int:
    descriptors = [int(arg) for arg in argv]
    state = State()
    print(json.dumps({"ready": True}), flush=True)
    rates = json.loads(sys.stdin.readline())["rates"]
    jobs = [Job(i, fd, rates, state) for i, fd in enumerate(descriptors)]
    start = time.monotonic()
    threads = [threading.Thread(target=job.run, args=(start,), daemon=True) for job in jobs]
    for thread in threads:
        thread.start()
    threading.Thread(target=lambda: _stop_on_input(state), daemon=True).start()
    while not state.stop.wait(PROGRESS_SECONDS):
        print(json.dumps({"t": time.monotonic(), "accepted": state.accepted}), flush=True)
    for thread in threads:
        thread.join()
    final: dict[str, Any] = {
        "final": True,
        "t": time.monotonic(),
        "accepted_total": state.accepted,
        "accepted": {
            f"{job.index}:{signal}": ranges
            for job in jobs
            for signal, ranges in job.accepted.items()
        },
        "refused": state.refused,
        "errors": state.errors,
    }
    print(json.dumps(final), flush=True)
    return 0


def _stop_on_input(state: State) -> None:
    sys.stdin.readline()
    state.stop.set()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
