"""Benchmark: a fleet of jobs against one backend (issue 38), simulated on one machine.

``JOBS`` (32) jobs, each with the collector the package renders for a job directory of its own
(the default rendering: files and the backend through the disk queue, ``_fleet_job.py``), each
in a network namespace of its own (``_fleet_network.py``), all sending to one backend of bounded
capacity (``_fleet_backend.py``: items per second, 429 with ``Retry-After`` beyond, 503 in an
outage). One generator process (``_fleet_load.py``) offers each job 1/``JOBS`` of the large
job's load, numbered items, so the backend counts each item's arrivals.

One fleet runs the three scenarios in turn, the load going on throughout:

- **steady**: the backend at ``CAPACITY_FACTOR`` (3) times the fleet's offered load;
- **outage**: the backend answers 503 for ``OUTAGE_SECONDS`` (10 minutes; 60 s with --quick),
  then recovers at the same capacity while the jobs go on sending; the backlog is drained once
  the backend holds every item accepted ``LAG_SECONDS`` earlier. Its lower bound is the backlog
  over the capacity the load leaves free: ``backlog / (capacity - load)``;
- **half**: the backend at half the offered load for ``HALF_SECONDS``; then the jobs stop
  sending and the backlog drains at the capacity: lower bound ``backlog / capacity``.

Then every job's step stops (TERM, the stop's drain), and the backend's count of each numbered
item is compared with what the collectors accepted: lost, twice, or arrived though refused.
Per scenario: the requests refused with 429 against those accepted, each collector's CPU
(cores) and peak RSS, and whether retries spread (each collector's first request after the
recovery; the busiest second of requests over the mean one).
"""

from __future__ import annotations

import os
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil
from support import netns

from ._fleet_backend import FleetBackend
from ._fleet_figures import (
    accepted_by,
    drained_at,
    first_after,
    peak_to_mean,
    quantiles,
    statuses,
    window_spread,
)
from ._fleet_job import FleetJob
from ._fleet_network import FleetNetwork
from ._json_lines import JsonLinesChild
from .collector_load import ITEM_NAMES, LARGE_JOB, MIB, collector_binary

JOBS = 32
LINE = "current"
OFFERED = sum(LARGE_JOB.values())  # the fleet's items per second: one large job's
CAPACITY_FACTOR = 3.0
HALF_FACTOR = 0.5
BACKEND_PORT = 4318
BACKEND_TIMEOUT_SECONDS = 10.0  # the rendered backend exporter's bound on one attempt  # in the fleet's own hub namespace, nothing else listens
DURATIONS = {
    False: {"steady": 60.0, "outage": 600.0, "half": 120.0},
    True: {"steady": 20.0, "outage": 60.0, "half": 40.0},
}
# The pipeline's own latency at this load (the batch processor's 200 ms, the queue's batch
# flush of 1 s, the files' flush): an item accepted this long ago is due at the backend.
LAG_SECONDS = 5.0
WATCH_SECONDS = 0.5
SAMPLE_SECONDS = 1.0
DRAIN_BOUND_SECONDS = 180.0  # a drain may take this much beyond 4x its lower bound
GENERATOR_SECONDS = 60.0
STOP_WORKERS = 8


def _log(message: str) -> None:
    print(f"[fleet] {message}", file=sys.stderr, flush=True)


class FleetLoad(JsonLinesChild):
    """``python -m benchmarks._fleet_load``: started with the per-job rates, read while it
    runs (``progress``), stopped for its final report."""

    def __init__(self, descriptors: list[int], rates: dict[str, float]) -> None:
        self.progress: list[tuple[float, int]] = []
        self.final: dict[str, Any] | None = None
        super().__init__(
            ["setpriv", "--pdeathsig", "KILL", "--", sys.executable, "-m", "benchmarks._fleet_load"]
            + [str(fd) for fd in descriptors],
            pass_fds=tuple(descriptors),
        )
        if not self.receive(GENERATOR_SECONDS).get("ready"):
            raise RuntimeError("the fleet's load generator did not start")
        self.send({"rates": rates})

    def take(self, record: dict[str, Any]) -> bool:
        if "accepted" in record and not record.get("final"):
            self.progress.append((record["t"], record["accepted"]))
            return True
        return False

    def stop(self) -> dict[str, Any]:
        self.send("stop")
        self.final = self.receive(GENERATOR_SECONDS)
        self.progress.append((self.final["t"], self.final["accepted_total"]))
        self.process.wait(timeout=GENERATOR_SECONDS)
        return self.final


class FleetSampler:
    """Each job's processes' CPU seconds and RSS, every ``SAMPLE_SECONDS``."""

    def __init__(self, jobs: list[FleetJob]) -> None:
        self._processes = [[psutil.Process(pid) for pid in job.pids] for job in jobs]
        self.samples: list[tuple[float, list[float], list[int]]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _take(self) -> None:
        cpu, rss = [], []
        for processes in self._processes:
            try:
                times = [p.cpu_times() for p in processes]
                cpu.append(sum(t.user + t.system for t in times))
                rss.append(sum(p.memory_info().rss for p in processes))
            except psutil.Error:
                return
        self.samples.append((time.monotonic(), cpu, rss))

    def _run(self) -> None:
        self._take()
        while not self._stop.wait(SAMPLE_SECONDS):
            self._take()

    def usage(self, start: float, end: float) -> dict[str, Any]:
        """Per collector over the window: cores (CPU seconds per second) and peak RSS."""
        inside = [s for s in list(self.samples) if start <= s[0] <= end]
        if len(inside) < 2:
            return {"cores": quantiles([]), "peak_rss_mib": quantiles([])}
        first, last = inside[0], inside[-1]
        seconds = last[0] - first[0]
        cores = [(b - a) / seconds for a, b in zip(first[1], last[1], strict=True)]
        peaks = [max(s[2][job] for s in inside) / MIB for job in range(len(first[2]))]
        return {"cores": quantiles(cores), "peak_rss_mib": quantiles(peaks)}

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)


@dataclass
class Phase:
    name: str
    start: float
    end: float = 0.0


class Fleet:
    """The running fleet: what it watches (the backend's count against the generator's) and
    the phases' windows."""

    def __init__(self, backend: FleetBackend, load: FleetLoad, sampler: FleetSampler) -> None:
        self.backend, self.load, self.sampler = backend, load, sampler
        self.delivered: list[tuple[float, int]] = []
        self.phases: dict[str, Phase] = {}

    def watch(self, seconds: float, until: Callable[[float], bool] | None = None) -> float:
        """Sample the backend's count until ``seconds`` pass or ``until(now)``; the time then."""
        end = time.monotonic() + seconds
        while True:
            now = time.monotonic()
            self.delivered.append((now, self.backend.delivered()))
            if now >= end or (until is not None and until(now)):
                return now
            time.sleep(WATCH_SECONDS)

    def drain(self, since: float, lower_bound: float, lag: float) -> float | None:
        """Watch until the backlog is drained (``drained_at``), bounded; the time, or None."""
        bound = max(4 * lower_bound, lower_bound + DRAIN_BOUND_SECONDS)
        end = self.watch(
            bound, lambda _: drained_at(self.load.progress, self.delivered[-1:], since, lag)
        )
        return end if drained_at(self.load.progress, self.delivered[-1:], since, lag) else None

    @contextmanager
    def phase(self, name: str) -> Iterator[Phase]:
        self.backend.phase = name
        phase = Phase(name, time.monotonic())
        self.phases[name] = phase
        _log(f"{name}: from {phase.start:.1f}")
        try:
            yield phase
        finally:
            phase.end = time.monotonic()

    def backlog(self, t: float) -> int:
        """Items the collectors had accepted by ``t`` that the backend's last reading lacks."""
        return max(0, accepted_by(self.load.progress, t) - self.delivered[-1][1])

    def requests(self, phase: Phase, since: float | None = None) -> dict[str, Any]:
        """The phase's requests at the backend: per status, 429s against 200s, spread."""
        events = self.backend.events_between(since or phase.start, phase.end)
        counted = statuses(events)
        times = [e.t for e in events]
        answers = [e.seconds for e in events if e.status == 200]
        return {
            "items_per_accepted_request": (
                sum(e.items for e in events) / counted[200] if counted[200] else None
            ),
            "slowest_answer_s": max(answers, default=0.0),
            "answers_over_10s": sum(1 for a in answers if a > BACKEND_TIMEOUT_SECONDS),
            "statuses": {str(k): v for k, v in sorted(counted.items())},
            "refused_429_per_accepted": counted[429] / counted[200] if counted[200] else None,
            "peak_to_mean_requests": peak_to_mean(times, since or phase.start, phase.end),
            "peak_to_mean_refusals": peak_to_mean(
                [e.t for e in events if e.status in (429, 503)], since or phase.start, phase.end
            ),
        }


def _scenarios(fleet: Fleet, jobs: int, durations: dict[str, float]) -> dict[str, Any]:
    backend, capacity = fleet.backend, OFFERED * CAPACITY_FACTOR
    results: dict[str, Any] = {}
    with fleet.phase("steady") as phase:
        fleet.watch(durations["steady"])
    results["steady"] = {"capacity": capacity, **fleet.requests(phase)}

    with fleet.phase("outage") as phase:
        backend.set_outage(True)
        fleet.watch(durations["outage"])
        backend.set_outage(False)
        recovered = fleet.watch(0)
        backlog = fleet.backlog(recovered)
        lower = backlog / (capacity - OFFERED)
        _log(f"outage over: backlog {backlog:,} items, lower bound {lower:.0f} s")
        drained = fleet.drain(recovered, lower, LAG_SECONDS)
    in_outage = statuses(backend.events_between(phase.start, recovered))
    results["outage"] = {
        "capacity": capacity,
        "outage_s": durations["outage"],
        "statuses_in_outage": {str(k): v for k, v in sorted(in_outage.items())},
        "backlog_items": backlog,
        "drain_s": drained - recovered if drained else None,
        "lower_bound_s": lower,
        "ratio": (drained - recovered) / lower if drained and lower else None,
        **fleet.requests(phase, since=recovered),
    }

    capacity = OFFERED * HALF_FACTOR
    with fleet.phase("half") as phase:
        backend.set_capacity(capacity)
        fleet.watch(durations["half"])
        final = fleet.load.stop()
        stopped = final["t"]
        backlog = fleet.backlog(stopped)
        lower = backlog / capacity
        _log(f"load stopped: backlog {backlog:,} items, lower bound {lower:.0f} s")
        drained = fleet.drain(stopped, lower, 0.0)
    window = [e for e in backend.events_between(phase.start, stopped) if e.status == 200]
    delivered_rate = sum(e.items for e in window) / (stopped - phase.start)
    results["half"] = {
        "capacity": capacity,
        "load_s": durations["half"],
        "backend_items_per_s_while_loaded": delivered_rate,
        "backlog_items": backlog,
        "drain_s": drained - stopped if drained else None,
        "lower_bound_s": lower,
        "ratio": (drained - stopped) / lower if drained and lower else None,
        **fleet.requests(phase),
    }
    # Each collector's first request after the recovery, whenever it came (a 10-minute outage
    # leaves the queue's back-off at its longest, 30 s give or take half).
    retries = first_after(backend.events_between(recovered, time.monotonic()), recovered, jobs)
    results["outage"].update(
        {
            "first_request_after_recovery_s": quantiles(retries),
            "most_first_requests_in_1s": window_spread(retries),
            "collectors_back": len(retries),
        }
    )
    for name, result in results.items():
        window_phase = fleet.phases[name]
        result["twice"] = backend.twice[name]
        result["collector"] = fleet.sampler.usage(window_phase.start, window_phase.end)
    return results


def _stop_all(jobs: list[FleetJob]) -> list[dict[str, int | None]]:
    """Every job's stop, a few at a time (each thread enters its job's namespace itself)."""
    with ThreadPoolExecutor(STOP_WORKERS) as pool:
        return list(pool.map(FleetJob.stop, jobs))


@contextmanager
def _sigterm_unwinds() -> Iterator[None]:
    """A TERM to the benchmark unwinds like Ctrl-C, so every process and namespace is let go."""

    def stop(signum: int, frame: object) -> None:
        raise SystemExit(f"signal {signum}")

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def run_fleet(jobs: int, durations: dict[str, float], root: Path, binary: Path) -> dict[str, Any]:
    """Start ``jobs`` jobs' collectors under ``root``, run the scenarios, stop them all; the
    figures and the exactness count."""
    rates = {signal: rate / jobs for signal, rate in LARGE_JOB.items()}
    with ExitStack() as stack:
        network = stack.enter_context(FleetNetwork(jobs))
        endpoint = f"http://{network.hub_address}:{BACKEND_PORT}"
        fleet_jobs = [FleetJob(i, root, binary, LINE, endpoint, network) for i in range(jobs)]
        backend = FleetBackend(
            network.hub_address,
            BACKEND_PORT,
            [job.token for job in fleet_jobs],
            OFFERED * CAPACITY_FACTOR,
        )
        stack.callback(backend.close)
        for job in fleet_jobs:
            stack.callback(job.kill)
            job.start()
        started = time.monotonic()
        for job in fleet_jobs:
            job.wait_healthy()
        _log(f"{jobs} collectors healthy in {time.monotonic() - started:.1f} s")
        sampler = FleetSampler(fleet_jobs)
        stack.callback(sampler.close)
        load = FleetLoad(network.descriptors, rates)
        stack.callback(load.close)
        fleet = Fleet(backend, load, sampler)
        results = _scenarios(fleet, jobs, durations)
        assert load.final is not None
        exits = _stop_all(fleet_jobs)
        accepted = {
            (int(key.split(":")[0]), key.split(":")[1]): ranges
            for key, ranges in load.final["accepted"].items()
        }
        exactness = backend.tally.compare(accepted)
        return {
            "jobs": jobs,
            "line": LINE,
            "offered_items_per_s": OFFERED,
            "per_job_rates": rates,
            "durations_s": durations,
            "scenarios": results,
            "accepted_items": load.final["accepted_total"],
            "refused_by_collectors": load.final["refused"],
            "generator_errors": load.final["errors"],
            "untenanted_items": backend.untenanted,
            "exactness": exactness,
            "exits": exits,
            "retried_after_timeout": [job.retried_after_timeout() for job in fleet_jobs],
        }


def _describe(result: dict[str, Any]) -> list[tuple[str, str]]:
    s = result["scenarios"]
    steady, outage, half = s["steady"], s["outage"], s["half"]

    def ratio(r: dict[str, Any]) -> str:
        if r["drain_s"] is None:
            return f"NOT drained within the bound (lower bound {r['lower_bound_s']:.0f} s)"
        verdict = "met" if r["ratio"] <= 1.3 else "NOT met"
        return (
            f"{verdict}: {r['drain_s']:.0f} s vs {r['lower_bound_s']:.0f} s = {r['ratio']:.2f}x "
            f"({r['backlog_items']:,} items)"
        )

    def refused(r: dict[str, Any]) -> str:
        share = r["refused_429_per_accepted"]
        counts = r["statuses"]
        text = f"{counts.get('429', 0):,} 429 / {counts.get('200', 0):,} 200"
        if share is None:
            return text
        return f"{text} = {100 * share:.0f} % ({r['items_per_accepted_request']:.0f} items each)"

    def usage(r: dict[str, Any]) -> str:
        c, m = r["collector"]["cores"], r["collector"]["peak_rss_mib"]
        return (
            f"{c['median']:.3f} cores median, {c['max']:.3f} max; "
            f"peak RSS {m['median']:.0f} MiB median, {m['max']:.0f} MiB max"
        )

    ex = result["exactness"]
    first = outage["first_request_after_recovery_s"]
    return [
        (
            "fleet",
            f"{result['jobs']} jobs, {result['line']} line, offered {result['offered_items_per_s']:,} "
            f"items/s in all ({' + '.join(f'{r:.1f}' for r in result['per_job_rates'].values())} "
            f"{'/'.join(ITEM_NAMES[x] for x in result['per_job_rates'])} per job per s); "
            f"capacity {steady['capacity']:,.0f} (steady, outage), {half['capacity']:,.0f} (half)",
        ),
        ("fleet: backlog drain vs lower bound (goal <= 1.3x), outage", ratio(outage)),
        ("fleet: backlog drain vs lower bound (goal <= 1.3x), half after the load", ratio(half)),
        ("fleet: 429 vs accepted after recovery (goal <= 10 %)", refused(outage)),
        ("fleet: 429 vs accepted, steady / half", f"{refused(steady)} / {refused(half)}"),
        (
            "fleet: items twice (goal 0), steady / outage / half",
            f"{steady['twice']:,} / {outage['twice']:,} / {half['twice']:,}",
        ),
        (
            "fleet: requests retried after a timeout (collector logs), whole run",
            f"{sum(result['retried_after_timeout']):,}; backend answers over "
            f"{BACKEND_TIMEOUT_SECONDS:.0f} s, steady / outage / half: "
            + " / ".join(f"{r['answers_over_10s']}" for r in (steady, outage, half))
            + f" (slowest {max(r['slowest_answer_s'] for r in (steady, outage, half)):.1f} s)",
        ),
        (
            "fleet: items lost (goal 0), whole run",
            f"{ex['lost']:,} of {result['accepted_items']:,} accepted; arrived though refused "
            f"{ex['unasked']}; refused by collectors {result['refused_by_collectors']:,}; "
            f"without tenant {result['untenanted_items']:,}",
        ),
        ("fleet: per collector, steady", usage(steady)),
        ("fleet: per collector, outage + recovery", usage(outage)),
        ("fleet: per collector, half", usage(half)),
        (
            "fleet: retries spread after recovery (first request per collector)",
            f"{outage['collectors_back']} collectors, {first['min']:.1f} / {first['median']:.1f} / "
            f"{first['max']:.1f} s (min/median/max); at most {outage['most_first_requests_in_1s']} "
            f"in one second",
        ),
        (
            "fleet: busiest second of refusals over the mean, outage / half",
            f"{outage['peak_to_mean_refusals']:.1f} / {half['peak_to_mean_refusals']:.1f}",
        ),
        (
            f"fleet: backend items/s while overloaded (capacity {half['capacity']:,.0f})",
            f"{half['backend_items_per_s_while_loaded']:,.0f}",
        ),
    ]


def fleet(quick: bool) -> dict[str, Any]:
    if not netns.can_isolate():
        reason = "making network namespaces needs root"
        _log(f"not measured: {reason}")
        return {"missing": reason, "rows": [("fleet", f"NOT measured: {reason}")]}
    binary = collector_binary(LINE)
    load_before = os.getloadavg()
    with _sigterm_unwinds(), tempfile.TemporaryDirectory(prefix="nemo-gym-otel-fleet-") as root:
        result = run_fleet(JOBS, DURATIONS[quick], Path(root), binary)
    result["load_average"] = {"before": load_before, "after": os.getloadavg()}
    result["quick"] = quick
    averages = " / ".join(
        ", ".join(f"{v:.2f}" for v in values) for values in result["load_average"].values()
    )
    result["rows"] = [
        *_describe(result),
        ("fleet: load average (1/5/15 min) before / after", averages),
    ]
    return result
