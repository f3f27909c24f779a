"""A job directory read back: per signal what its collector received and delivered, every scrape
target's health, what the backend's disk queue still holds and its drains sent, where that queue
was when it was not in the job directory, and the job's verdict."""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from pathlib import Path

from .._common.constants import COLLECTOR_CONFIG_NAME, COLLECTOR_DIR, COLLECTOR_LOG_NAME, SIGNALS
from .._common.errors import JobDirError
from .._step.disk_budget import DiskBudget, read_disk_budget
from .._step.queue_place import QueuePlace, queue_places
from .collector_log import read_collector_log
from .delivery_report import CANNOT_TELL, Progress, SignalReport, delivery_report, signal_files
from .disk_queue import read_disk_queue
from .scrape_health import ScrapeHealth, TargetHealth


@dataclass(frozen=True)
class JobReport:
    job_dir: Path
    signals: list[SignalReport]
    targets: list[TargetHealth]
    # Where the job step put the backend's queue outside the job directory, oldest first: a
    # node's own disk, or its memory where no folder locked (empty: in the job directory, or
    # rendered in memory).
    queue_places: list[QueuePlace] = field(default_factory=list)
    # The disk budget the job step's last start set (None: none was set).
    disk_budget: DiskBudget | None = None
    # Bytes of collector.log's middle its bound dropped (_step/bounded_log.py): what the report
    # counts from the log's lines is then a lower bound.
    log_dropped_bytes: int = 0

    @property
    def verdict(self) -> str:
        """incomplete when any signal lost something, else cannot be told when any signal's
        fate is unknown, else complete. Scrape targets do not change it (a node without GPUs
        has no DCGM exporter); they show what the data lacks."""
        verdicts = {report.verdict for report in self.signals}
        for verdict in ("incomplete", CANNOT_TELL):
            if verdict in verdicts:
                return verdict
        return "complete"

    def as_dict(self) -> dict[str, object]:
        return {
            "job_dir": str(self.job_dir),
            "complete": self.verdict == "complete",
            "verdict": self.verdict,
            "signals": [r.as_dict() for r in self.signals],
            "scrape_targets": [t.as_dict() for t in self.targets],
            "backend_queue_node_local": [
                {"node": p.node, "folder": str(p.folder)}
                for p in self.queue_places
                if p.folder is not None
            ],
            "backend_queue_in_memory": [p.node for p in self.queue_places if p.folder is None],
            "disk_budget": None
            if self.disk_budget is None
            else dataclasses.asdict(self.disk_budget),
            "log_dropped_bytes": self.log_dropped_bytes,
        }


def telemetry_bytes(job_dir: Path) -> int:
    """How much the report reads: the size of every signal file, for a progress bar."""
    otel_dir = job_dir / COLLECTOR_DIR
    paths = [p for s in SIGNALS for p in signal_files(otel_dir, s) if p.exists()]
    return sum(p.stat().st_size for p in paths)


def _check_listable(otel_dir: Path) -> None:
    """The job's otel/ folder must be listable and its files reachable, else the files it
    holds would seem missing: say which folder cannot be read instead."""
    try:
        os.listdir(otel_dir)
        os.stat(otel_dir / COLLECTOR_CONFIG_NAME)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise JobDirError(
            str(otel_dir), f"cannot read the folder ({exc.strerror}); let this user read it"
        ) from None


def read_job_report(
    job_dir: Path, log_path: Path | None = None, progress: Progress | None = None
) -> JobReport:
    """The report of ``job_dir``; ``log_path`` is the collector's log (default
    ``<job dir>/otel/collector.log``, where the job step writes it)."""
    otel_dir = job_dir / COLLECTOR_DIR
    log_file = log_path or otel_dir / COLLECTOR_LOG_NAME
    _check_listable(otel_dir)
    log = read_collector_log(log_file)
    queue = read_disk_queue(otel_dir, log)
    places = queue_places(job_dir)
    if queue and places and places[-1].folder is None:
        queue.in_memory = True
    health = ScrapeHealth()
    health.expect_written_targets(otel_dir)
    budget = read_disk_budget(job_dir)
    signals = delivery_report(otel_dir, progress, health, log, queue, budget)
    dropped = log.dropped_bytes if log else 0
    return JobReport(job_dir, signals, health.targets(), places, budget, dropped)
