"""``nemo-gym-otel report``: the delivery report as a table for people or JSON for scripts.

Reading a long job's files can take a while, so on a terminal a progress bar on stderr shows
how far it got; piped or redirected, nothing but the report is printed.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import TextIO

from .._job_dir.delivery_report import SignalReport
from .._job_dir.disk_queue import possibly_twice
from .._job_dir.job_report import read_job_report, telemetry_bytes
from .._job_dir.scrape_health import TargetHealth
from .._step.queue_place import QueuePlace

_BAR_WIDTH = 30
_HEADERS = ("signal", "received", "in files", "to backend", "failed/dropped", "verdict")


class _ProgressBar:
    """A one-line bar on a terminal, redrawn at most once per percent."""

    def __init__(self, total: int, stream: TextIO) -> None:
        self._total = max(total, 1)
        self._done = 0
        self._shown = -1
        self._stream = stream

    def __call__(self, read: int) -> None:
        self._done += read
        percent = min(100, self._done * 100 // self._total)
        if percent != self._shown:
            self._shown = percent
            filled = _BAR_WIDTH * percent // 100
            bar = "#" * filled + "." * (_BAR_WIDTH - filled)
            self._stream.write(f"\rreading telemetry [{bar}] {percent:3d}%")
            self._stream.flush()

    def close(self) -> None:
        self._stream.write("\r" + " " * (_BAR_WIDTH + 26) + "\r")
        self._stream.flush()


def _verdict(report: SignalReport) -> str:
    reasons = [f"files: {r}" for r in report.files_reasons]
    reasons += [f"backend: {r}" for r in report.backend_reasons]
    return report.verdict if not reasons else f"{report.verdict}: " + "; ".join(reasons)


def _table(reports: list[SignalReport]) -> str:
    rows = [
        (
            r.signal,
            str(r.received),
            str(r.in_files),
            "-" if r.backend_sent is None else str(r.backend_sent),
            str(r.refused + r.files_failed + r.backend_failed),
            _verdict(r),
        )
        for r in reports
    ]
    widths = [max(len(row[i]) for row in (_HEADERS, *rows)) for i in range(len(_HEADERS) - 1)]

    def line(row: tuple[str, ...]) -> str:
        cells = [cell.ljust(width) for cell, width in zip(row, widths, strict=False)]
        return "  ".join([*cells, row[-1]])

    return "\n".join(line(row) for row in (_HEADERS, *rows))


def _targets_section(targets: list[TargetHealth]) -> str:
    """Every target that was not up throughout, by node; scraped targets do not change the
    verdict (a node without GPUs has no DCGM exporter), they show what the data lacks."""
    missing = [t for t in targets if t.state != "up"]
    lines = [f"scrape targets: {len(targets) - len(missing)} of {len(targets)} up throughout"]
    for target in missing:
        since = target.down_since_unix_nano
        when = (
            " at " + time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(since / 1e9))
            if since
            else ""
        )
        lines.append(f"  {target.node}: {target.job} ({target.instance}) {target.state}{when}")
    return "\n".join(lines)


def _queue_places_section(places: list[QueuePlace]) -> str:
    """Where the backend's queue was: a node-local folder is reached from its node only, and
    a queue in memory left nothing on disk."""
    *earlier, current = places
    if current.folder is None:
        line = (
            f"backend queue: in memory on {current.node} (no folder there locked its database; "
            "collector.log says why): nothing of it is on disk, nothing to drain"
        )
    else:
        line = (
            f"backend queue: node-local on {current.node} in {current.folder} (the job "
            "directory's file system does not lock files); what is left there can be drained "
            f"only on {current.node}: run nemo-gym-otel drain there"
        )
    lines = [line]
    lines += [
        f"  an earlier attempt's queue stays on {p.node} in {p.folder}: "
        f"only nemo-gym-otel drain run on {p.node} sends what is left there"
        for p in earlier
        if p.folder is not None
    ]
    return "\n".join(lines)


def show_report(job_dir: Path, output: str, log_path: Path | None = None) -> str:
    """Print the report of ``job_dir`` as ``output`` ("text" or "json") and return the job's
    verdict; a progress bar on a terminal's stderr while the files are read."""
    bar: _ProgressBar | None = None
    if sys.stderr.isatty():
        bar = _ProgressBar(telemetry_bytes(job_dir), sys.stderr)
    try:
        report = read_job_report(job_dir, log_path, bar)
    finally:
        if bar:
            bar.close()
    if output == "json":
        print(json.dumps(report.as_dict(), indent=2))
    else:
        print(_table(report.signals))
        retried = {r.signal: r.retried_after_timeout for r in report.signals}
        if any(retried.values()):
            counts = ", ".join(f"{signal} {n}" for signal, n in retried.items() if n)
            print(f"backend: {possibly_twice(sum(retried.values()))} ({counts})")
        if report.queue_places:
            print(_queue_places_section(report.queue_places))
        if report.log_dropped_bytes:
            print(
                f"collector.log: {report.log_dropped_bytes} bytes of its middle dropped to stay "
                "within its bound (its first part and its newest lines are kept): what the "
                "report counts from it is a lower bound"
            )
        if report.targets:
            print(_targets_section(report.targets))
    return report.verdict
