"""What the collector's own log says about the end of a job: did it stop cleanly, and what did
the backend exporter lose after the delivery report's last reading.

The delivery report's counters stop at each process's last delivered reading: the reading at
shutdown is lost (upstream collector issue 12944). Metrics keep flowing until TERM (scrapes, the
span-metrics flush), so without more, the fate of a complete job's last metrics at the backend
could never be told. The log closes that gap: an exporter logs every item it gives up on, with
the count (``Exporting failed. Dropping data.`` with ``dropped_items`` for a request that failed
for good, at shutdown too, where every queued request gets one more attempt; ``Exporting
failed. Rejecting data.`` with ``rejected_items`` for one it could not even queue), and the
collector logs ``Shutdown complete.`` once its exporters have drained. So after a clean stop,
items that reached the files after the last reading reached the backend unless the log says
they were dropped or rejected, provided every such line is there: the templates turn off the
collector's sampling of its own log (by default 10 lines of a message per 10 s, then 1 in 100),
and an override of their ``telemetry`` block must too. Read from both lines' binaries
(v0.141.0 and v0.161.0): the same messages, with ``otelcol.component.id`` and
``otelcol.signal`` among their fields.

An exporter whose queue is on disk logs the same "Dropping data." for a request its stop
interrupted (``interrupted due to shutdown``), but the queue keeps that request on disk for the
next start or a drain: for those exporters such a line is no loss.

Each line's error names the cause: a file exporter's write that did not fit ends in ``no space
left on device`` (the file system is full) or ``file too large`` (past the disk budget's bound on
each file, see ``_step/disk_budget.py``); the queue's refusal says ``sending queue is full``. Read
from both lines' binaries on a full tmpfs: "Rejecting data." with ``rejected_items``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from .._common.constants import COLLECTOR_LOG_NAME
from .._common.text_file import bounded_lines
from .._step.bounded_log import dropped_bytes, log_parts
from .._step.drain import retried_per_signal, retried_request
from .json_values import json_object, parsed, whole_number
from .signal_file import LINE_LIMIT_BYTES, open_job_file

CLEAN_STOP = "\tShutdown complete."
NO_SPACE = "no space left on device"  # ENOSPC, in Go's words
OVER_BUDGET = "file too large"  # EFBIG: the collector's file size limit, the disk budget's
QUEUE_FULL = "sending queue is full"
_AT_SHUTDOWN = "interrupted due to shutdown"
_GAVE_UP = {
    "Exporting failed. Dropping data.": "dropped_items",
    "Exporting failed. Rejecting data.": "rejected_items",
}


@dataclass(frozen=True)
class Loss:
    """Items one exporter gave up on, as one log line says."""

    time_unix_nano: int
    exporter: str
    signal: str
    items: int
    instance: str  # the collector process's service.instance.id, when the line names it
    at_shutdown: bool = False  # the stop interrupted the request (a disk queue keeps it)
    error: str = ""


@dataclass
class CollectorLog:
    clean_stops: int = 0
    losses: list[Loss] = field(default_factory=list)
    retried: dict[tuple[str, str], int] = field(default_factory=dict)  # (exporter, signal)
    dropped_bytes: int = 0  # of the log's middle, by the step's bound on it

    def cited(self) -> str:
        """How a figure read from the log names its source: a count of its lines is a lower
        bound where the step dropped part of it."""
        if not self.dropped_bytes:
            return COLLECTOR_LOG_NAME
        return (
            f"{COLLECTOR_LOG_NAME}, which dropped {self.dropped_bytes} bytes of its middle to stay "
            "within its bound: there may have been more"
        )

    def retried_after_timeout(self, exporters: Iterable[str]) -> dict[str, int]:
        """Per signal, the requests ``exporters`` retried after the backend did not answer in
        time (the backend may hold their items twice)."""
        return retried_per_signal(self.retried, exporters)

    def lost_after(
        self,
        signal: str,
        exporters: Iterable[str],
        since: dict[str, int],
        default: int,
        disk_queued: Iterable[str] = (),
    ) -> int:
        """Items of ``signal`` the given exporters gave up on after the last reading of the
        process that logged them (``since``: instance to time; ``default`` for a line that
        names no process); requests a stop interrupted count only for exporters not
        ``disk_queued``."""
        wanted, kept = set(exporters), set(disk_queued)
        return sum(
            loss.items
            for loss in self.losses
            if loss.signal == signal
            and loss.exporter in wanted
            and loss.time_unix_nano > since.get(loss.instance, default)
            and not (loss.at_shutdown and loss.exporter in kept)
        )

    def lost_to(self, signal: str, exporters: Callable[[str], bool], cause: str) -> int:
        """Items of ``signal`` the exporters ``exporters`` accepts gave up on with ``cause``
        in their error (one of ``NO_SPACE``, ``OVER_BUDGET``, ``QUEUE_FULL``)."""
        return sum(
            loss.items
            for loss in self.losses
            if loss.signal == signal and exporters(loss.exporter) and cause in loss.error
        )


def _time(stamp: str) -> int | None:
    try:
        moment = datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%f%z")
    except ValueError:
        return None
    return int(moment.timestamp()) * 1_000_000_000 + moment.microsecond * 1_000


def _loss(line: str) -> Loss | None:
    message = next((m for m in _GAVE_UP if f"\t{m}" in line), None)
    if message is None:
        return None
    stamp = line.split("\t", 1)[0]
    time = _time(stamp)
    try:
        fields = json_object(parsed(line.split(f"\t{message}", 1)[1].strip()))
        items = whole_number(fields.get(_GAVE_UP[message]) or 0)
    except ValueError:  # not the collector's line
        return None
    if time is None:
        return None
    resource = fields.get("resource")
    instance = resource.get("service.instance.id", "") if isinstance(resource, dict) else ""
    return Loss(
        time,
        str(fields.get("otelcol.component.id", "")),
        str(fields.get("otelcol.signal", "")),
        items,
        str(instance),
        str(fields.get("error", "")).startswith(_AT_SHUTDOWN),
        str(fields.get("error", "")),
    )


def read_collector_log(path: Path) -> CollectorLog | None:
    """The log's clean stops, losses and retries, or None when there is no log; a line longer
    than the collector writes is skipped. ``path`` is the log's first part: its tails beside it
    (``_step/bounded_log.py``) are read after it. A part that is not a regular file or cannot be
    read raises :class:`JobDirError`."""
    head, older, tail = log_parts(path)
    log = CollectorLog()
    found = False
    for part in (head, older, tail):
        try:
            stream = open_job_file(part)
        except FileNotFoundError:
            continue
        found = True
        with stream:
            for number, raw in enumerate(bounded_lines(stream, LINE_LIMIT_BYTES)):
                line = "" if raw is None else raw.decode("utf-8", errors="replace")
                if number == 0 and part == older:
                    log.dropped_bytes = dropped_bytes(line)
                _read_line(log, line)
    return log if found else None


def _read_line(log: CollectorLog, line: str) -> None:
    retried = retried_request(line)
    if retried:
        log.retried[retried] = log.retried.get(retried, 0) + 1
    elif CLEAN_STOP in line:
        log.clean_stops += 1
    elif "Exporting failed." in line:
        loss = _loss(line)
        if loss is not None:
            log.losses.append(loss)
