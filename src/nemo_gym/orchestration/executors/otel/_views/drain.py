"""What ``nemo-gym-otel drain`` prints: a progress line on a terminal, and its outcome."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

from .._common.constants import SIGNALS
from .._job_dir.disk_queue import possibly_twice
from .._step.drain import DrainResult, DrainState

_ITEMS = {"traces": "spans", "metrics": "points", "logs": "log records"}


def _size(count: int) -> str:
    if count < 1024:
        return f"{count:,} B"
    value = float(count)
    for unit in ("KiB", "MiB"):
        value /= 1024
        if value < 1024:
            return f"{value:,.1f} {unit}"
    return f"{value / 1024:,.1f} GiB"


def progress_line(state: DrainState) -> str:
    parts = [
        f"{signal} {state.sent.get(signal, 0):,} sent, {_size(state.queued_bytes.get(signal, 0))} queued"
        for signal in SIGNALS
    ]
    # Once the queue is empty the drain waits for its files to be compacted: this shrinks then.
    return "drain: " + "; ".join(parts) + f"; queue files {_size(state.files_bytes)}"


def outcome_text(job_dir: str, result: DrainResult) -> str:
    state = result.state
    if result.in_memory is not None:
        return (
            f"{job_dir}: nothing queued on disk: the job step kept the backend's queue in memory "
            f"on {' and '.join(result.in_memory)} (no folder there locked its database; "
            "collector.log says why); nothing sent, nothing written"
        )
    if result.nothing_queued is not None:
        folder = result.nothing_queued
        with contextlib.suppress(ValueError):  # the package's folder, inside the job directory
            folder = folder.relative_to(Path(job_dir).absolute())
        return (
            f"{job_dir}: nothing queued: no {folder}/ (the job's collector never ran); nothing "
            "sent, nothing written"
        )
    sent = ", ".join(f"{state.sent.get(s, 0):,} {_ITEMS[s]}" for s in SIGNALS)
    line = f"{job_dir}: the backend took {sent} in {result.seconds:.1f}s; "
    if result.empty:
        line += f"the disk queue is empty ({_size(state.files_bytes)} of files left)"
    elif not state.read:  # the collector did not start, or never got to its queue
        line += f"the disk queue was not read ({_size(state.files_bytes)} of files on disk)"
    else:
        left = ", ".join(f"{s} {_size(state.queued_bytes.get(s, 0))}" for s in SIGNALS)
        line += f"still queued on disk: {left} (is the backend reachable? run drain again)"
    retried = sum(result.retried_after_timeout.values())
    if retried:
        line += f"; {possibly_twice(retried)}"
    return line


def outcome_json(job_dir: str, result: DrainResult) -> dict[str, Any]:
    """The record the drain appended, with ``nothing_queued``: true when there was no queue to
    drain (no record appended), and ``in_memory``: the nodes where the job step kept the queue
    in memory when that is why (else null)."""
    return {
        "job_dir": job_dir,
        **result.record(),
        "nothing_queued": not result.ran,
        "in_memory": result.in_memory,
    }
