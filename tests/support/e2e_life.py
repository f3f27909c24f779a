"""The collector's life in one job, on loopback: start, the stop sequence, TERM, a requeue.

What a job's collector meets on a compute node and must survive without losing the job's data:
another process already holding the collector's default port for its own metrics (8888), a
backend that misbehaves at the moment of the stop (answers 503, refuses connections, or accepts
requests and never answers), items that arrive in the last moment before TERM, and a requeued job
that starts a second collector in the same job directory.

Each scenario renders ``<job dir>/otel/collector.yaml`` with the package and runs the real
collector on a loopback address of its own (``otel.listen_host`` 127.0.0.N), so the scenarios
run side by side in threads and never meet a collector of another test on ``localhost``.
The collector is stopped as the executor does it: the driver's processes exit, the collector
runs on for ``FINAL_SCRAPE_GRACE_SECONDS``, then TERM and at most ``SHUTDOWN_WAIT_SECONDS``
for it to exit. Every wait is bounded.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import socket
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from nemo_gym.orchestration.executors.otel import (
    FINAL_SCRAPE_GRACE_SECONDS,
    SubmitConfig,
    collector_step_script,
    write_collector_config,
)
from nemo_gym.orchestration.executors.otel._common.constants import (
    DELIVERY_REPORT_INTERVAL_SECONDS,
    DELIVERY_REPORT_MARKER,
)
from nemo_gym.orchestration.executors.otel._step.queue_place import queue_places

from .e2e_backend import OtlpBackend, RoutingProxy
from .e2e_job import (
    CLUSTER,
    PRODUCERS,
    SERVICE_NAME,
    SLURM_JOB_ID,
    TOKEN_ENV,
    Producer,
    Producers,
    Sender,
    StepCollector,
    collector_release,
    running,
    step_call,
    stop_drain,
    wait_for,
)
from .e2e_otlp import SIGNALS, read_signal

# Past the batch processor's 200ms and the file exporter's 1s flush: the late batch is on disk.
KILL_AFTER_SECONDS = 2.5
# The collector's own metrics listen here unless service.telemetry.metrics says otherwise. No
# other component of the manifests binds a port by default beyond the three the templates set
# (OTLP gRPC and HTTP, health check); ``listening_ports`` checks that on the running collector.
OWN_METRICS_DEFAULT = ("127.0.0.1", 8888)
# Sends its rounds with the others, but its last batch only in the last moment before TERM,
# after the grace: a Gym server still reporting while the collector is being stopped.
LATE_PRODUCER = Producer("gym-late-server", spans=2, logs=2)
GYM_JOB_ID = "life-job-1"
BENCHMARK = "aime25"
ROUNDS = 1
# Long enough for the exporters to pick up the data sent after the fault began: one batch
# timeout (200ms) and a queue hand-off, with a wide margin for a busy machine.
FAULT_PICKUP_SECONDS = 30
# The batch processors and the backend queue's batching flush within a second: an item the
# collector accepted has reached its exporters a second later.
EXPORTED_WITHIN_NS = 1_000_000_000
# A reading is taken every DELIVERY_REPORT_INTERVAL_SECONDS and reaches the files within the
# file exporter's 1s flush; the rest is margin for a busy machine.
READING_TIMEOUT_SECONDS = 3 * DELIVERY_REPORT_INTERVAL_SECONDS + 30
# The span-metrics connector's call counts and durations, under its default namespace.
SPAN_METRICS_CALLS = "traces.span.metrics.calls"
SPAN_METRICS_DURATION = "traces.span.metrics.duration"


@contextlib.contextmanager
def port_taken(address: tuple[str, int]) -> Iterator[None]:
    """Hold ``address`` with a listening socket for the block, unless another process holds it
    already: it is taken either way, which is all the scenarios need."""
    holder = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        holder.bind(address)
        holder.listen()
    except OSError as exc:
        holder.close()
        if exc.errno != errno.EADDRINUSE:
            raise
    try:
        yield
    finally:
        holder.close()


def someone_listens(address: tuple[str, int]) -> bool:
    """Whether a connection to ``address`` is accepted: the port is taken."""
    with contextlib.suppress(OSError), socket.create_connection(address, timeout=2):
        return True
    return False


def listening_ports(pid: int) -> set[tuple[str, int]]:
    """Every (address, port) the process listens on."""
    return {
        (c.laddr.ip, c.laddr.port)
        for c in psutil.Process(pid).net_connections(kind="inet")
        if c.status == psutil.CONN_LISTEN
    }


@dataclass(frozen=True)
class Fault:
    """How the backend misbehaves, and how to tell that every signal's exporter has met it."""

    name: str
    begin: Callable[[RoutingProxy], None]
    met: Callable[[RoutingProxy, str], bool]  # (proxy, the collector's log so far)


def _exporter_failed_on_every_signal(_: RoutingProxy, log: str) -> bool:
    """A refused connection never reaches the proxy: the exporters' own log says they met it."""
    failures = [line for line in log.splitlines() if "Exporting failed" in line]
    return all(any(f'"otelcol.signal": "{s}"' in line for line in failures) for s in SIGNALS)


FAULTS = {
    "503": Fault(
        "answers 503", RoutingProxy.start_outage, lambda p, _: all(p.refused[s] for s in SIGNALS)
    ),
    "refused": Fault(
        "refuses connections", RoutingProxy.refuse_connections, _exporter_failed_on_every_signal
    ),
    "black_hole": Fault(
        "accepts and never answers",
        RoutingProxy.become_black_hole,
        lambda p, _: all(p.held[s] for s in SIGNALS),
    ),
}


@dataclass
class Run:
    """One start of the collector: what was sent to it and how it ended."""

    sent: dict[str, dict[str, Any]] = field(default_factory=dict)  # service.name -> report
    exit_code: int = -1
    exit_seconds: float | None = None  # from TERM to exit
    drain_exit_code: int | None = None  # the stop's drain (a disk queue only)
    listening: set[tuple[str, int]] = field(default_factory=set)
    log: str = ""  # the collector's output
    files: dict[str, list[Any]] = field(default_factory=dict)  # the job's files once it exited
    sender: Sender | None = None  # the backend path's own process (a disk queue only)
    sender_listening: set[tuple[str, int]] = field(default_factory=set)


class Life:
    """A job directory, its rendered config and its backend, across starts of the collector."""

    def __init__(
        self,
        line: str,
        host: str,
        tmp_path: Path,
        binary: Path,
        token: str,
        otel: dict[str, Any] | None = None,
        template_dirs: list[Path] | None = None,
        output_path: Path | None = None,
    ) -> None:
        """``otel``: keys added to the job's ``otel`` section; ``template_dirs``: overrides;
        ``output_path``: where the job directories are (default ``tmp_path/runs``), e.g. a
        folder on another file system (``job_fs.fresh_folder``)."""
        self.line = line
        self._otel = otel or {}
        self.host = host
        self.tmp_path = tmp_path
        self.output_path = output_path or tmp_path / "runs"
        self.binary = binary
        self.token = token
        self.runs: list[Run] = []
        self.backend = OtlpBackend()
        self.proxy = RoutingProxy(self.backend, token)
        self.job_dir = self.output_path / GYM_JOB_ID / BENCHMARK
        self.config_path = write_collector_config(
            self._config(), BENCHMARK, self.job_dir, template_dirs=template_dirs
        )
        self.otel_dir = self.config_path.parent

    def file_items(self, signal: str) -> list[Any]:
        return read_signal(self.otel_dir, signal)

    def wait_for_reading(
        self, taken_after_ns: int, timeout: float = READING_TIMEOUT_SECONDS
    ) -> None:
        """Wait until the files hold a delivery-report reading (``otel.delivery_report``: the
        collector's own counters, pushed every ``DELIVERY_REPORT_INTERVAL_SECONDS``) taken at
        ``taken_after_ns`` (``time.time_ns()``) or later: ``report`` then judges by counters
        that include everything the collector handled before that moment. The step runs two
        processes (the collector and its sender), each reporting on its own schedule; ``report``
        reads each one's newest reading, so every process that reported must have read since."""

        def newest_per_process() -> dict[str, int]:
            newest: dict[str, int] = {}
            for point in self.file_items("metrics"):
                if point.resource.get(DELIVERY_REPORT_MARKER) == "collector":
                    process = point.resource.get("service.instance.id", "")
                    newest[process] = max(newest.get(process, 0), point.time_unix_nano)
            return newest

        wait_for(
            lambda: (newest := newest_per_process()) and min(newest.values()) >= taken_after_ns,
            timeout,
            "a delivery-report reading from each process in the files taken after the last item",
            interval=0.5,
        )

    def _config(self) -> SubmitConfig:
        return SubmitConfig.from_dict(
            {
                "compute": {CLUSTER: {"type": "slurm", "account": "nemo_gym_eval"}},
                "driver": {
                    "gym_install": {"repo": "https://github.com/NVIDIA-NeMo/gym", "ref": "v0.4.1"},
                    "benchmarks": {BENCHMARK: {}},
                },
                "job": {"output_path": str(self.output_path)},
                "otel": {
                    "collector_version": collector_release(self.line),
                    "endpoint": self.proxy.url,
                    "service_name": SERVICE_NAME,
                    "token_env": TOKEN_ENV,
                    "listen_host": self.host,
                    # Nothing to scrape: the scenarios are about the OTLP paths.
                    "gpu_metrics_port": None,
                    "node_metrics_port": None,
                    **self._otel,
                },
            }
        )

    def collector_env(self, home: Path) -> dict[str, str]:
        """The environment a job step gives its collector: the token, the Slurm job id, and
        ``home`` outside the job directory."""
        return {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(home),
            TOKEN_ENV: self.token,
            "SLURM_JOB_ID": SLURM_JOB_ID,
        }

    def start(
        self,
        fault: Fault | None = None,
        *,
        kill: bool = False,
        grace_seconds: float = FINAL_SCRAPE_GRACE_SECONDS,
    ) -> Run:
        """Start the collector, let the job's processes send, stop it like the executor does.

        Without ``fault``: the driver's processes exit, the collector outlives them by
        ``FINAL_SCRAPE_GRACE_SECONDS``, a late batch arrives, TERM. With ``fault``, the backend
        starts misbehaving once it holds the producers' rounds; their last batches meet it, and
        the late batch and TERM follow as soon as every signal's exporter has met it. With
        ``kill``, SIGKILL instead of TERM, once the late batch had a second to reach the disk
        queue and the files (a node's out-of-memory killer): no stop, so no stop's drain.
        ``grace_seconds``: the executor's grace, shorter for a scenario about something else.
        """
        run = Run()
        self.runs.append(run)
        outside = self.tmp_path / f"outside-job-dir-{len(self.runs)}"
        outside.mkdir()
        env = self.collector_env(outside)
        log_path = outside / "collector.log"
        collector = self.collector(env, log_path)
        run.sender = collector.sender
        with running(collector):
            collector.wait_healthy()
            driver = Producers(GYM_JOB_ID, outside, PRODUCERS, ROUNDS, self.host)
            late = Producers(GYM_JOB_ID, outside, (LATE_PRODUCER,), ROUNDS, self.host)
            with running(driver, late):
                ready = {**driver.wait_ready(), **late.wait_ready()}
                run.listening = listening_ports(collector.process.pid)
                if collector.sender:
                    run.sender_listening = listening_ports(collector.sender.process.pid)
                if fault:
                    wait_for(
                        lambda: self._backend_holds(ready), 60, "the backend to hold the rounds"
                    )
                    fault.begin(self.proxy)
                else:
                    # The worst case for span metrics: spans of new series just after a flush.
                    self._wait_for_span_metrics_flush()
                # The driver ends spans in its very last moment, then exits.
                run.sent = driver.finish()
                if fault:
                    wait_for(
                        lambda: fault.met(self.proxy, log_path.read_text(errors="replace")),
                        FAULT_PICKUP_SECONDS,
                        f"every signal's exporter to meet a backend that {fault.name}",
                    )
                else:
                    time.sleep(grace_seconds)
                # A last batch in the last moment before TERM.
                run.sent.update(late.finish())
            if kill:
                time.sleep(KILL_AFTER_SECONDS)
                collector.kill()
                run.exit_code = collector.process.returncode
            else:
                run.exit_code = collector.stop()
                run.exit_seconds = collector.exit_seconds
        if not kill:
            run.drain_exit_code = self.stop_drain(env, outside / "drain.log")
        run.log = log_path.read_text(errors="replace")
        run.files = {s: self.file_items(s) for s in SIGNALS}
        return run

    def step_script(self) -> str:
        """This job's step fragment (``collector_step_script``)."""
        return collector_step_script(self._config(), BENCHMARK, self.job_dir)

    def step_call(self, function: str) -> None:
        """Run one function of this job's step fragment, as the job step runs it."""
        step_call(self.step_script(), {**os.environ, "SLURM_JOB_ID": SLURM_JOB_ID}, function)

    def collector(self, env: dict[str, str], log_path: Path) -> StepCollector:
        """The collector started as the job step's start starts it (``e2e_job.start_step``),
        its sender first where the job has one."""
        return StepCollector(
            self.binary,
            self.config_path,
            env,
            self.job_dir,
            log_path,
            self.host,
            step=self.step_script(),
        )

    def node_local_queues(self) -> list[Path]:
        """The node-local folders the placing put the job's queue in (``queue_places``)."""
        return [place.folder for place in queue_places(self.job_dir)]

    def stop_drain(self, env: dict[str, str], log_path: Path) -> int | None:
        """The job step's stop's drain in this job directory (see ``e2e_job.stop_drain``)."""
        return stop_drain(self.binary, self.otel_dir, env, self.job_dir, log_path, self.host)

    def _wait_for_span_metrics_flush(self) -> None:
        def flushes() -> int:
            points = self.backend.items("metrics")
            return len({p.time_unix_nano for p in points if p.metric == SPAN_METRICS_CALLS})

        seen = flushes()
        wait_for(lambda: flushes() > seen, 60, "a flush of the span metrics", 0.05)

    def _backend_holds(self, reports: dict[str, dict[str, Any]]) -> bool:
        spans = {s.span_id for s in self.backend.items("traces")}
        return all({s["span_id"] for s in r["spans"]} <= spans for r in reports.values())

    def close(self) -> None:
        self.proxy.close()
        self.backend.close()
        for folder in self.node_local_queues():
            shutil.rmtree(folder, ignore_errors=True)
