"""A long job's footprint: the collector through a backend outage, and how fast the files grow.

Both run the default combination of each line at the large job's load (``LARGE_JOB`` of
``collector_load``: 2,000 spans, 1,000 log records and 460 data points per second), on the rig
of ``collector_load`` (the real collector, the example's scrape targets on loopback, a counting
backend behind the routing proxy's contract).

- **Outage**: a warm-up at the load, then the backend answers 503, or accepts requests and
  never answers (a black hole), for the outage (10 minutes; 90 s in quick mode) while the load
  goes on, then answers again for a recovery at the load, and a quiet wait for the retries. The
  collector's RSS is sampled every 100 ms throughout; the files and the backend are counted at
  the end. What the backend kept from the outage, divided by the load's rate, is how long an
  outage the backend path bridges without loss; and the collector's log, in bytes per hour of
  the outage (the exporters log their failed attempts at the default level, info). Then the
  same four again with the collector in a memory cgroup of 256 MiB (``_memory_cgroup.py``; where
  this machine can make one): whether it does its work within the bound a Slurm step limited in
  memory gets, and how much of the disk queue's mapped database stays resident there.
- **The job ends during the outage**: the same outage (black hole), then the job's end in it: a
  stop (TERM) or SIGKILL; then the backend comes back and ``nemo-gym-otel drain`` sends what the
  disk queue holds. Counted against what the collector accepted (the backend's counts; the
  generator reuses a pool of bodies, so item ids repeat: the e2e tests count ids), with the
  drain's time and the queue's size on disk at the end of the outage.
- **Backlog**: 10 s of the load into a black hole, then the backend back: how long until the
  backend holds everything (the issue's goal: under 30 s).
- **File growth**: the bytes appended to ``<job dir>/otel/*.jsonl`` over a window at the load,
  per item of the generator and per day; once with the delivery report off (the default) and
  once on, whose own points add to ``metrics.jsonl``; and the collector's own log, in bytes per
  hour, at the default level (info) and at debug (the level before issue 19).
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from nemo_gym.orchestration.executors.otel import (
    OTLP_HTTP_PORT,
    collector_step,
    collector_step_script,
)
from nemo_gym.orchestration.executors.otel._common.constants import QUEUE_DIR_NAME
from nemo_gym.orchestration.executors.otel._common.constants import SIGNALS as STEP_SIGNALS
from nemo_gym.orchestration.executors.otel._job_dir.delivery_report import signal_files

from ._memory_cgroup import MemoryCgroup
from ._otlp_sink import SIGNALS
from .collector_load import (
    DEFAULT_COMBINATION,
    ITEM_NAMES,
    LARGE_JOB,
    LINES,
    MIB,
    RSS_GOAL_MIB,
    Generator,
    Rig,
    Step,
    _log,
    collector_binary,
)

WARMUP_SECONDS = 10
OUTAGE_SECONDS = {True: 90, False: 600}
RECOVERY_SECONDS = 60
RETRY_SETTLE_SECONDS = 40  # the exporter's longest backoff (30 s) and an attempt's timeout
GROWTH_SECONDS = {True: 20, False: 60}
DAY_SECONDS = 86_400
GB = 1e9
# The collector listens on a loopback address of its own: the default ports on localhost are
# shared with every other collector on the machine.
HOST = "127.0.0.61"
# The four outages (two lines, two modes) run side by side (they take minutes each), each on an
# address of its own with its own load generator; RSS and counts are what they measure, not CPU.
OUTAGE_MODES = ("503", "black_hole")
OUTAGE_HOSTS = {
    ("current", "503"): "127.0.0.62",
    ("current", "black_hole"): "127.0.0.63",
    ("legacy", "503"): "127.0.0.64",
    ("legacy", "black_hole"): "127.0.0.65",
}
# The original module's layout (one pipeline per signal, the tenant attribute on everything,
# both exporters on it) as an override of the current line, against the default combination.
ORIGINAL_LAYOUT = Path(__file__).with_name("original_layout")
COST_FACTORS = (1, 10)
COST_SECONDS = {True: 10, False: 30}
COST_ROUNDS = {True: 1, False: 3}
COST_LINE = "current"
# Small rotation sizes so that a short window rotates several times (the cost is per rotation
# and per write); max_backups high enough that nothing is deleted inside the window.
GROWTH_VARIANTS: dict[str, dict[str, Any]] = {
    "default": {},
    "delivery report": {"delivery_report": True},
    "rotation 8 MB": {"file_rotation": {"max_megabytes": 8, "max_backups": 1000}},
    "queue in memory": {"backend_queue_megabytes": None},
    "debug log": {},  # rendered through GROWTH_OVERRIDES below
    "fsync": {},
    # The legacy line's templates, which collectors before v0.154.0 get: JSON lines without
    # compression. On the current binary, the same collector's bytes and CPU side by side.
    "JSON lines": {"collector_version": "0.153.0"},
}
# Variants rendered through an override of the default combination: the collector's log level
# before issue 19, and the disk queue syncing every write.
GROWTH_OVERRIDES = {
    "debug log": "{% block telemetry %}\n    logs:\n      level: debug\n    metrics:\n"
    "      level: none\n{% endblock %}\n",
    "fsync": "{% block queue_storage %}\n{{ super() }}    fsync: true\n{% endblock %}\n",
}
OVERRIDE_HEAD = """{#- nemo-gym-otel
template_version: bench-variant
requires_package: 0.1.0
-#}
{% extends "builtin/LINE/otlp_http+file.yaml.j2" %}
"""
# The job's end during the outage, then a drain (two lines x two ends, side by side).
END_HOSTS = {
    ("current", "stop"): "127.0.0.66",
    ("current", "kill"): "127.0.0.67",
    ("legacy", "stop"): "127.0.0.68",
    ("legacy", "kill"): "127.0.0.69",
}
BACKLOG_SECONDS = 10
KILL_AFTER_SECONDS = 2.5  # the last batches reach the disk queue
# The same outages with the collector in a memory cgroup of the RSS goal's size, as a Slurm step
# bounded in memory runs it, started from an uncached copy of its binary, whose text the cgroup is
# then charged for (benchmarks/_memory_cgroup.py): run after the others, side by side.
BOUNDED_HOSTS = {
    ("current", "503"): "127.0.0.74",
    ("current", "black_hole"): "127.0.0.75",
    ("legacy", "503"): "127.0.0.76",
    ("legacy", "black_hole"): "127.0.0.77",
}


@contextmanager
def _rig(
    binary: Path,
    line: str,
    generator: Generator,
    otel: dict[str, Any] | None = None,
    host: str = HOST,
    template_dirs: list[Path] | None = None,
    memory_limit: int | None = None,
    parent: Path | None = None,
) -> Iterator[Rig]:
    """A rig whose job directory is in a fresh folder of ``parent`` (default: the temporary
    directory; ``job_fs`` puts it on a network file system)."""
    with (
        tempfile.TemporaryDirectory(prefix="nemo-gym-otel-long-", dir=parent) as root,
        Rig(
            binary,
            line,
            DEFAULT_COMBINATION,
            Path(root),
            generator,
            {**(otel or {}), "listen_host": host},
            template_dirs,
            unchecked=template_dirs == [ORIGINAL_LAYOUT],
            memory_limit=memory_limit,
        ) as rig,
    ):
        yield rig


@contextmanager
def _backend_rig(
    binary: Path,
    line: str,
    host: str,
    memory_limit: int | None = None,
    otel: dict[str, Any] | None = None,
    parent: Path | None = None,
) -> Iterator[Rig]:
    """A rig with a backend, on ``host`` with a load generator of its own."""
    generator = Generator(f"http://{host}:{OTLP_HTTP_PORT}")
    with (
        contextlib.closing(generator),
        _rig(
            binary, line, generator, otel, host=host, memory_limit=memory_limit, parent=parent
        ) as rig,
    ):
        yield rig


def _watch_queue_and_binary(rig: Rig) -> None:
    """The sampler's named mappings of a disk-queue run: the queue's database files and the
    binary the collector was started from."""
    rig.sampler.watch_mapped(queue=rig.job_dir / "otel" / QUEUE_DIR_NAME, binary=rig.started_binary)


def _bound(rig: Rig) -> dict[str, Any] | None:
    """The rig's memory cgroup, if it has one: its limit, its peak charge and its OOM kills."""
    if rig.cgroup is None:
        return None
    return {
        "limit_mib": rig.cgroup.limit_bytes / MIB,
        "peak_mib": rig.cgroup.peak_bytes() / MIB,
        "oom_kills": rig.cgroup.oom_kills(),
    }


def _total(steps: list[Step], field: str) -> dict[str, int]:
    return {s: sum(getattr(step, field).get(s, 0) for step in steps) for s in SIGNALS}


def _outage(
    binary: Path, line: str, mode: str, quick: bool, memory_limit: int | None = None
) -> dict[str, Any]:
    """A backend outage at the load and the recovery after it; ``memory_limit``: in a memory
    cgroup of that many bytes."""
    outage_s = OUTAGE_SECONDS[quick]
    host = (OUTAGE_HOSTS if memory_limit is None else BOUNDED_HOSTS)[line, mode]
    with _backend_rig(binary, line, host, memory_limit) as rig:
        assert rig.backend is not None
        _watch_queue_and_binary(rig)
        warm_base = rig._arrived()
        warm = rig.step(LARGE_JOB, WARMUP_SECONDS)
        log = rig.root / "collector.log"
        log_before = log.stat().st_size
        rig.backend.set_mode(mode)
        during = rig.step(LARGE_JOB, outage_s)
        log_grown = log.stat().st_size - log_before
        queue_at_end = _queue_bytes(rig.job_dir / "otel")
        rig.backend.set_mode("up")
        after = rig.step(LARGE_JOB, RECOVERY_SECONDS)
        settle_start = time.monotonic()
        time.sleep(RETRY_SETTLE_SECONDS)
        settle_rss = rig.sampler.peak_rss(settle_start, time.monotonic())
        late, _ = rig._arrived()  # what the retries delivered after the recovery's step
        bound = _bound(rig)
        steps = [warm, during, after]
        accepted = _total(steps, "accepted")
        files = {s: sum(st.delivered["files"].get(s, 0) for st in steps) for s in SIGNALS}
        backend = {s: sum(st.delivered["backend"].get(s, 0) for st in steps) for s in SIGNALS}
        counted = {
            dest: {s: sum(st.delivered[dest].get(s, 0) for st in steps) for s in SIGNALS}
            for dest in ("files", "backend")
        }
        start, _ = warm_base
        for dest in ("files", "backend"):
            for s in SIGNALS:
                extra = late[dest].get(s, 0) - start[dest].get(s, 0) - counted[dest][s]
                (files if dest == "files" else backend)[s] += extra
    outside = {s: warm.accepted.get(s, 0) + after.accepted.get(s, 0) for s in SIGNALS}
    kept = {s: max(backend[s] - outside[s], 0) for s in SIGNALS}
    bridged = {s: kept[s] / LARGE_JOB[s] for s in SIGNALS}
    result = {
        "line": line,
        "mode": mode,
        "outage_seconds": outage_s,
        "peak_rss_mib": {
            "warm-up": warm.peak_rss / MIB,
            "outage": during.peak_rss / MIB,
            "recovery": max(after.peak_rss, settle_rss) / MIB,
        },
        "accepted": accepted,
        "files": files,
        "backend": backend,
        "lost_at_files": {s: accepted[s] - files[s] for s in SIGNALS},
        "lost_at_backend": {s: accepted[s] - backend[s] for s in SIGNALS},
        "outage_bridged_seconds": bridged,
        "cores_during_outage": during.cores,
        "peak_anonymous_mib": rig.sampler.anon_peak / MIB,
        "peak_queue_mapped_mib": rig.sampler.mapped_peaks["queue"] / MIB,
        "peak_binary_mapped_mib": rig.sampler.mapped_peaks["binary"] / MIB,
        "queue_bytes_at_end": queue_at_end,
        "log_bytes_per_hour_during_outage": log_grown / outage_s * 3600,
        "memory_cgroup": bound,
    }
    _log(
        f"{line} {mode}{'' if bound is None else f' (memory cgroup {bound})'}: "
        f"peak RSS {max(result['peak_rss_mib'].values()):.0f} MiB, "
        f"collector.log {result['log_bytes_per_hour_during_outage'] / 1e6:.2f} MB/h in the outage, "
        f"lost at files {result['lost_at_files']}, at backend {result['lost_at_backend']}, "
        f"bridged {', '.join(f'{s} {v:.0f}s' for s, v in bridged.items())}"
    )
    return result


def _queue_files(otel_dir: Path) -> dict[str, int]:
    """The disk queue's database files, name to size."""
    folder = otel_dir / QUEUE_DIR_NAME
    return {p.name: p.stat().st_size for p in sorted(folder.glob("*")) if p.is_file()}


def _queue_bytes(otel_dir: Path) -> int:
    return sum(_queue_files(otel_dir).values())


def _drain(rig: Rig, binary: Path) -> tuple[float, dict[str, Any]]:
    """``nemo-gym-otel drain`` on the rig's job directory, as a user runs it; its seconds."""
    env = {**os.environ, "OTEL_TOKEN": rig.token}
    started = time.monotonic()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "nemo_gym.orchestration.executors.otel._cli.main",
            "drain",
            str(rig.job_dir),
            "--collector",
            str(binary),
            "--format",
            "json",
        ],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    seconds = time.monotonic() - started
    if done.returncode not in (0, 4):
        raise RuntimeError(f"drain failed ({done.returncode}): {done.stderr[-2000:]}")
    return seconds, json.loads(done.stdout)


def _job_ends_in_outage(binary: Path, line: str, end: str, quick: bool) -> dict[str, Any]:
    outage_s = OUTAGE_SECONDS[quick]
    host = END_HOSTS[line, end]
    with _backend_rig(binary, line, host) as rig:
        assert rig.backend is not None
        warm = rig.step(LARGE_JOB, WARMUP_SECONDS)
        rig.backend.set_mode("black_hole")
        during = rig.step(LARGE_JOB, outage_s)
        queued = _queue_bytes(rig.job_dir / "otel")
        if end == "kill":
            time.sleep(KILL_AFTER_SECONDS)
            rig.collector.kill()
        else:
            rig.collector.stop()
        rig.backend.set_mode("up")
        drain_s, outcome = _drain(rig, binary)
        arrived, _ = rig._arrived()
        accepted = _total([warm, during], "accepted")
        files = arrived["files"]
        backend = arrived["backend"]
        peak = max(warm.peak_rss, during.peak_rss) / MIB
        anonymous = rig.sampler.anon_peak / MIB
    result = {
        "line": line,
        "end": end,
        "outage_seconds": outage_s,
        "peak_rss_mib": peak,
        "peak_anonymous_mib": anonymous,
        "queue_bytes_at_end": queued,
        "accepted": accepted,
        "files": files,
        "backend": backend,
        "backend_minus_files": {s: backend.get(s, 0) - files.get(s, 0) for s in SIGNALS},
        "drain_seconds": drain_s,
        "drain": outcome,
    }
    _log(
        f"{line} job {end} in a {outage_s}s outage, then drain: {drain_s:.0f}s, peak RSS "
        f"{peak:.0f} MiB, queue {queued / MIB:.0f} MiB, backend - files "
        f"{result['backend_minus_files']}, accepted - backend "
        f"{ {s: accepted[s] - backend.get(s, 0) for s in SIGNALS} }"
    )
    return result


def _backlog(binary: Path, line: str, parent: Path | None = None) -> dict[str, Any]:
    """10 s of the load into a black hole, then the backend back: until it holds everything."""
    host = END_HOSTS[line, "stop"]
    with _backend_rig(binary, line, host, parent=parent) as rig:
        assert rig.backend is not None
        rig.step(LARGE_JOB, WARMUP_SECONDS)
        base, _ = rig._arrived()
        rig.backend.set_mode("black_hole")
        held = rig.generator.run(LARGE_JOB, BACKLOG_SECONDS)["accepted"]
        rig.backend.set_mode("up")
        back = time.monotonic()
        want = {s: base["backend"].get(s, 0) + held[s] for s in SIGNALS}
        while time.monotonic() - back < 120:
            now, _ = rig._arrived()
            if all(now["backend"].get(s, 0) >= want[s] for s in SIGNALS):
                break
            time.sleep(0.2)
        seconds = time.monotonic() - back
        now, _ = rig._arrived()
    result = {
        "line": line,
        "backlog_seconds": BACKLOG_SECONDS,
        "held": held,
        "drained_seconds": seconds,
        "backend_minus_want": {s: now["backend"].get(s, 0) - want[s] for s in SIGNALS},
    }
    where = parent or "the temporary directory"
    _log(
        f"{line} backlog of {BACKLOG_SECONDS}s (job directory in {where}): at the backend "
        f"{seconds:.1f}s after it came back"
    )
    return result


def _sizes(otel_dir: Path) -> dict[str, int]:
    return {
        s: sum(p.stat().st_size for p in signal_files(otel_dir, s) if p.exists()) for s in SIGNALS
    }


@contextmanager
def override_dirs(line: str, variant: str) -> Iterator[list[Path] | None]:
    """The template folders that render ``variant`` of ``GROWTH_VARIANTS`` on ``line``: an
    override of the default combination for those of ``GROWTH_OVERRIDES``, else none."""
    if variant not in GROWTH_OVERRIDES:
        yield None
        return
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / line).mkdir()
        text = OVERRIDE_HEAD.replace("LINE", line) + GROWTH_OVERRIDES[variant]
        (Path(folder) / line / "otlp_http+file.yaml.j2").write_text(text)
        yield [Path(folder)]


def _growth(
    binary: Path, line: str, generator: Generator, quick: bool, variant: str
) -> dict[str, Any]:
    seconds = GROWTH_SECONDS[quick]
    with contextlib.ExitStack() as stack:
        dirs = stack.enter_context(override_dirs(line, variant))
        rig = stack.enter_context(
            _rig(binary, line, generator, GROWTH_VARIANTS[variant], template_dirs=dirs)
        )
        log = rig.root / "collector.log"
        rig.step(LARGE_JOB, 5)  # the files exist and the first scrapes are in
        before = _sizes(rig.config_path.parent)
        log_before = log.stat().st_size
        step = rig.step(LARGE_JOB, seconds)
        grown = {s: n - before[s] for s, n in _sizes(rig.config_path.parent).items()}
        log_grown = log.stat().st_size - log_before
        files = {s: len(signal_files(rig.config_path.parent, s)) for s in SIGNALS}
        step_compressed = _step_compression(rig)
    items = step.delivered["files"]
    per_second = {s: grown[s] / seconds for s in SIGNALS}
    result = {
        "line": line,
        "variant": variant,
        "seconds": seconds,
        "bytes": grown,
        "files": files,
        "items": items,
        "bytes_per_item": {s: grown[s] / items[s] if items.get(s) else None for s in SIGNALS},
        "gb_per_day": {s: per_second[s] * DAY_SECONDS / GB for s in SIGNALS},
        "total_gb_per_day": sum(per_second.values()) * DAY_SECONDS / GB,
        "cores": step.cores,
        "peak_rss_mib": step.peak_rss / MIB,
        "held": step.held,
        "log_bytes_per_hour": log_grown / seconds * 3600,
    }
    if step_compressed:
        plain, packed, cpu = step_compressed
        ratio = {s: packed[s] / plain[s] if plain.get(s) else None for s in SIGNALS}
        result["step_compression"] = {
            "finished_bytes": plain,
            "compressed_bytes": packed,
            "ratio": ratio,
            "cpu_seconds": cpu,
            "cores": cpu / seconds,
            # A day of the rotation's finished files once the step compressed them (the live
            # file, at most max_megabytes a signal, aside).
            "total_gb_per_day": sum(
                result["gb_per_day"][s] * (ratio[s] if ratio[s] is not None else 1) for s in SIGNALS
            ),
        }
        _log(f"{line} files ({variant}), the step's compression: {result['step_compression']}")
    _log(
        f"{line} files ({variant}): {result['total_gb_per_day']:.1f} GB/day, collector.log "
        f"{result['log_bytes_per_hour'] / 1e6:.1f} MB/h, "
        f"{step.cores:.3f} cores, files {files}, bytes per item "
        + ", ".join(f"{s} {v:.0f}" for s, v in result["bytes_per_item"].items() if v)
    )
    return result


def _step_compression(rig: Rig) -> tuple[dict[str, int], dict[str, int], float] | None:
    """Where the job step compresses the rotation's finished files (the legacy line): its own
    pass over them, run once: their bytes before and after, and the CPU seconds it took."""
    step = collector_step(rig.config, "aime25", rig.job_dir)
    if not step.finished_files:
        return None
    finished = {
        s: sorted(map(Path, glob.glob(pattern)))
        for s, pattern in zip(STEP_SIGNALS, step.finished_files, strict=True)
    }
    if not any(finished.values()):
        return None
    plain = {s: sum(p.stat().st_size for p in paths) for s, paths in finished.items()}
    fragment = collector_step_script(rig.config, "aime25", rig.job_dir)
    before = os.times()
    subprocess.run(
        ["bash", "-c", f"{fragment}\n_otel_collector_compress_finished"], check=True, timeout=600
    )
    after = os.times()
    cpu = (after.children_user - before.children_user) + (
        after.children_system - before.children_system
    )
    packed = {
        s: sum(Path(f"{p}.zst").stat().st_size for p in paths) for s, paths in finished.items()
    }
    return plain, packed, cpu


def _bounded_outages(
    binaries: dict[str, Path], quick: bool
) -> tuple[list[dict[str, Any]], str | None]:
    """The outages with the collector in a memory cgroup of the RSS goal's size, side by side;
    none, and why, where this machine cannot make one."""
    limit = RSS_GOAL_MIB * MIB
    try:
        MemoryCgroup.create("nemo-gym-otel-probe", limit).remove()
    except RuntimeError as error:
        _log(f"outages in a memory cgroup not measured: {error}")
        return [], str(error)
    with ThreadPoolExecutor(len(BOUNDED_HOSTS)) as pool:
        futures = [
            pool.submit(_outage, binaries[line], line, mode, quick, limit)
            for line, mode in BOUNDED_HOSTS
        ]
        return [future.result() for future in futures], None


def _rows(
    outages: list[dict[str, Any]],
    growth: list[dict[str, Any]],
    ends: list[dict[str, Any]],
    backlogs: list[dict[str, Any]],
) -> list[tuple[str, str]]:
    rows = []
    for e in ends:
        missing = {s: e["accepted"][s] - e["backend"].get(s, 0) for s in SIGNALS}
        rows.append(
            (
                f"job {e['end']} in a {e['outage_seconds']} s outage, then drain, {e['line']}",
                f"drain {e['drain_seconds']:.0f} s, peak RSS {e['peak_rss_mib']:.0f} MiB "
                f"(anonymous {e['peak_anonymous_mib']:.0f} MiB), queue "
                f"{e['queue_bytes_at_end'] / MIB:.0f} MiB on disk; accepted - backend {missing}, "
                f"backend - files {e['backend_minus_files']}",
            )
        )
    for b in backlogs:
        rows.append(
            (
                f"backlog of {b['backlog_seconds']} s at the load, {b['line']} (goal < 30 s)",
                f"at the backend {b['drained_seconds']:.1f} s after it came back; "
                f"backend - held {b['backend_minus_want']}",
            )
        )
    for o in outages:
        peak = max(o["peak_rss_mib"].values())
        lost_files = sum(o["lost_at_files"].values())
        lost = ", ".join(f"{o['lost_at_backend'][s]:,} {ITEM_NAMES[s]}" for s in SIGNALS)
        bridged = ", ".join(
            f"{ITEM_NAMES[s]} {o['outage_bridged_seconds'][s]:.0f} s" for s in SIGNALS
        )
        bound = o["memory_cgroup"]
        where = "" if bound is None else f" in a {bound['limit_mib']:.0f} MiB memory cgroup"
        charged = (
            ""
            if bound is None
            else f"cgroup peak {bound['peak_mib']:.0f} MiB, OOM kills {bound['oom_kills']}; "
        )
        rows.append(
            (
                f"outage {o['outage_seconds']} s ({o['mode']}){where}, {o['line']}",
                f"{charged}peak RSS {peak:.0f} MiB (goal < {RSS_GOAL_MIB}; anonymous "
                f"{o['peak_anonymous_mib']:.0f} MiB, the queue's mapped pages "
                f"{o['peak_queue_mapped_mib']:.0f} MiB, the binary's "
                f"{o['peak_binary_mapped_mib']:.0f} MiB), queue {o['queue_bytes_at_end'] / MIB:.0f} MiB "
                f"on disk, files lost {lost_files}, "
                f"backend lost {lost}; bridged {bridged}; collector.log "
                f"{o['log_bytes_per_hour_during_outage'] / 1e6:.2f} MB/h in the outage",
            )
        )
    for g in growth:
        per_item = ", ".join(
            f"{ITEM_NAMES[s]} {g['bytes_per_item'][s]:.0f} B"
            for s in SIGNALS
            if g["bytes_per_item"][s]
        )
        rows.append(
            (
                f"file growth, {g['line']}, {g['variant']}",
                f"{g['total_gb_per_day']:.1f} GB/day at the large job's load, "
                f"collector {g['cores']:.3f} cores; per item {per_item}; collector.log "
                f"{g['log_bytes_per_hour'] / 1e6:.1f} MB/h",
            )
        )
        if "step_compression" in g:
            c = g["step_compression"]
            rows.append(
                (
                    f"file growth, {g['line']}, {g['variant']}, compressed by the job step",
                    f"{c['total_gb_per_day']:.1f} GB/day (finished files "
                    f"{sum(c['finished_bytes'].values()) / 1e6:.0f} MB -> "
                    f"{sum(c['compressed_bytes'].values()) / 1e6:.1f} MB), zstd "
                    f"{c['cores']:.3f} cores",
                )
            )
    return rows


def _cost(
    binary: Path,
    generator: Generator,
    quick: bool,
    variants: dict[str, tuple[dict[str, Any], list[Path] | None]],
    host: str = HOST,
    parent: Path | None = None,
    helper_cpu: Callable[[], float] | None = None,
) -> dict[str, Any]:
    """CPU and RSS of two variants (otel keys, override folders) at 1x and 10x the large job's
    load, interleaved; the ratios are the first's over the second's. The job directories are
    made in ``parent`` (see :func:`_rig`); ``helper_cpu`` gives the CPU seconds so far of the
    processes that do the collector's file work there besides it (a network file system's
    client), whose cores over each step are reported as ``helper_cores``."""
    first, second = variants
    result: dict[str, Any] = {}
    for factor in COST_FACTORS:
        rates = {s: rate * factor for s, rate in LARGE_JOB.items()}
        runs: dict[str, list[Step]] = {name: [] for name in variants}
        helper: dict[str, list[float]] = {name: [] for name in variants}
        for _ in range(COST_ROUNDS[quick]):
            for name, (otel, dirs) in variants.items():
                with _rig(
                    binary, COST_LINE, generator, otel, host=host, template_dirs=dirs, parent=parent
                ) as rig:
                    rig.step(rates, 3)  # warm-up: first scrapes, connections
                    before, started = helper_cpu() if helper_cpu else 0.0, time.monotonic()
                    runs[name].append(rig.step(rates, COST_SECONDS[quick]))
                    if helper_cpu:
                        spent = helper_cpu() - before
                        helper[name].append(spent / (time.monotonic() - started))
        cores = {k: statistics.median(st.cores for st in v) for k, v in runs.items()}
        rss = {k: statistics.median(st.peak_rss / MIB for st in v) for k, v in runs.items()}
        result[f"{factor}x"] = {
            "cores": cores,
            "peak_rss_mib": rss,
            "cpu_ratio": cores[first] / cores[second],
            "rss_ratio": rss[first] / rss[second],
            "held": {k: all(st.held for st in v) for k, v in runs.items()},
            "problems": {k: [p for st in v for p in st.problems] for k, v in runs.items()},
        }
        if helper_cpu:
            result[f"{factor}x"]["helper_cores"] = {
                k: statistics.median(v) for k, v in helper.items()
            }
        _log(f"{first} vs {second} {factor}x: {result[f'{factor}x']}")
    return result


# The default combination against the original module's layout (its queue in memory, as it was).
DESIGN_VARIANTS = {
    "design": ({}, None),
    "original": ({"backend_queue_megabytes": None}, [ORIGINAL_LAYOUT]),
}
# The disk queue against the queue in memory, the rest of the default combination the same.
QUEUE_VARIANTS = {
    "disk queue": ({}, None),
    "memory queue": ({"backend_queue_megabytes": None}, None),
}


def long_jobs(quick: bool) -> dict[str, Any]:
    binaries = {line: collector_binary(line) for line in LINES}
    growth = []
    generator = Generator(f"http://{HOST}:{OTLP_HTTP_PORT}")
    try:
        for line, binary in binaries.items():
            for variant in GROWTH_VARIANTS:
                growth.append(_growth(binary, line, generator, quick, variant))
        cost = _cost(binaries[COST_LINE], generator, quick, DESIGN_VARIANTS)
        queue_cost = _cost(binaries[COST_LINE], generator, quick, QUEUE_VARIANTS)
    finally:
        generator.close()
    backlogs = [_backlog(binary, line) for line, binary in binaries.items()]
    with ThreadPoolExecutor(len(OUTAGE_HOSTS) + len(END_HOSTS)) as pool:
        futures = [
            pool.submit(_outage, binaries[line], line, mode, quick) for line, mode in OUTAGE_HOSTS
        ]
        end_futures = [
            pool.submit(_job_ends_in_outage, binaries[line], line, end, quick)
            for line, end in END_HOSTS
        ]
        outages = [future.result() for future in futures]
        ends = [future.result() for future in end_futures]
    bounded, unbounded_why = _bounded_outages(binaries, quick)
    rows = _rows([*outages, *bounded], growth, ends, backlogs) + [
        (
            f"{first} vs {second}, {factor} ({COST_LINE}; goal <= 1.2)",
            f"CPU {c['cores'][first]:.3f} vs {c['cores'][second]:.3f} cores "
            f"(ratio {c['cpu_ratio']:.2f}), RSS {c['peak_rss_mib'][first]:.0f} vs "
            f"{c['peak_rss_mib'][second]:.0f} MiB (ratio {c['rss_ratio']:.2f})",
        )
        for (first, second), measured in (
            (tuple(DESIGN_VARIANTS), cost),
            (tuple(QUEUE_VARIANTS), queue_cost),
        )
        for factor, c in measured.items()
    ]
    return {
        "outages": outages,
        "outages_in_a_memory_cgroup": bounded or unbounded_why,
        "job_ends_in_outage": ends,
        "backlogs": backlogs,
        "growth": growth,
        "design_cost": cost,
        "queue_cost": queue_cost,
        "rows": rows,
    }
