"""The job's disk budget: telemetry never takes the job directory's last free space.

The job directory shares its file system (and quota) with the job's own results. Two things went
wrong there before (SPEC section 9): a full file system cost the backend data, because the
backend's disk queue grows its database file as it goes and found no byte to grow into; and an
outage filled the file system, because the queue's cap (``otel.backend_queue_megabytes`` per
signal) knew nothing of the space there is, and the files grow with ingest whatever happens.

Free space is known only when the job runs, while ``collector.yaml`` is fixed at submit (its
only ``${...}`` are the job id and the token). So the step's start
(``templates/_step/disk_budget.sh.j2``) sets the budget, before it starts the collector:

- **The budget** is ``otel.disk_budget_percent`` (by default 50) of what the job directory's file
  system has free for the job at the start, plus what the job's ``otel/`` already holds (a
  requeue's files count against the budget, not against the free space they took), and at most
  ``otel.disk_budget_megabytes`` where that is set (a file system of many terabytes, a quota
  that the free space does not show).
- **Per file**: the budget is shared equally by the files the collector writes: its three signal
  files, its three queue databases (with the disk queue) and ``collector.log``. Each collector
  file is bounded there by the collector process's file-size limit (``RLIMIT_FSIZE``, set with
  ``prlimit`` once it is healthy, on the processes ``scontrol listpids`` names for its step on
  this node). A write past it fails with ``file too large`` (Go ignores ``SIGXFSZ``): the newest
  items are refused, the collector logs each refusal with its count, and ``nemo-gym-otel
  report`` names the budget. Below ``MIN_FILE_BYTES`` a share the start fails in one line.
- **The queue** (with the disk queue) holds at most ``queue_bytes`` of OTLP protobuf per signal:
  the smaller of ``otel.backend_queue_megabytes`` and what its database file takes within its
  share (bbolt grows a file of up to 16 MiB to the next power of two, beyond that by 16 MiB: half
  the share up to 64 MiB, the share less 32 MiB above). The start passes it to the collector as
  a second config, ``otel/queue-budget.yaml``, merged over ``collector.yaml``. A full queue
  refuses the newest data, counted as before.
- **The queue in memory**: where the start put the queue in memory (no folder locks its
  database, see :mod:`.queue_place`), the same second config also sets ``storage: null`` and a
  size of ``MEMORY_QUEUE_BYTES`` (at most ``otel.backend_queue_megabytes``): memory is not the
  disk budget's. The budget is then shared by the files alone, and takes nothing ahead for a
  queue; ``otel/disk-budget`` has no ``queue=``.
- **Space taken ahead**: the first bytes of each queue database (its share, at most
  ``RESERVE_BYTES``) and of ``collector.log`` (at most ``LOG_RESERVE_BYTES``) are allocated before
  the collector starts (util-linux ``fallocate --keep-size``: the files stay empty). bbolt extends
  its file only past the file's size and never looks at the blocks beyond it, so it grows into
  space that is the job's already (a database of up to half of it fits). A job that fills its
  file system afterwards then costs the backend nothing while the backend takes what comes (the
  queue holds seconds of data then), and the log still records why the files lost what they did
  (their writes fail with ``no space left on device``, logged with the count; ``report`` names
  it). Where the file system allocates nothing ahead (some FUSE or NFS mounts), the log says so
  and the queue grows as before.
- **The log**: ``collector.log`` with its two tails (:mod:`.bounded_log`) takes at most the share
  of a file (at most ``LOG_MAX_BYTES``): its first half for the log's beginning, the rest for its
  newest lines; what lay between is dropped, and ``report`` says how much.

Outside the budget's bounds: the files the rotation finished (``otel.file_rotation``: each at
most ``max_megabytes``, ``max_backups`` of them) and their ``.zst`` copies; the stop's drain; a
queue database that a compaction replaced (on rebound, only after it passed 100 MiB), until the
next start. The figures are written to
``otel/disk-budget`` (one ``key=value`` line) and as one line to the collector's log; ``report``
reads the file. Executors that build their own script from ``CollectorStep`` get no budget.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from .._common.constants import (
    COLLECTOR_DIR,
    DISK_BUDGET_NAME,
    QUEUE_BUDGET_CONFIG_NAME,
    QUEUE_DIR_NAME,
    SIGNALS,
)
from .._common.errors import JobDirError
from .._common.text_file import bounded_lines, open_regular
from .._submit.config import Otel

# What a budget written before otel.disk_budget_percent existed was: that key's default.
DEFAULT_PERCENT = Otel.disk_budget_percent
# Below this per file the collector could not write a batch: the start fails instead.
MIN_FILE_BYTES = 1024 * 1024
# The most of each queue database's share allocated ahead: what a queue holds while the backend
# takes what comes is seconds of data, far below it; 3 of them per job on a shared quota.
RESERVE_BYTES = 32 * 1024 * 1024
# The most of collector.log's share allocated ahead: thousands of lines, enough to tell why the
# files lost what they did on a full disk.
LOG_RESERVE_BYTES = 4 * 1024 * 1024
# The most the backend queue holds per signal (bytes of OTLP protobuf) when the start puts it in
# memory (no folder locks its database, see queue_place.py): about the 25,000 items per signal of
# otel.backend_queue_megabytes: null at the large job's load (measured on disk: about 270 bytes a
# span or log record, 130 a data point), which kept the collector under 256 MiB through outages.
MEMORY_QUEUE_BYTES = 6 * 1024 * 1024
_FILES = len(SIGNALS) + 1  # the signal files and collector.log
_LINE_LIMIT = 4096
_FIELD = re.compile(r"([a-z_]+)=([0-9]+)")


def disk_budget_context(
    otel_dir: PurePosixPath, queue_exporter: str | None, otel: Otel
) -> dict[str, object]:
    """The values of ``templates/_step/disk_budget.sh.j2``; ``queue_exporter`` is the disk
    queue's exporter id (None: the backend's queue is in memory, or there is no backend)."""
    queue_megabytes, cap = otel.backend_queue_megabytes, otel.disk_budget_megabytes
    queue = None
    if queue_exporter is not None and queue_megabytes is not None:
        queue = {
            "exporter": queue_exporter,
            "files": [
                f"exporter_{queue_exporter.replace('/', '_')}_{signal}" for signal in SIGNALS
            ],
            "folder": otel_dir / QUEUE_DIR_NAME,
            "max_bytes": queue_megabytes * 1024 * 1024,
            "memory_bytes": min(queue_megabytes * 1024 * 1024, MEMORY_QUEUE_BYTES),
            "reserve_bytes": RESERVE_BYTES,
            "config": otel_dir / QUEUE_BUDGET_CONFIG_NAME,
        }
    return {
        "budget": {
            "percent": otel.disk_budget_percent,
            "cap_bytes": None if cap is None else cap * 1024 * 1024,
            "files": _FILES + (len(SIGNALS) if queue else 0),
            "min_file_bytes": MIN_FILE_BYTES,
            "log_reserve_bytes": LOG_RESERVE_BYTES,
            "state": otel_dir / DISK_BUDGET_NAME,
            "queue": queue,
        }
    }


@dataclass(frozen=True)
class DiskBudget:
    """The budget the step's start set (``otel/disk-budget``), in bytes."""

    free_bytes: int  # free for the job at the start, plus what otel/ held then
    budget_bytes: int
    file_bytes: int  # the bound of each file the collector writes
    queue_bytes: int | None  # the backend queue's size per signal (None: no disk queue)
    percent: int = DEFAULT_PERCENT  # otel.disk_budget_percent
    cap_bytes: int | None = None  # otel.disk_budget_megabytes

    def describe(self) -> str:
        """How ``report`` names the budget."""
        queue = (
            f", the backend queue {_mib(self.queue_bytes)} per signal" if self.queue_bytes else ""
        )
        share = f"{self.percent}% of the {_mib(self.free_bytes)} free at the start"
        if self.cap_bytes is not None and self.budget_bytes == self.cap_bytes:
            share = f"otel.disk_budget_megabytes, below {share}"
        return (
            f"the disk budget ({_mib(self.budget_bytes)}, {share}: "
            f"{_mib(self.file_bytes)} per file{queue})"
        )


def _mib(size: int) -> str:
    return f"{size / (1024 * 1024):.1f} MiB"


def read_disk_budget(job_dir: Path) -> DiskBudget | None:
    """The budget of the job's last start, or None where the step set none (an older step,
    or a start that could not read the free space)."""
    path = job_dir / COLLECTOR_DIR / DISK_BUDGET_NAME
    try:
        stream = open_regular(str(path), JobDirError, "remove it; the job step writes it")
    except FileNotFoundError:
        return None
    with stream:
        lines = [raw for raw in bounded_lines(stream, _LINE_LIMIT) if raw is not None]
    fields = dict(_FIELD.findall(lines[-1].decode("ascii", "replace"))) if lines else {}
    try:
        return DiskBudget(
            int(fields["free"]),
            int(fields["budget"]),
            int(fields["file"]),
            int(fields["queue"]) if "queue" in fields else None,
            int(fields.get("percent", DEFAULT_PERCENT)),
            int(fields["cap"]) if "cap" in fields else None,
        )
    except KeyError:
        raise JobDirError(str(path), "is not a disk budget the job step wrote; remove it") from None
