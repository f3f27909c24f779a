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

from .._common.constants import COLLECTOR_DIR, COLLECTOR_LOG_NAME, SIGNALS
from .._job_dir.collector_log import read_collector_log
from .._job_dir.delivery_report import (
    CANNOT_TELL,
    Progress,
    SignalReport,
    delivery_report,
    signal_files,
)
from .._job_dir.scrape_health import ScrapeHealth, TargetHealth

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


def job_verdict(reports: list[SignalReport]) -> str:
    """incomplete when any signal lost something, else cannot be told when any signal's fate
    is unknown, else complete."""
    verdicts = {report.verdict for report in reports}
    for verdict in ("incomplete", CANNOT_TELL):
        if verdict in verdicts:
            return verdict
    return "complete"


def run_report(job_dir: Path, as_json: bool, log_path: Path | None = None) -> str:
    """Print the report of ``job_dir`` and return the job's verdict (:func:`job_verdict`);
    ``log_path`` is the collector's log (default: ``<job dir>/otel/collector.log``, where the
    job step writes it)."""
    otel_dir = job_dir / COLLECTOR_DIR
    log = read_collector_log(log_path or otel_dir / COLLECTOR_LOG_NAME)
    bar: _ProgressBar | None = None
    progress: Progress | None = None
    if sys.stderr.isatty():
        paths = [p for s in SIGNALS for p in signal_files(otel_dir, s) if p.exists()]
        bar = _ProgressBar(sum(p.stat().st_size for p in paths), sys.stderr)
        progress = bar
    health = ScrapeHealth()
    health.expect_written_targets(otel_dir)
    try:
        reports = delivery_report(otel_dir, progress, health, log)
    finally:
        if bar:
            bar.close()
    verdict = job_verdict(reports)
    if as_json:
        document = {
            "job_dir": str(job_dir),
            "complete": verdict == "complete",
            "verdict": verdict,
            "signals": [r.as_dict() for r in reports],
            "scrape_targets": [t.as_dict() for t in health.targets()],
        }
        print(json.dumps(document, indent=2))
    else:
        print(_table(reports))
        if health.targets():
            print(_targets_section(health.targets()))
    return verdict
