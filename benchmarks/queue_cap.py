"""The backend's disk queue filled to its cap (``otel.backend_queue_megabytes``, 4096 MiB per
signal by default) at the large job's load, and emptied again.

At the large job's load the default cap holds about two hours of spans, too long to fill in a
benchmark run. So the queue is filled at ten times that load (``FILL_FACTOR``; the rig of
``long_jobs``, the ``current`` line's default combination, the backend a black hole from the end
of a warm-up) until its largest file, the spans', holds ``FAST_FILL_SHARE`` of the cap, and then
at the large job's load until it is full and one step more: the cap is reached, and the queue
refuses, at the load the package is sized for. It answers what only a full-size queue can: how
long the cap holds, how far the queue's files outgrow the cap's bytes of protobuf, what the
collector's memory does while its database grows to gigabytes and is read back, that a full
queue refuses the newest data and the collector logs the count while the files still get
everything, and how long the backlog takes to reach the backend once it is back (with the load
stopped: the job has moved on, the queue has not).

The fill runs in steps of at most ``STEP_SECONDS`` of load (shorter as the fast fill nears its
share, so that it does not overshoot) until the collector logs a refusal (the spans' queue, the
largest, is full first) or ``FILL_LIMIT_SECONDS`` pass; then one more step at the cap. Between
steps the rig counts what reached the files, during which no load is offered. The collector
logs a refused request's items whatever their origin, so for points the refused count includes
the scraped and span-metrics points the backend's count leaves out.

Then the same again with the collector in a memory cgroup (``_memory_cgroup.py``, where this
machine can make one) of ``BOUND_MIB``: whether the page cache of a full queue, which RSS counts
while the collector maps it, is reclaimed inside a bound instead of costing an OOM kill. The
bound is twice the RSS goal because at ten times the load the collector's anonymous memory
alone goes past 256 MiB. Quick mode caps the queue at 64 MiB.
"""

from __future__ import annotations

import time
from typing import Any

from nemo_gym.orchestration.executors.otel._job_dir.collector_log import read_collector_log

from ._memory_cgroup import MemoryCgroup
from ._otlp_sink import SIGNALS
from .collector_load import LARGE_JOB, MIB, Rig, _log, collector_binary
from .long_jobs import (
    WARMUP_SECONDS,
    _backend_rig,
    _bound,
    _queue_files,
    _total,
    _watch_queue_and_binary,
)

LINE = "current"
HOST = "127.0.0.78"
FILL_FACTOR = 10
FAST_FILL_SHARE = 0.95  # of the cap, in bytes of the largest queue file
CAP_MIB = {True: 64, False: None}  # None: the default cap
STEP_SECONDS = 30
PROBE_SECONDS = 5  # the fast fill's first step, which measures how fast the queue grows
FILL_LIMIT_SECONDS = {True: 300, False: 2400}
QUIET_SECONDS = 60  # the backlog is out when the backend got nothing new for this long
BOUND_MIB = 512


def _refused(rig: Rig) -> dict[str, int]:
    """Items the disk queue's exporters refused (or gave up on), from the collector's log."""
    log = read_collector_log(rig.root / "collector.log")
    losses = [] if log is None else log.losses
    return {
        s: sum(loss.items for loss in losses if loss.signal == s and "queue" in loss.exporter)
        for s in SIGNALS
    }


def _memory(rig: Rig, start: float, end: float) -> dict[str, float]:
    """Peak RSS between two moments, and the peaks the sampler took since it last gave them."""
    return {
        "rss_mib": rig.sampler.peak_rss(start, end) / MIB,
        **{f"{k}_mib": v / MIB for k, v in rig.sampler.take_peaks().items()},
    }


def _rates(factor: int) -> dict[str, float]:
    return {s: rate * factor for s, rate in LARGE_JOB.items()}


def _largest_queue_file(rig: Rig) -> int:
    return max(_queue_files(rig.job_dir / "otel").values(), default=0)


def _fill_and_drain(quick: bool, memory_limit: int | None) -> dict[str, Any]:
    cap = CAP_MIB[quick]
    otel = {} if cap is None else {"backend_queue_megabytes": cap}
    binary = collector_binary(LINE)
    with _backend_rig(binary, LINE, HOST, memory_limit, otel) as rig:
        assert rig.backend is not None
        _watch_queue_and_binary(rig)
        start, _ = rig._arrived()
        steps = [rig.step(LARGE_JOB, WARMUP_SECONDS)]
        rig.backend.set_mode("black_hole")
        fill_started = time.monotonic()
        rig.sampler.take_peaks()  # the warm-up's
        growth: list[dict[str, Any]] = []
        full_after: dict[str, float] = {}  # seconds of load, to the end of the step
        fast_bytes = FAST_FILL_SHARE * rig.config.otel.backend_queue_megabytes * MIB
        factor, loaded, fast_seconds = FILL_FACTOR, 0.0, 0.0
        memory: dict[str, dict[str, float]] = {}
        at_load_started = fill_started
        while time.monotonic() - fill_started < FILL_LIMIT_SECONDS[quick]:
            seconds = float(STEP_SECONDS)
            if factor == FILL_FACTOR:  # the next step ends near the fast fill's share
                largest = _largest_queue_file(rig)
                per_second = largest / loaded if loaded else 0.0
                if per_second:
                    seconds = min(seconds, max(1.0, (fast_bytes - largest) / per_second))
                else:
                    seconds = PROBE_SECONDS
            steps.append(rig.step(_rates(factor), seconds))
            loaded += seconds
            if factor == FILL_FACTOR:
                fast_seconds = loaded
                if _largest_queue_file(rig) >= fast_bytes:
                    factor, at_load_started = 1, time.monotonic()
                    memory["fast fill"] = _memory(rig, fill_started, at_load_started)
            refused = _refused(rig)
            for s in SIGNALS:
                if refused[s] and s not in full_after:
                    full_after[s] = loaded
            growth.append(
                {
                    "load_seconds": loaded,
                    "factor": steps[-1].offered["traces"] / LARGE_JOB["traces"],
                    "queue_files": _queue_files(rig.job_dir / "otel"),
                    "refused": refused,
                }
            )
            _log(
                f"queue cap: {loaded:.0f}s of load, queue "
                f"{sum(growth[-1]['queue_files'].values()) / MIB:.0f} MiB, refused {refused}"
            )
            if full_after:
                break
        at_cap_started = time.monotonic()
        memory["fill at the load" if factor == 1 else "fill"] = _memory(
            rig, at_load_started, at_cap_started
        )
        steps.append(rig.step(_rates(factor), STEP_SECONDS))
        loaded += STEP_SECONDS
        memory["at the cap"] = _memory(rig, at_cap_started, time.monotonic())
        at_cap = _queue_files(rig.job_dir / "otel")
        cap_mib = rig.config.otel.backend_queue_megabytes
        refused = _refused(rig)
        accepted = _total(steps, "accepted")
        want = {s: start["backend"].get(s, 0) + accepted[s] - refused[s] for s in SIGNALS}
        rig.backend.set_mode("up")
        back = time.monotonic()
        last_change, last = back, rig._arrived()[0]["backend"]
        while time.monotonic() - last_change < QUIET_SECONDS:
            time.sleep(1)
            now = rig._arrived()[0]["backend"]
            if now != last:
                last_change, last = time.monotonic(), now
            if all(now.get(s, 0) >= want[s] for s in SIGNALS):
                break
        drained_s = last_change - back
        arrived, _ = rig._arrived()
        memory["reading back"] = _memory(rig, back, time.monotonic())
        bound = _bound(rig)
    result = {
        "line": LINE,
        "fill_factor": FILL_FACTOR,
        "fast_fill_seconds": fast_seconds,
        "full_at_factor": steps[-1].offered["traces"] / LARGE_JOB["traces"],
        "cap_mib": cap_mib,
        "memory_cgroup": bound,
        "load_seconds": loaded,
        "slowest_step_share_of_offered": {
            s: min(st.achieved[s] / st.offered[s] for st in steps[1:]) for s in SIGNALS
        },
        "full_after_seconds": full_after,
        "growth": growth,
        "queue_files_at_cap": at_cap,
        "accepted": accepted,
        "refused_by_the_queue": refused,
        "lost_at_files": {
            s: accepted[s] - (arrived["files"].get(s, 0) - start["files"].get(s, 0))
            for s in SIGNALS
        },
        "backend_minus_accepted_not_refused": {
            s: arrived["backend"].get(s, 0) - want[s] for s in SIGNALS
        },
        "drain_seconds": drained_s,
        "memory": memory,
    }
    _log(f"queue cap: {result}")
    return result


def queue_cap(quick: bool) -> dict[str, Any]:
    runs = [_fill_and_drain(quick, None)]
    try:
        MemoryCgroup.create("nemo-gym-otel-probe", BOUND_MIB * MIB).remove()
    except RuntimeError as error:
        _log(f"the queue's cap in a memory cgroup not measured: {error}")
    else:
        runs.append(_fill_and_drain(quick, BOUND_MIB * MIB))
    return {"runs": runs, "rows": [row for run in runs for row in _rows(run)]}


def _rows(r: dict[str, Any]) -> list[tuple[str, str]]:
    bound = r["memory_cgroup"]
    where = (
        f"{LINE}, filled at {r['fill_factor']}x the load for {r['fast_fill_seconds']:.0f} s, "
        f"full at {r['full_at_factor']:.0f}x, cap {r['cap_mib']} MiB per signal"
    ) + ("" if bound is None else f", memory cgroup of {bound['limit_mib']:.0f} MiB")
    full = (
        ", ".join(f"{s} after {v:.0f} s" for s, v in r["full_after_seconds"].items()) or "not full"
    )
    memory = "; ".join(
        f"{phase} {m['rss_mib']:.0f} / {m['anonymous_mib']:.0f} / {m['queue_mib']:.0f}"
        for phase, m in r["memory"].items()
    )
    return [
        (
            f"disk queue filled ({where})",
            f"{full} of load; files at the cap (MiB): "
            + ", ".join(f"{n} {b / MIB:.0f}" for n, b in r["queue_files_at_cap"].items()),
        ),
        (
            "  refused by the full queue / lost at the files",
            f"{r['refused_by_the_queue']} / {r['lost_at_files']}",
        ),
        (
            "  backlog to the backend",
            f"{r['drain_seconds']:.0f} s; backend minus (accepted - refused) "
            f"{r['backend_minus_accepted_not_refused']}",
        ),
        ("  peak RSS / anonymous / queue mapped (MiB)", memory),
        *(
            []
            if bound is None
            else [
                (
                    "  memory cgroup peak, OOM kills",
                    f"{bound['peak_mib']:.0f} MiB, {bound['oom_kills']}",
                )
            ]
        ),
    ]
