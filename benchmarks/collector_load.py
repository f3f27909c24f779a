"""Benchmark 4: the real collector under a config rendered by the package (issue 4).

For each template line and for the default combination (``otlp_http+file``) and ``file`` alone,
the collector built by ``tools/build-otelcol`` runs under the config ``write_collector_config``
writes for the bundled example (its scrape targets served by loopback fixtures). A separate
generator process (``_otlp_load``) offers OTLP/HTTP protobuf in SDK-sized batches of 512 at a
paced rate, one signal at a time, stepping the rate up until loss or refusal appears (or the cap);
then the estimated load of a large benchmark job and ten times that, all signals at once.

A step holds when the collector accepted every request (2xx, nothing rejected), the generator
kept its pace, and every accepted item reached every destination within the drain bound:
counted at the backend (only payloads whose resources all carry the tenant attribute count) and
in the job directory's ``<signal>.jsonl`` files. The collector's CPU is read with psutil over
the sending window (cores = CPU seconds per second; the spread is over one-second slices) and
its RSS is sampled every 100 ms. Every wait is bounded and every process is stopped on the way
out.
"""

from __future__ import annotations

import os
import secrets
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
import yaml
from support import helpers
from support.e2e_job import Collector, collector_release, port_is_free
from support.e2e_services import FixtureExporter
from support.otelcol import build_collector
from support.scrape_targets import write_targets

from nemo_gym.orchestration.api import SubmitConfig
from nemo_gym.orchestration.executors.otel import (
    COLLECTOR_HEALTH_PORT,
    OTLP_GRPC_PORT,
    OTLP_HTTP_PORT,
    write_collector_config,
)
from nemo_gym.orchestration.executors.otel._render.rendering import render_unchecked

from ._json_lines import JsonLinesChild
from ._memory_cgroup import MemoryCgroup, uncached_copy
from ._otlp_sink import SIGNALS, CountingBackend, FileCounter
from ._stats import Sample

LINES = tuple(helpers.line_metadata())
COMBINATIONS = {"otlp_http+file": ["otlp_http", "file"], "file": ["file"]}
DEFAULT_COMBINATION = "otlp_http+file"
ITEM_NAMES = {"traces": "spans", "logs": "log records", "metrics": "data points"}

# Offered items per second, one signal at a time; the last is the cap.
LADDER = (12_000, 24_000, 48_000, 96_000)
QUICK_LADDER = (12_000, 48_000)
GOAL_SPANS = 12_000
# A large benchmark job's telemetry, estimated in docs/maintainers/performance.md: 100
# rollouts/s x 20 spans and 10 log records; ~6,600 scraped series every 15 s plus span metrics.
LARGE_JOB = {"traces": 2_000, "logs": 1_000, "metrics": 460}
HEADROOM = 10
CPU_GOAL_CORES = 1.0
RSS_GOAL_MIB = 256

STEP_SECONDS, QUICK_STEP_SECONDS = 4.0, 2.0
KEEP_PACE = 0.95  # a step holds only if the generator achieved this share of the offered rate
# A step holds only if its last items arrived within this long after the window: one flush
# of the file exporter (every second) and one batch timeout (200 ms), with some slack.
DRAIN_HELD_SECONDS = 2.0
DRAIN_QUIET_SECONDS = 1.5  # nothing new arrived for this long: all that will come is in
DRAIN_MAX_SECONDS = 20.0
SAMPLE_SECONDS = 0.1
MAPPED_SAMPLE_SECONDS = 1.0
BUILD_WAIT_SECONDS = 1200
PORT_WAIT_SECONDS = 60
GENERATOR_START_SECONDS = 60
MIB = 1024 * 1024


def _log(message: str) -> None:
    print(f"[collector] {message}", file=sys.stderr, flush=True)


# -- the collector binary -------------------------------------------------------------------


def collector_binary(line: str) -> Path:
    """``tools/build-otelcol LINE``'s binary, after any build of the line already running."""
    cache = Path(
        os.environ.get("NEMO_GYM_OTEL_COLLECTOR_CACHE", helpers.REPO / ".cache" / "otelcol")
    )
    deadline = time.monotonic() + BUILD_WAIT_SECONDS
    announced = False
    # tools/build-otelcol builds in .cache/otelcol/.<line>-*/ and renames it when done: never
    # start a second Go build of the same line beside one in progress.
    while any(path.is_dir() for path in cache.glob(f".{line}-*")):
        if time.monotonic() > deadline:
            raise RuntimeError(
                f"a build of the {line} collector is still running after {BUILD_WAIT_SECONDS}s"
            )
        if not announced:
            _log(f"waiting for the {line} collector build already in progress")
            announced = True
        time.sleep(5)
    binary, error = build_collector(line)
    if binary is None:
        raise RuntimeError(f"tools/build-otelcol {line} failed:\n{error}")
    return binary


# -- the load generator process ---------------------------------------------------------------


class Generator(JsonLinesChild):
    """``python -m benchmarks._otlp_load``: one JSON command in, one JSON report out."""

    def __init__(self, url: str) -> None:
        super().__init__([sys.executable, "-m", "benchmarks._otlp_load", url])
        self.receive(GENERATOR_START_SECONDS)

    def run(self, rates: dict[str, float], seconds: float) -> dict[str, Any]:
        self.send({"rates": rates, "seconds": seconds})
        # Late requests time out after 10 s each; 4 senders per signal keep the worst case bounded.
        return self.receive(seconds * 4 + 60)


# -- one collector under one rendered config ------------------------------------------------


def _wait_ports_free(ports: tuple[int, ...]) -> None:
    deadline = time.monotonic() + PORT_WAIT_SECONDS
    while True:
        busy = [port for port in ports if not port_is_free(port)]
        if not busy:
            return
        if time.monotonic() > deadline:
            raise RuntimeError(
                f"ports {busy} stayed in use for {PORT_WAIT_SECONDS}s; the templates fix them, "
                "so stop whatever holds them (another collector, the e2e tests?)"
            )
        time.sleep(1)


class Sampler:
    """The collector's CPU seconds and RSS every ``SAMPLE_SECONDS``, from a daemon thread."""

    def __init__(self, pid: int) -> None:
        self._process = psutil.Process(pid)
        self._mapped_from: dict[str, Path] = {}
        self.anon_peak = 0
        self.mapped_peaks: dict[str, int] = {}
        self.samples: list[tuple[float, float, int]] = []  # (monotonic, cpu seconds, rss)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def now(self) -> tuple[float, float, int]:
        times = self._process.cpu_times()
        memory = self._process.memory_info()
        # RSS less the file-backed pages (the binary's text, a disk queue's mapped database):
        # the collector's own heap, which only the load and the queue's in-flight data size.
        self.anon_peak = max(self.anon_peak, memory.rss - memory.shared)
        return time.monotonic(), times.user + times.system, memory.rss

    def watch_mapped(self, **paths: Path) -> None:
        """From now on, also the RSS of what the collector maps from each of ``paths`` (a
        file, or every file in a folder), peaks by name, every ``MAPPED_SAMPLE_SECONDS``:
        reading the mappings is too slow for every sample, and only the outages ask (the cost
        runs compare CPU without it). Named mappings account for the RSS beyond the anonymous
        memory: the disk queue's database and the binary's own text."""
        self.mapped_peaks = dict.fromkeys(paths, 0)  # before the sampling thread sees the names
        self._mapped_from = {name: path.resolve() for name, path in paths.items()}

    def _mapped(self) -> dict[str, int]:
        regions = self._process.memory_maps(grouped=True)
        return {
            name: sum(r.rss for r in regions if Path(r.path).is_relative_to(path))
            for name, path in self._mapped_from.items()
        }

    def _run(self) -> None:
        next_mapped = 0.0
        while not self._stop.wait(SAMPLE_SECONDS):
            try:
                self.samples.append(self.now())
                if self._mapped_from and time.monotonic() >= next_mapped:
                    for name, rss in self._mapped().items():
                        self.mapped_peaks[name] = max(self.mapped_peaks[name], rss)
                    next_mapped = time.monotonic() + MAPPED_SAMPLE_SECONDS
            except psutil.Error:
                return

    def take_peaks(self) -> dict[str, int]:
        """The anonymous and named mappings' peaks so far, which start again from zero: a
        run's phases get peaks of their own."""
        peaks = {"anonymous": self.anon_peak, **self.mapped_peaks}
        self.anon_peak = 0
        self.mapped_peaks = dict.fromkeys(self.mapped_peaks, 0)
        return peaks

    def between(self, start: float, end: float) -> list[tuple[float, float, int]]:
        return [s for s in list(self.samples) if start <= s[0] <= end]

    def peak_rss(self, start: float, end: float) -> int:
        """The highest RSS sampled between two moments (0 if none was)."""
        return max((s[2] for s in self.between(start, end)), default=0)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)


@dataclass
class Step:
    offered: dict[str, float]
    accepted: dict[str, int]
    refused: dict[str, int]
    errors: list[str]
    achieved: dict[str, float]
    delivered: dict[str, dict[str, int]]  # destination -> signal -> items
    lost_at_backend: dict[str, int]  # arrived without the tenant attribute or token
    drain_s: float
    cores: float
    cores_slices: Sample
    peak_rss: int
    problems: list[str] = field(default_factory=list)

    @property
    def held(self) -> bool:
        return not self.problems


class Rig:
    """The backend, the scrape targets, the rendered config and the collector, for one ramp."""

    def __init__(
        self,
        binary: Path,
        line: str,
        combination: str,
        root: Path,
        generator: Generator,
        otel: dict[str, Any] | None = None,
        template_dirs: list[Path] | None = None,
        unchecked: bool = False,
        memory_limit: int | None = None,
    ):
        """``otel``: keys set in the example's ``otel`` section besides the rig's own;
        ``template_dirs``: override templates to render with; ``unchecked``: render them
        without the package's checks (a layout kept only to be measured against);
        ``memory_limit``: bytes of a memory cgroup the collector runs in (``cgroup``),
        started from an uncached copy of the binary (``started_binary``)."""
        self.template_dirs, self.unchecked = template_dirs, unchecked
        self.memory_limit = memory_limit
        self.cgroup: MemoryCgroup | None = None
        self.binary, self.line, self.combination = binary, line, combination
        self.root, self.generator = root, generator
        self.otel = otel or {}
        self.token = "bench-" + secrets.token_hex(12)
        self._stack = ExitStack()

    def __enter__(self) -> Rig:
        try:
            self._start()
        except BaseException:
            self._stack.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self._stack.close()

    def _start(self) -> None:
        exporters = COMBINATIONS[self.combination]
        self.backend = None
        if "otlp_http" in exporters:
            self.backend = CountingBackend(self.token)
            self._stack.callback(self.backend.close)
        # The example's scrape targets, served on loopback: a vLLM-like exposition for both
        # model services, the DCGM and node_exporter fixtures.
        targets = {
            name: FixtureExporter(fixture)
            for name, fixture in (
                ("policy", "vllm_metrics.txt"),
                ("judge", "vllm_metrics.txt"),
                ("dcgm", "dcgm_metrics.txt"),
                ("node", "node_metrics.txt"),
            )
        }
        for target in targets.values():
            self._stack.callback(target.close)
        mapping = yaml.safe_load(helpers.EXAMPLE.read_text(encoding="utf-8"))
        mapping["services"]["policy"]["port"] = targets["policy"].port
        mapping["services"]["judge"]["port"] = targets["judge"].port
        mapping["job"]["output_path"] = str(self.root / "runs")
        mapping["otel"].update(
            {
                "endpoint": self.backend.url if self.backend else None,
                "exporters": exporters,
                "collector_version": collector_release(self.line),
                "gpu_metrics_port": targets["dcgm"].port,
                "node_metrics_port": targets["node"].port,
                **self.otel,  # a variant's keys win, the collector version too
            }
        )
        config = SubmitConfig.from_dict(mapping)
        self.config = config
        job_dir = self.root / "runs" / "gym-bench" / "aime25"
        if self.unchecked:
            # A layout the token and tenant rules refuse (the original module's, which stamps
            # the tenant attribute on the files too), rendered only to measure its cost: the
            # token is the rig's throwaway one and the job directory a temporary one.
            rendering = render_unchecked(
                config, "aime25", job_dir, template_dirs=self.template_dirs
            )
            self.config_path = job_dir / "otel" / "collector.yaml"
            self.config_path.parent.mkdir(parents=True)
            self.config_path.write_text(rendering.text, encoding="utf-8")
        else:
            self.config_path = write_collector_config(
                config, "aime25", job_dir, template_dirs=self.template_dirs
            )
        write_targets(config, "aime25", job_dir)
        self.job_dir = job_dir
        self.files = FileCounter(self.config_path.parent)
        self._stack.callback(self.files.close)
        host = self.otel.get("listen_host", "localhost")
        if host == "localhost":  # an address of its own is not shared with other collectors
            _wait_ports_free((OTLP_GRPC_PORT, OTLP_HTTP_PORT, COLLECTOR_HEALTH_PORT))
        home = self.root / "home"
        home.mkdir()
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(home),
            config.otel.token_env: self.token,
            "SLURM_JOB_ID": "4242",
        }
        prefix: tuple[str, ...] = ()
        self.started_binary = self.binary
        if self.memory_limit is not None:
            self.cgroup = MemoryCgroup.create(f"nemo-gym-otel-{self.root.name}", self.memory_limit)
            self._stack.callback(self.cgroup.remove)  # runs last, once the collector is gone
            prefix = self.cgroup.command_prefix()
            # Charged to the cgroup like everything else the collector reads: its text too.
            self.started_binary = uncached_copy(self.binary, self.root)
        collector = Collector(
            self.started_binary,
            self.config_path,
            env,
            job_dir,
            self.root / "collector.log",
            host,
            prefix,
        )
        self.collector = collector
        self._stack.callback(collector.kill)
        self._stack.callback(collector.stop)  # runs first: TERM, then the bounded wait
        collector.wait_healthy()
        self.sampler = Sampler(collector.process.pid)
        self._stack.callback(self.sampler.close)

    def _arrived(self) -> tuple[dict[str, dict[str, int]], dict[str, int]]:
        delivered = {"files": self.files.count()}
        lost: dict[str, int] = {}
        if self.backend is not None:
            delivered["backend"], lost = self.backend.counts()
        return delivered, lost

    def step(self, rates: dict[str, float], seconds: float) -> Step:
        base, base_lost = self._arrived()
        start = self.sampler.now()
        report = self.generator.run(rates, seconds)
        end = self.sampler.now()
        accepted = report["accepted"]
        drain_s = self._drain(end[0])
        arrived, arrived_lost = self._arrived()  # counted (parsed) only now, outside any timing
        delivered = {
            dest: {s: counts.get(s, 0) - base[dest].get(s, 0) for s in accepted}
            for dest, counts in arrived.items()
        }
        lost = {s: arrived_lost.get(s, 0) - base_lost.get(s, 0) for s in accepted}
        samples = [start, *self.sampler.between(start[0], end[0]), end]
        step = Step(
            offered=rates,
            accepted=accepted,
            refused=report["refused"],
            errors=report["errors"],
            achieved=report["achieved"],
            delivered=delivered,
            lost_at_backend=lost,
            drain_s=drain_s,
            cores=(end[1] - start[1]) / (end[0] - start[0]),
            cores_slices=_slices(samples),
            peak_rss=max(s[2] for s in [*samples, *self.sampler.between(end[0], time.monotonic())]),
        )
        step.problems = _problems(step)
        return step

    def _last_arrival(self) -> float:
        backend = self.backend.last_arrival if self.backend is not None else 0.0
        return max(self.files.last_arrival, backend)

    def _drain(self, window_end: float) -> float:
        """Seconds from the end of the window to the last arrival of the generator's items.

        Waits, bounded, until nothing new has reached either destination for
        DRAIN_QUIET_SECONDS (the files are flushed every second, the backend is answered at
        once); whatever has not arrived by then is lost."""
        while True:
            self.files.poll()
            now = time.monotonic()
            quiet = now - max(self._last_arrival(), window_end) > DRAIN_QUIET_SECONDS
            if quiet or now - window_end > DRAIN_MAX_SECONDS:
                return max(0.0, self._last_arrival() - window_end)
            time.sleep(0.1)


def _slices(samples: list[tuple[float, float, int]]) -> Sample:
    """Cores over consecutive one-second slices of the window."""
    values, anchor = [], samples[0]
    for sample in samples[1:]:
        if sample[0] - anchor[0] >= 1.0:
            values.append((sample[1] - anchor[1]) / (sample[0] - anchor[0]))
            anchor = sample
    if not values:
        values.append((samples[-1][1] - samples[0][1]) / max(samples[-1][0] - samples[0][0], 1e-9))
    return Sample("collector CPU", "cores", tuple(values))


def _problems(step: Step) -> list[str]:
    problems = []
    for signal, offered in step.offered.items():
        if not offered:
            continue
        name = ITEM_NAMES[signal]
        accepted = step.accepted.get(signal, 0)
        if step.refused.get(signal):
            problems.append(f"{step.refused[signal]:,} {name} refused")
        if step.achieved[signal] < KEEP_PACE * offered:
            problems.append(f"{name}: generator held back to {step.achieved[signal]:,.0f}/s")
        if step.drain_s > DRAIN_HELD_SECONDS:
            problems.append(f"fell behind: the last items arrived {step.drain_s:.1f} s late")
        for dest, counts in step.delivered.items():
            got = counts.get(signal, 0)
            if got < accepted:
                problems.append(f"{accepted - got:,} {name} lost at the {dest}")
            elif got > accepted:
                problems.append(f"{got - accepted:,} {name} duplicated at the {dest}")
        if step.lost_at_backend.get(signal):
            problems.append(
                f"{step.lost_at_backend[signal]:,} {name} reached the backend without the tenant"
            )
    if step.errors:
        problems.append("errors: " + "; ".join(step.errors[:2]))
    return problems


# -- ramps ------------------------------------------------------------------------------------


@dataclass
class Ramp:
    """One signal stepped up until loss or refusal, on one collector."""

    signal: str
    steps: list[tuple[float, Step]]
    held: float | None = None  # highest offered rate that held
    broke: float | None = None  # lowest offered rate that did not

    def step_at(self, rate: float) -> Step | None:
        return next((s for r, s in self.steps if r == rate), None)


def _ladder_rates(quick: bool, signal: str) -> tuple[int, ...]:
    ladder = QUICK_LADDER if quick else LADDER
    if signal == "traces" and GOAL_SPANS not in ladder:
        ladder = tuple(sorted({*ladder, GOAL_SPANS}))
    return ladder


def _ramp(rigs: Callable[[], AbstractContextManager[Rig]], signal: str, quick: bool) -> Ramp:
    """The ladder on one collector; the step between the last that held and the first that did
    not (full runs only) on a fresh one, since the failed step may have left a backlog."""
    seconds = QUICK_STEP_SECONDS if quick else STEP_SECONDS
    ramp = Ramp(signal, [])

    def run(rig: Rig, rate: float) -> bool:
        step = rig.step({signal: rate}, seconds)
        ramp.steps.append((rate, step))
        _log(
            f"{rig.line} {rig.combination} {ITEM_NAMES[signal]} {rate:,.0f}/s: "
            f"{'held' if step.held else '; '.join(step.problems)} "
            f"({step.cores:.2f} cores, {step.peak_rss / MIB:.0f} MiB, drain {step.drain_s:.1f}s)"
        )
        return step.held

    with rigs() as rig:
        for rate in _ladder_rates(quick, signal):
            if not run(rig, rate):
                ramp.broke = rate
                break
            ramp.held = rate
    if not quick and ramp.broke and ramp.held:
        middle = round((ramp.held + ramp.broke) / 2, -3)
        with rigs() as rig:
            if run(rig, middle):
                ramp.held = middle
            else:
                ramp.broke = middle
    return ramp


@contextmanager
def _rig(binary: Path, line: str, combination: str, generator: Generator) -> Iterator[Rig]:
    with (
        tempfile.TemporaryDirectory(prefix="nemo-gym-otel-bench-") as root,
        Rig(binary, line, combination, Path(root), generator) as rig,
    ):
        yield rig


def _configuration(
    binary: Path, line: str, combination: str, generator: Generator, quick: bool
) -> dict[str, Any]:
    result: dict[str, Any] = {
        "line": line,
        "combination": combination,
        "ramps": {},
        "large_job": {},
    }
    for signal in SIGNALS:
        result["ramps"][signal] = _ramp(
            lambda: _rig(binary, line, combination, generator), signal, quick
        )
    seconds = QUICK_STEP_SECONDS if quick else STEP_SECONDS
    with _rig(binary, line, combination, generator) as rig:
        for factor in (1, HEADROOM):
            step = rig.step({s: r * factor for s, r in LARGE_JOB.items()}, seconds)
            result["large_job"][factor] = step
            _log(
                f"{line} {combination} large job x{factor}: "
                f"{'held' if step.held else '; '.join(step.problems)} "
                f"({step.cores:.2f} cores, {step.peak_rss / MIB:.0f} MiB, drain {step.drain_s:.1f}s)"
            )
    return result


# -- report -----------------------------------------------------------------------------------


def _usage(step: Step) -> str:
    low, high = step.cores_slices.spread
    return f"{step.cores:.2f} cores (1-s IQR {low:.2f}-{high:.2f}), peak RSS {step.peak_rss / MIB:.0f} MiB"


def _rows(results: list[dict[str, Any]]) -> tuple[list[tuple[str, str]], dict[str, Any]]:
    rows: list[tuple[str, str]] = []
    goals: dict[str, Any] = {}
    for result in results:
        line, combination = result["line"], result["combination"]
        prefix = f"collector {line}, {combination}"
        for signal, ramp in result["ramps"].items():
            name = ITEM_NAMES[signal]
            if ramp.held is None:
                held = (
                    f"none held (from {ramp.broke:,.0f}/s: {'; '.join(ramp.steps[0][1].problems)})"
                )
            else:
                step = ramp.step_at(ramp.held)
                assert step is not None
                held = f"{ramp.held:,.0f}/s: {_usage(step)}"
            rows.append((f"{prefix}: {name} without loss", held))
            broke = ramp.step_at(ramp.broke) if ramp.broke else None
            rows.append(
                (
                    f"{prefix}: {name} loss, refusal or back-pressure from",
                    f"{ramp.broke:,.0f}/s: {'; '.join(broke.problems)}"
                    if broke
                    else f"none up to the highest step ({ramp.held:,.0f}/s)",
                )
            )
        if combination == DEFAULT_COMBINATION:
            step = result["ramps"]["traces"].step_at(GOAL_SPANS)
            met = bool(
                step
                and step.held
                and step.cores <= CPU_GOAL_CORES
                and step.peak_rss <= RSS_GOAL_MIB * MIB
            )
            goals[f"{line}: {GOAL_SPANS} spans/s"] = met
            rows.append(
                (
                    f"{prefix}: {GOAL_SPANS:,} spans/s (goal: no loss, <= 1 core, <= {RSS_GOAL_MIB} MiB)",
                    ("met: " if met else "NOT met: ")
                    + (_usage(step) if step else "not reached")
                    + ("" if not step or step.held else "; " + "; ".join(step.problems)),
                )
            )
        for factor, step in result["large_job"].items():
            met = step.held and step.cores <= CPU_GOAL_CORES and step.peak_rss <= RSS_GOAL_MIB * MIB
            goals[f"{line} {combination}: large job x{factor}"] = met
            rates = " + ".join(f"{r * factor:,}" for r in LARGE_JOB.values())
            rows.append(
                (
                    f"{prefix}: large job x{factor} ({rates} spans/logs/points per s)",
                    ("met: " if met else "NOT met: ")
                    + _usage(step)
                    + ("" if step.held else "; " + "; ".join(step.problems)),
                )
            )
    return rows, goals


def _jsonable_step(step: Step) -> dict[str, Any]:
    return {
        "offered": step.offered,
        "accepted": step.accepted,
        "refused": step.refused,
        "achieved": step.achieved,
        "delivered": step.delivered,
        "lost_at_backend": step.lost_at_backend,
        "drain_s": step.drain_s,
        "cores": step.cores,
        "cores_slices": step.cores_slices.as_dict(),
        "peak_rss_mib": step.peak_rss / MIB,
        "held": step.held,
        "problems": step.problems,
        "errors": step.errors,
    }


def collector_load(quick: bool) -> dict[str, Any]:
    binaries: dict[str, Path] = {}
    missing: dict[str, str] = {}
    for line in LINES:
        try:
            binaries[line] = collector_binary(line)
        except RuntimeError as exc:
            missing[line] = str(exc)
            _log(f"{line}: no collector, not measured: {exc}")
    results = []
    generator = Generator(f"http://127.0.0.1:{OTLP_HTTP_PORT}")
    try:
        for line, binary in binaries.items():
            for combination in COMBINATIONS:
                results.append(_configuration(binary, line, combination, generator, quick))
    finally:
        generator.close()
    rows, goals = _rows(results)
    rows += [
        (f"collector {line}", "NOT measured: no collector binary (see the JSON)")
        for line in missing
    ]
    return {
        "binaries": {line: str(path) for line, path in binaries.items()},
        "missing": missing,
        "step_seconds": QUICK_STEP_SECONDS if quick else STEP_SECONDS,
        "large_job": LARGE_JOB,
        "goals": goals,
        "runs": [
            {
                "line": r["line"],
                "combination": r["combination"],
                "ramps": {
                    s: {
                        "held": ramp.held,
                        "broke": ramp.broke,
                        "steps": [{"rate": rate, **_jsonable_step(st)} for rate, st in ramp.steps],
                    }
                    for s, ramp in r["ramps"].items()
                },
                "large_job": {str(f): _jsonable_step(st) for f, st in r["large_job"].items()},
            }
            for r in results
        ],
        "rows": rows,
    }
