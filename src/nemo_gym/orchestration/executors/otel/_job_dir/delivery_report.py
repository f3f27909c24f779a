"""What a job's collector received and where it went, read back from the job directory.

With ``otel.delivery_report`` the collector pushes its own counters (items each receiver
accepted, each exporter sent or failed, each sending queue's size) into its own pipelines every
few seconds; they land in ``<job dir>/otel/metrics.jsonl`` beside the job's metrics, marked by
the ``DELIVERY_REPORT_MARKER`` resource attribute. This module streams the three files once,
counts the items they hold, keeps the newest reading of every counter per collector process
(``service.instance.id``: a requeued job appends a second process to the same files), and
weighs the two against each other.

The collector's reading at shutdown never arrives (its receiver is closed by then), so the
counters describe the job up to each process's last reading. Whatever reached the files after
it was written; its fate at the backend is read from the collector's log (:mod:`._collector_log`:
after a clean stop, every item an exporter gave up on is logged with its count). Without a log
showing a clean stop of every process, the verdict says "cannot be told" instead of "complete".
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._common.constants import COLLECTOR_LOG_NAME, DELIVERY_REPORT_MARKER, SIGNALS, ZSTD_SUFFIX
from .._step.disk_budget import DiskBudget
from .._templating.file_compression import (
    finished_file_glob,
    rotated_file_glob,
    signal_file_name,
)
from .collector_log import NO_SPACE, OVER_BUDGET, QUEUE_FULL, CollectorLog
from .disk_queue import DiskQueue
from .json_values import (
    attributes,
    counter_value,
    data_points,
    group_metrics,
    json_array,
    json_object,
    json_objects,
    metric_name,
    parsed,
    resource_attributes,
    unix_nano,
)
from .scrape_health import ScrapeHealth, up_readings
from .signal_file import LINE_LIMIT_TEXT, Progress, SignalFile, ZstdUnavailable

# OTLP-JSON keys, per signal: resource groups, scope groups, items.
_GROUPS = {
    "traces": ("resourceSpans", "scopeSpans", "spans"),
    "metrics": ("resourceMetrics", "scopeMetrics", "metrics"),
    "logs": ("resourceLogs", "scopeLogs", "logRecords"),
}
# The unit in the collector's counter names (otelcol_exporter_sent_<unit>).
_UNITS = {"traces": "spans", "metrics": "metric_points", "logs": "log_records"}
_POINT_KINDS = ("gauge", "sum", "histogram", "exponentialHistogram", "summary")
_FILE_EXPORTER_PREFIX = "file/"
CANNOT_TELL = "cannot be told"  # the prefix of every reason that judges nothing


def _is_file_exporter(exporter: str) -> bool:
    return exporter.startswith(_FILE_EXPORTER_PREFIX)


_SHOWN = 5  # lines named in a reason; the others are counted


@dataclass
class Lines:
    """Lines of a kind, counted, the first few named ("<file>:<line>")."""

    count: int = 0
    shown: list[str] = field(default_factory=list)

    def add(self, where: str) -> None:
        self.count += 1
        if len(self.shown) < _SHOWN:
            self.shown.append(where)

    def __str__(self) -> str:
        return ", ".join(self.shown)


@dataclass
class FileScan:
    """A signal's files: their items, and what kept them from being read whole."""

    items: int = 0
    report_points: int = 0  # the collector's own counters (metrics files only)
    truncated: list[str] = field(default_factory=list)  # files whose last line is cut short
    not_zstd: list[str] = field(default_factory=list)  # .zst files that are no zstd stream
    unreadable_lines: Lines = field(default_factory=Lines)
    long_lines: Lines = field(default_factory=Lines)  # longer than LINE_LIMIT_BYTES: not read
    unreadable_files: list[str] = field(default_factory=list)  # why a file could not be read
    missing: bool = False


def signal_files(otel_dir: Path, signal: str) -> list[Path]:
    """``<signal>.jsonl`` and its predecessors the rotation renamed ``<signal>-<UTC
    time>.jsonl``, or the step compressed into ``<signal>-<UTC time>.jsonl.zst``, oldest first
    (the time sorts as text); and the same of a collector that compresses, ``<signal>.jsonl.zst``
    and ``<signal>.jsonl-<UTC time>.zst`` (a job requeued onto the other line holds both). The
    plain live file is named when nothing exists, so that its absence is reported."""
    plain = otel_dir / signal_file_name(signal, compressed=False)
    zstd = otel_dir / signal_file_name(signal, compressed=True)
    finished = finished_file_glob(signal)
    rotated = [
        *sorted([*otel_dir.glob(finished), *otel_dir.glob(finished + ZSTD_SUFFIX)]),
        *sorted(otel_dir.glob(rotated_file_glob(zstd.name))),
    ]
    live = [path for path in (plain, zstd) if path.exists()]
    return [*rotated, *live] if live or rotated else [plain]


@dataclass
class Reading:
    """The newest value of every counter of one collector process, and when it was read."""

    time_unix_nano: int = 0
    first_unix_nano: int = 0  # the process's first reading: when it began to report
    points: int = 0  # how many points that last reading held (never counted by itself)
    series: dict[tuple[str, tuple[tuple[str, str], ...]], tuple[int, float]] = field(
        default_factory=dict
    )

    def total(self, name: str, where: Callable[[dict[str, str]], bool] = lambda _: True) -> int:
        return int(
            sum(
                value
                for (n, attrs), (_, value) in self.series.items()
                if n == name and where(dict(attrs))
            )
        )


@dataclass
class SignalReport:
    signal: str
    received: int
    refused: int
    in_files: int
    files_sent: int
    files_failed: int
    backend_sent: int | None  # None: no backend exporter in this job
    backend_failed: int
    backend_queued: int
    after_last_reading: int
    queued_on_disk_bytes: int | None  # None: the backend's queue is in memory
    retried_after_timeout: int  # requests: the backend may hold their items twice
    files_reasons: list[str]
    backend_reasons: list[str]

    @property
    def complete(self) -> bool:
        return not self.files_reasons and not self.backend_reasons

    @property
    def verdict(self) -> str:
        """complete; incomplete (something is known lost); or cannot be told (only unknowns)."""
        reasons = [*self.files_reasons, *self.backend_reasons]
        if not reasons:
            return "complete"
        if all(reason.startswith(CANNOT_TELL) for reason in reasons):
            return CANNOT_TELL
        return "incomplete"

    def as_dict(self) -> dict[str, Any]:
        return {
            "signal": self.signal,
            "received": self.received,
            "refused": self.refused,
            "files": {
                "items": self.in_files,
                "written": self.files_sent,
                "failed": self.files_failed,
                "complete": not self.files_reasons,
                "reasons": self.files_reasons,
            },
            "backend": None
            if self.backend_sent is None
            else {
                "sent": self.backend_sent,
                "failed_or_dropped": self.backend_failed,
                "queued": self.backend_queued,
                "queued_on_disk_bytes": self.queued_on_disk_bytes,
                "retried_after_timeout": self.retried_after_timeout,
                "complete": not self.backend_reasons,
                "reasons": self.backend_reasons,
            },
            "after_last_reading": self.after_last_reading,
            "verdict": self.verdict,
        }


def _count(signal: str, group: dict[str, Any]) -> int:
    _, scopes_key, items_key = _GROUPS[signal]
    scopes = json_objects(group.get(scopes_key))
    if signal != "metrics":
        return sum(len(json_array(scope.get(items_key))) for scope in scopes)
    return sum(
        len(data_points(metric, _POINT_KINDS))
        for scope in scopes
        for metric in json_objects(scope.get(items_key))
    )


# One point of the collector's own counters: (series key, time in ns, value).
_Counter = tuple[tuple[str, tuple[tuple[str, str], ...]], int, float]


def _counters(group: dict[str, Any]) -> list[_Counter]:
    return [
        (
            (metric_name(metric), tuple(sorted(attributes(point.get("attributes")).items()))),
            unix_nano(point),
            counter_value(point),
        )
        for metric in group_metrics(group)
        for point in data_points(metric, _POINT_KINDS)
    ]


def _keep_reading(
    readings: dict[str, Reading], resource: dict[str, str], counters: list[_Counter]
) -> None:
    reading = readings.setdefault(resource.get("service.instance.id", ""), Reading())
    for key, time, value in counters:
        if time >= reading.series.get(key, (-1, 0.0))[0]:
            reading.series[key] = (time, value)
    times = [time for _, time, _ in counters]
    newest, oldest = max(times, default=0), min(times, default=0)
    if oldest and (not reading.first_unix_nano or oldest < reading.first_unix_nano):
        reading.first_unix_nano = oldest
    if newest > reading.time_unix_nano:
        reading.time_unix_nano, reading.points = newest, len(counters)
    elif newest == reading.time_unix_nano:
        reading.points += len(counters)


@dataclass(frozen=True)
class _Group:
    """One resource group of a line, parsed whole before anything of the line is counted."""

    resource: dict[str, str]
    count: int
    counters: list[_Counter] | None  # a delivery-report group: the collector's own counters
    ups: list[tuple[int, float]] | None  # a scraped target's ``up`` readings, when wanted


def _parse_group(signal: str, group: dict[str, Any], want_ups: bool) -> _Group:
    resource = resource_attributes(group)
    count = _count(signal, group)
    if signal != "metrics":
        return _Group(resource, count, None, None)
    if DELIVERY_REPORT_MARKER in resource:
        return _Group(resource, count, _counters(group), None)
    return _Group(resource, count, None, up_readings(group, resource) if want_ups else None)


def scan_file(
    path: Path,
    signal: str,
    readings: dict[str, Reading],
    scan: FileScan,
    progress: Progress | None = None,
    health: ScrapeHealth | None = None,
) -> None:
    """Count the items of one file into ``scan`` in a stream; collect the collector's readings
    and, into ``health``, the scraped targets' ``up`` readings."""
    file = SignalFile(path)
    try:
        for number, line in enumerate(file.lines(progress), start=1):
            _scan_line(path, number, line, signal, readings, scan, health)
    except FileNotFoundError:
        scan.missing = True
    except ZstdUnavailable as exc:
        scan.unreadable_files.append(str(exc))
    if file.cut_short and path.name not in scan.truncated:
        scan.truncated.append(path.name)
    if file.not_zstd:
        scan.not_zstd.append(path.name)


def _scan_line(
    path: Path,
    number: int,
    line: bytes | None,
    signal: str,
    readings: dict[str, Reading],
    scan: FileScan,
    health: ScrapeHealth | None,
) -> None:
    if line is None:
        scan.long_lines.add(f"{path.name}:{number}")
        return
    if not line.strip():
        return
    try:
        document = json_object(parsed(line))
        groups = [
            _parse_group(signal, group, health is not None)
            for group in json_objects(document.get(_GROUPS[signal][0]))
        ]
    except ValueError:  # not JSON, or not the OTLP JSON the collector writes
        if not line.endswith(b"\n"):
            scan.truncated.append(path.name)  # a killed collector's half-written batch
        else:
            scan.unreadable_lines.add(f"{path.name}:{number}")
        return
    for group in groups:
        if group.counters is not None:
            scan.report_points += group.count
            _keep_reading(readings, group.resource, group.counters)
        else:
            scan.items += group.count
            if health is not None and group.ups is not None:
                health.observe(group.resource, group.ups)


def _file_reasons(name: str, scan: FileScan, cut_by: str) -> list[str]:
    """``cut_by``: what cuts a last line short, when the log tells (else a kill)."""
    if scan.missing:
        return [f"{name} is missing"]
    reasons = [
        f"the last line of {file} is truncated ({cut_by or 'the collector was killed'})"
        for file in scan.truncated
    ]
    reasons += [
        f"{file} is not a zstd stream (not read; the collector writes a .zst file only compressed)"
        for file in scan.not_zstd
    ]
    reasons += [f"{CANNOT_TELL}: {why}" for why in scan.unreadable_files]
    if scan.unreadable_lines.count:
        reasons.append(f"{scan.unreadable_lines.count} unreadable line(s): {scan.unreadable_lines}")
    if scan.long_lines.count:
        reasons.append(
            f"{scan.long_lines.count} line(s) longer than {LINE_LIMIT_TEXT}, not read (the "
            f"collector writes one batch per line, far shorter): {scan.long_lines}"
        )
    return reasons


def _late_reasons(
    signal: str,
    after: int,
    readings: dict[str, Reading],
    log: CollectorLog | None,
    hops: frozenset[str],
    drained: bool,
) -> list[str]:
    """The fate at the backend of the items that reached the files after the last reading, as
    the collector's log tells it (every process stopped cleanly; with the disk queue, drained
    since: only what its exporters gave up on is lost), or why it cannot be told."""
    if not drained and (log is None or log.clean_stops < len(readings)):
        where = "no collector.log" if log is None else "collector.log shows no clean stop"
        return [
            f"{CANNOT_TELL}: {after} reached the files after the collector's last reading "
            f"({where} to tell their fate at the backend)"
        ]
    if log is None:
        return []
    backend = set(hops) or {
        dict(attrs)["exporter"]
        for reading in readings.values()
        for (_, attrs) in reading.series
        if "exporter" in dict(attrs)
        and not dict(attrs)["exporter"].startswith(_FILE_EXPORTER_PREFIX)
    }
    since = {instance: reading.time_unix_nano for instance, reading in readings.items()}
    lost = log.lost_after(signal, backend, since, max(since.values(), default=0), hops)
    if lost:
        return [f"{lost} lost at the backend after the collector's last reading (collector.log)"]
    return []


def _disk_state(signal: str, readings: dict[str, Reading], queue: DiskQueue) -> tuple[int, bool]:
    """Bytes of ``signal`` still on disk at the end (see :mod:`.disk_queue`), and whether that
    was seen after every collector process's last reading (so it covers what reached the files
    after them)."""
    last = max((r.time_unix_nano for r in readings.values()), default=0)
    # A drain whose collector never reported its queue (it did not start) measured nothing.
    drains = [d for d in queue.drains if d.time_unix_nano > last and d.queued_bytes]
    if drains:
        newest = max(drains, key=lambda d: d.time_unix_nano)
        return newest.queued_bytes.get(signal, 0), True
    if not readings:
        return 0, False
    instance, reading = max(readings.items(), key=lambda item: item[1].time_unix_nano)
    queued = reading.total(
        "otelcol_exporter_queue_size",
        lambda a: a.get("exporter") in queue.exporters and a.get("data_type") == signal,
    )
    after_the_others = len(readings) > 1 and all(
        reading.first_unix_nano > other.time_unix_nano
        for key, other in readings.items()
        if key != instance
    )
    return queued, after_the_others


def signal_report(
    signal: str,
    scan: FileScan,
    readings: dict[str, Reading],
    log: CollectorLog | None = None,
    queue: DiskQueue | None = None,
    budget: DiskBudget | None = None,
) -> SignalReport:
    """The counters of every collector process of the job against the items of one file; what
    reached the files after the last reading is judged by the collector's ``log`` or, with the
    backend's ``queue`` on disk, by what the stop's drain or ``nemo-gym-otel drain`` left. The
    log also tells what the files and the queue refused for want of space: a full file system,
    or the start's disk ``budget`` (named with its figures)."""
    unit = _UNITS[signal]
    lives = readings.values()
    hops = queue.exporters if queue else frozenset()
    hop_receivers = queue.receivers if queue else frozenset()

    def total(name: str, where: Callable[[dict[str, str]], bool] = lambda _: True) -> int:
        return sum(reading.total(f"otelcol_{name}", where) for reading in lives)

    def to_files(attrs: dict[str, str]) -> bool:
        return attrs.get("exporter", "").startswith(_FILE_EXPORTER_PREFIX)

    def to_backend(attrs: dict[str, str]) -> bool:
        return "exporter" in attrs and not to_files(attrs) and attrs["exporter"] not in hops

    def to_queue(attrs: dict[str, str]) -> bool:
        return attrs.get("exporter") in hops

    def outside(attrs: dict[str, str]) -> bool:  # not the hop's receiving end
        return attrs.get("receiver") not in hop_receivers

    def failed(where: Callable[[dict[str, str]], bool]) -> int:
        return total(f"exporter_send_failed_{unit}", where) + total(
            f"exporter_enqueue_failed_{unit}", where
        )

    received = total(f"receiver_accepted_{unit}", outside)
    refused = total(f"receiver_refused_{unit}", outside) + total(f"receiver_failed_{unit}", outside)
    files_sent = total(f"exporter_sent_{unit}", to_files)
    files_failed = failed(to_files)
    # A disk queue exists for the backend alone; its backend exporter, behind the hop, reports
    # its requests only once they end, which during an outage they may never do.
    has_backend = queue is not None or any(
        to_backend(dict(attrs)) for reading in lives for (_, attrs) in reading.series
    )
    backend_sent = total(f"exporter_sent_{unit}", to_backend)
    # With the disk queue, the backend exporter's failures are attempts the queue retries.
    backend_failed = failed(to_queue if queue else to_backend)
    backend_queued = total(
        "exporter_queue_size", lambda a: to_backend(a) and a.get("data_type") == signal
    )
    on_disk, seen_after = (
        _disk_state(signal, readings, queue) if queue and not queue.in_memory else (None, False)
    )
    if queue:
        backend_sent += queue.drained(signal)
    in_files = scan.items
    written = in_files
    if signal == "metrics":
        # Earlier readings are counted by later ones; each process's last reading by none.
        written += scan.report_points - sum(reading.points for reading in lives)
    after = max(written - files_sent, 0)

    no_space, over_budget = (
        (
            log.lost_to(signal, _is_file_exporter, NO_SPACE),
            log.lost_to(signal, _is_file_exporter, OVER_BUDGET),
        )
        if log
        else (0, 0)
    )
    cited = log.cited() if log else COLLECTOR_LOG_NAME
    cut_by = ""
    if over_budget and budget:
        cut_by = f"a write past {budget.describe()}"
    elif no_space:
        cut_by = f"a write that did not fit: {NO_SPACE}"
    live = signal_file_name(signal, compressed=False)
    files_reasons = _file_reasons(f"{live} (or {live}{ZSTD_SUFFIX})", scan, cut_by)
    if no_space:
        files_reasons.append(
            f"{no_space} not written to the files: {NO_SPACE} (the job directory's file "
            f"system was full; {cited})"
        )
    if over_budget:
        where = budget.describe() if budget else "the collector's file size limit"
        files_reasons.append(
            f"{over_budget} refused by the files, the newest, at {where} ({cited})"
        )
    if not readings:
        files_reasons.append(
            f"{CANNOT_TELL}: the files hold no delivery report (set otel.delivery_report: true; "
            "or the collector stopped before its first reading)"
        )
    if refused:
        files_reasons.append(f"{refused} refused by the collector's receivers")
    if files_failed:
        files_reasons.append(f"{files_failed} failed to be written to the files")
    if written < files_sent:
        files_reasons.append(
            f"the files hold {files_sent - written} fewer than the collector wrote to them"
        )
    backend_reasons: list[str] = []
    if has_backend:
        if backend_failed:
            backend_reasons.append(f"{backend_failed} lost at the backend (failed or dropped)")
        refused = (
            sum(log.lost_to(signal, hops.__contains__, c) for c in (QUEUE_FULL, OVER_BUDGET))
            if log and budget and queue
            else 0
        )
        if refused and budget:
            full_at = "in memory" if queue and queue.in_memory else f"at {budget.describe()}"
            backend_reasons.append(
                f"{refused} refused by the backend queue, the newest, full {full_at} ({cited})"
            )
        if backend_queued:
            backend_reasons.append(f"{backend_queued} still queued at the last reading")
        if on_disk:
            backend_reasons.append(
                f"{on_disk} bytes still queued on disk (otel/queue/; nemo-gym-otel drain sends them)"
            )
        elif backend_sent < files_sent - backend_failed:
            backend_reasons.append(
                f"{files_sent - backend_failed - backend_sent} not yet sent at the last reading"
            )
        on_disk_queue = queue is not None and not queue.in_memory
        if after and on_disk_queue and not seen_after:
            backend_reasons.append(
                f"{CANNOT_TELL}: {after} reached the files after the collector's last reading, "
                "and no reading since tells whether they left the disk queue (the stop's drain "
                "reports with otel.delivery_report; or run nemo-gym-otel drain)"
            )
        elif after:
            backend_reasons += _late_reasons(signal, after, readings, log, hops, on_disk_queue)
    return SignalReport(
        signal=signal,
        received=received,
        refused=refused,
        in_files=in_files,
        files_sent=files_sent,
        files_failed=files_failed,
        backend_sent=backend_sent if has_backend else None,
        backend_failed=backend_failed,
        backend_queued=backend_queued,
        after_last_reading=after,
        queued_on_disk_bytes=on_disk,
        retried_after_timeout=queue.retried_after_timeout(signal) if queue else 0,
        files_reasons=files_reasons,
        backend_reasons=backend_reasons,
    )


def delivery_report(
    otel_dir: Path,
    progress: Progress | None = None,
    health: ScrapeHealth | None = None,
    log: CollectorLog | None = None,
    queue: DiskQueue | None = None,
    budget: DiskBudget | None = None,
) -> list[SignalReport]:
    """Per signal, what the job's collector received and delivered; with ``health``, the
    scrape targets' readings are gathered in the same pass over the files; ``log`` is the
    collector's own log, read for what happened after its last reading."""
    readings: dict[str, Reading] = defaultdict(Reading)
    scans = {signal: FileScan() for signal in SIGNALS}
    for signal in SIGNALS:
        for path in signal_files(otel_dir, signal):
            scan_file(path, signal, readings, scans[signal], progress, health)
    known = {key: reading for key, reading in readings.items() if reading.series}
    return [signal_report(signal, scans[signal], known, log, queue, budget) for signal in SIGNALS]
