"""What a job directory says about its backend's disk queue, for the delivery report.

With the queue on disk (``otel.backend_queue_megabytes``) the backend path has two exporters:
the queue's, sending over the loopback hop, and the backend's. Their counters mean different
things: the backend exporter's ``sent`` is what the backend took, while its failures are
attempts the queue retries; what is lost for good is what the queue's exporter gave up on (a
permanent error) or refused (a full queue); what is left is the queue's size, in bytes of OTLP
protobuf. Which exporter is which comes from the job's own ``collector.yaml`` (the hops, as the
tenant rules find them), whoever wrote it.

What a stop leaves queued goes out with the stop's drain (its readings join the files when the
job pushes the delivery report) or ``nemo-gym-otel drain`` (one line per run in
``drain.jsonl``). The queue's state at the end of the job is the newest of those: a drain record
newer than every reading (of a drain whose collector reported its queue: one that did not start
measured nothing), else the newest reading, and it covers what reached the files after the
collector's last reading only when it was taken by a process that ran after every other one.

Requests the queue retried after the backend did not answer in time (``context deadline
exceeded``) may have reached the backend twice (OTLP is at-least-once); they are counted from the
collector's log and the drain records, as requests.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from .._checks.hops import disk_hops
from .._common.constants import COLLECTOR_CONFIG_NAME, DRAIN_RECORD_NAME
from .._common.errors import JobDirError
from .._common.text_file import bounded_lines
from .._common.yaml_loader import parse_yaml
from .._step.drain import backend_exporters
from .collector_log import CollectorLog
from .json_values import UnexpectedJson, parsed, whole_number
from .signal_file import LINE_LIMIT_BYTES, open_job_file

# Far above any collector config (the rendered ones are kilobytes): a larger collector.yaml is
# not read.
CONFIG_LIMIT_BYTES = 16 * 1024 * 1024


def possibly_twice(requests: int) -> str:
    """How the report and the drain say that ``requests`` were sent again after a timeout."""
    return (
        f"{requests} request(s) retried after the backend did not answer in time, "
        "so the backend may hold their items twice"
    )


@dataclass(frozen=True)
class DrainRecord:
    """One run of ``nemo-gym-otel drain``, as it recorded itself."""

    time_unix_nano: int
    sent: dict[str, int]
    queued_bytes: dict[str, int]
    retried_after_timeout: dict[str, int]
    empty: bool


@dataclass
class DiskQueue:
    exporters: frozenset[str]  # the queue's exporters (the hops)
    receivers: frozenset[str]  # the hops' receivers
    drains: list[DrainRecord] = field(default_factory=list)
    retried_in_log: dict[str, int] = field(default_factory=dict)
    # The job step's last start kept it in memory (no folder locked its database, see
    # _step/queue_place.py): the same exporters, nothing on disk, no drain; what a stop left in
    # it is judged by the collector's log, as a queue rendered in memory.
    in_memory: bool = False

    def retried_after_timeout(self, signal: str) -> int:
        return self.retried_in_log.get(signal, 0) + sum(
            d.retried_after_timeout.get(signal, 0) for d in self.drains
        )

    def drained(self, signal: str) -> int:
        return sum(d.sent.get(signal, 0) for d in self.drains)


def _time(stamp: Any) -> int:
    try:
        return int(datetime.fromisoformat(str(stamp)).timestamp() * 1_000_000_000)
    except ValueError:
        return 0


def _counts(value: Any) -> dict[str, int]:
    """Per signal, a count the drain recorded; anything else in the record is left out."""
    counts = {}
    for key, count in value.items() if isinstance(value, dict) else ():
        try:
            counts[str(key)] = whole_number(count)
        except UnexpectedJson:
            continue
    return counts


def _drain_records(path: Path) -> list[DrainRecord]:
    records = []
    try:
        stream = open_job_file(path)
    except FileNotFoundError:
        return []
    with stream:
        for line in bounded_lines(stream, LINE_LIMIT_BYTES):
            try:
                entry = parsed(line or b"")
            except ValueError:
                continue
            if isinstance(entry, dict):
                records.append(
                    DrainRecord(
                        _time(entry.get("time")),
                        _counts(entry.get("sent")),
                        _counts(entry.get("queued_bytes")),
                        _counts(entry.get("retried_after_timeout")),
                        entry.get("empty") is True,
                    )
                )
    return records


def _collector_config(path: Path) -> object:
    """The job's collector config, parsed; None when it is missing, too large or not YAML. One
    that is not a regular file or cannot be read raises :class:`JobDirError`."""
    try:
        stream = open_job_file(path)
    except FileNotFoundError:
        return None
    with stream:
        data = stream.read(CONFIG_LIMIT_BYTES + 1)
    if len(data) > CONFIG_LIMIT_BYTES:
        return None
    try:
        return parse_yaml(data.decode("utf-8"), str(path), JobDirError)
    except (ValueError, JobDirError):  # UnicodeDecodeError is a ValueError
        return None


def read_disk_queue(otel_dir: Path, log: CollectorLog | None) -> DiskQueue | None:
    """The job's disk queue, or None when its config has none (or is not YAML)."""
    config = _collector_config(otel_dir / COLLECTOR_CONFIG_NAME)
    if not isinstance(config, dict):
        return None
    hops = disk_hops(config)
    if not hops:
        return None
    queue = DiskQueue(frozenset(hops), frozenset(hops.values()))
    queue.drains = _drain_records(otel_dir / DRAIN_RECORD_NAME)
    if log:
        # A request is sent again after a timeout by the backend exporter behind the hop (it
        # retries itself, see _render/sender_config.py) or by the queue, when the hop gave up.
        resent = queue.exporters | backend_exporters(config)
        queue.retried_in_log = log.retried_after_timeout(resent)
    return queue
