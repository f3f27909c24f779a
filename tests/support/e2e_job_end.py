"""The job's end with servers that keep pushing: through the collector's TERM and the stop's drain.

A Gym server does not stop reporting when the driver ends: it pushes until its job step is torn
down, after the collector's stop. ``push_through_the_stop`` starts such servers
(``e2e_pusher.py``, the real OpenTelemetry SDK) against a job's collector (``Life``), lets them
push until the backend holds some of each server's items, TERMs the collector while they push,
runs the stop's drain as the job step does while they still push, and only then stops them.
What they report as accepted is then counted, item by item, against the files and the backend.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .e2e_job import StepCollector, _producer_env, running, wait_for
from .e2e_life import GYM_JOB_ID, Life
from .e2e_otlp import SIGNALS, frozen

PUSHER_SCRIPT = Path(__file__).with_name("e2e_pusher.py")
# Names of their own: a Slurm job's driver runs e2e_producer.py's servers beside them.
PUSHERS = ("gym-head-pusher", "gym-agent-pusher", "gym-resources-pusher")
OVERRIDE = "service.name.override"
COUNTER = "gym.pusher.ticks"
# The job's attributes (resource/job) every resource at the backend must carry.
JOB_ATTRIBUTES = ("user", "run_id", "slurm_job_id", "benchmark", "cluster")
# How long the servers push once the backend holds items of each: past the batch timeouts, so
# the stop meets a steady stream, several of the queue's 1 s batches of it on their way.
PUSH_SECONDS = 3.0
# The servers' own export deadline: their exports after the stop fail within it.
SDK_TIMEOUT_SECONDS = 2


@dataclass
class JobEnd:
    """What the servers had accepted, when, and what the destinations hold."""

    accepted: dict[str, Counter[Any]] = field(default_factory=dict)
    # (signal, key) -> seconds from TERM to the export's success (negative: before TERM)
    accepted_at: dict[tuple[str, Any], float] = field(default_factory=dict)
    exit_code: int | None = None
    drain_exit_code: int | None = None
    log: str = ""


def _key(signal_name: str, service: str, item: Any) -> Any:
    return (service, tuple(item) if isinstance(item, list) else item)


def read_reports(reports: dict[str, Path], term_time: float) -> JobEnd:
    """What each server's report says it had accepted (see ``e2e_pusher.Report``)."""
    end = JobEnd(accepted={s: Counter() for s in SIGNALS})
    for service, path in reports.items():
        for line in path.read_text(encoding="utf-8").splitlines():
            export = json.loads(line)
            for item in export["items"]:
                key = _key(export["signal"], service, item)
                end.accepted[export["signal"]][key] += 1
                end.accepted_at[(export["signal"], key)] = export["time"] - term_time
    return end


def held(items: dict[str, list[Any]]) -> dict[str, Counter[Any]]:
    """The servers' items among what a destination holds, keyed as the reports key them."""
    ours = {s: [i for i in items[s] if i.resource.get(OVERRIDE) in PUSHERS] for s in SIGNALS}
    return {
        "traces": Counter((i.resource[OVERRIDE], i.span_id) for i in ours["traces"]),
        "logs": Counter((i.resource[OVERRIDE], i.body) for i in ours["logs"]),
        "metrics": Counter(
            (i.resource[OVERRIDE], (i.metric, i.time_unix_nano, i.value))
            for i in ours["metrics"]
            if i.metric == COUNTER
        ),
    }


def count_differences(
    where: str, got: dict[str, Counter[Any]], accepted: dict[str, Counter[Any]]
) -> str:
    """What ``where`` holds other than each accepted item exactly once, per signal, in words
    (empty when nothing): items missing, items held more often than accepted, items never
    accepted."""
    problems = []
    for s in SIGNALS:
        missing, extra = accepted[s] - got[s], got[s] - accepted[s]
        repeated = sum(n for key, n in extra.items() if key in accepted[s])
        unknown = sum(n for key, n in extra.items() if key not in accepted[s])
        if missing or extra:
            problems.append(
                f"{where} {s}: {sum(missing.values())} of {sum(accepted[s].values())} accepted "
                f"missing, {repeated} held more often than accepted, {unknown} never accepted "
                f"(e.g. {list(missing or extra)[:2]})"
            )
    return "; ".join(problems)


def unattributed(items: dict[str, list[Any]]) -> Counter[tuple[str, Any]]:
    """(signal, resource) of every item lacking one of the job's attributes."""
    return Counter(
        (s, frozen({k: v for k, v in i.resource.items() if k != "Authorization"}))
        for s in SIGNALS
        for i in items[s]
        if not all(key in i.resource for key in JOB_ATTRIBUTES)
    )


class Pushers:
    """The job's servers, pushing on their own clock until stopped (see ``e2e_pusher.py``)."""

    def __init__(self, log_dir: Path, host: str) -> None:
        self.reports = {name: log_dir / f"{name}.accepted.jsonl" for name in PUSHERS}
        self.processes: dict[str, subprocess.Popen[bytes]] = {}
        for name in PUSHERS:
            env = {
                **_producer_env(GYM_JOB_ID, name, host),
                "OTEL_SERVICE_NAME": name,
                "OTEL_EXPORTER_OTLP_TIMEOUT": str(SDK_TIMEOUT_SECONDS),
            }
            with (log_dir / f"{name}.stderr").open("wb") as stderr:
                self.processes[name] = subprocess.Popen(
                    [sys.executable, str(PUSHER_SCRIPT), f"--report={self.reports[name]}"],
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stderr=stderr,
                )

    def stop(self) -> None:
        for process in self.processes.values():
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for name, process in self.processes.items():
            assert process.wait(timeout=60) == 0, f"pusher {name} exited {process.returncode}"

    def kill(self) -> None:
        for process in self.processes.values():
            if process.poll() is None:
                process.kill()
                process.wait(timeout=10)


def push_through_the_stop(life: Life) -> JobEnd:
    """One job's end on ``life``'s collector (see the module docstring)."""
    outside = life.tmp_path / "outside-job-end"
    outside.mkdir()
    env = life.collector_env(outside)
    log_path = outside / "collector.log"
    life.prepare_files()
    collector = StepCollector(life.binary, life.config_path, env, life.job_dir, log_path, life.host)
    pushers: Pushers | None = None
    with running(collector):
        collector.wait_healthy()
        pushers = Pushers(outside, life.host)
        try:
            wait_for(lambda: _backend_holds_every_pusher(life), 60, "every server's first items")
            time.sleep(PUSH_SECONDS)
            term_time = time.time()
            exit_code = collector.stop()
            drain_exit_code = life.stop_drain(env, outside / "drain.log")
            pushers.stop()
        except BaseException:
            pushers.kill()
            raise
    end = read_reports(pushers.reports, term_time)
    end.exit_code, end.drain_exit_code = exit_code, drain_exit_code
    end.log = log_path.read_text(errors="replace")
    return end


def _backend_holds_every_pusher(life: Life) -> bool:
    spans = {s.resource.get(OVERRIDE) for s in life.backend.items("traces")}
    return set(PUSHERS) <= spans
