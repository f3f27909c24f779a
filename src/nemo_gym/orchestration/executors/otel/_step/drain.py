"""``nemo-gym-otel drain``: send what a job's disk queue still holds, from any node, later (a
queue on a node's own disk from that node only).

The job directory's ``otel/drain.yaml`` is the job's own backend path (see
:mod:`.._render.drain_config`), so the drain needs nothing but a collector binary of the job's
line and the token in the environment. It is run as written except for where it listens and
the hop's wait: the job's addresses belong to the job's node, so every listener moves to a free
loopback port (the hop's exporter and the delivery report's push follow their receiver), and a
pull reader of each process's own metrics on a free loopback port tells the drain how much is
still queued and how much the backend took (``otelcol_exporter_queue_size``, in bytes for the
disk queue; ``otelcol_exporter_sent_*`` of the backend exporter). The run configs live in a
temporary folder and hold no secret: the token stays a reference.

It runs as two collector processes, as the job step runs the job's collector (see
:mod:`.._render.sender_config`): the sender (every pipeline receiving from a hop: the hop's
receiver, the tenant stamp, the backend exporter) started first, and the queue's collector (the
rest: the disk queue and its exporter to the sender's receiver). The hop waits for the sender
without a time limit, so the backend exporter waits out a ``Retry-After`` of any length before
it asks again. The stop's drain in the job step is one process whose hop gives up after
``DRAIN_HOP_TIMEOUT_SECONDS`` (see :mod:`.._render.drain_config`): its TERM waits for the hop's
requests and must end inside Slurm's stop time. Run so here, a longer delay was cut short and the
queue asked the backend again inside it (measured: 15.7 s after a refusal carrying
``Retry-After: 20``). Two processes rather than that one with the hop's bound lifted to the
job's 120 s: a ``Retry-After`` longer than that would still be cut, and the stop (``--timeout``,
an interrupt) would wait for the hop's requests, killing the queue's collector after
``SHUTDOWN_WAIT_SECONDS`` where they outlast it. Here the stop ends the sender first, killed
after ``SENDER_STOP_SECONDS`` when it holds a request (not acknowledged, so the disk queue still
holds its items: at-least-once, as at the job's stop), then TERMs the queue's collector, which
no request holds: the run ends within those seconds of its timeout. What it costs: a second
collector process while the drain runs.

The drain ends when every disk queue is empty and its files are compacted, with TERM and the
bounded wait of the job step's stop. Its own counters are not pushed into the job's files (the
drain config's delivery-report reader is replaced by the pull reader): each run appends one JSON
line to ``otel/drain.jsonl`` instead (the report reads it): when, how long, what the backend
took per signal, what is still queued, the queue's files left on disk, and how many requests
were retried after a timeout (the backend may hold those twice).

Why it waits for compaction: an emptied queue's database keeps the size it had at its fullest
(up to the cap, about 4 GiB per signal by default) until the storage's rebound compaction
rewrites it, within the storage's ``check_interval`` (5 s by default) once the data left is
under its trigger threshold. The drain waits for that (at most ``_COMPACTION_WAIT_SECONDS``)
rather than leave gigabytes of free pages in a job directory that may never be started again.
A storage that compacts at start instead (``on_start``, as rendered before template version 9)
is healthy only once it copied the whole queue, minutes for a full queue on a slow filesystem:
the wait for health lasts as long as the queue's folder keeps changing. The drain gives up
after ``_HEALTH_TIMEOUT_SECONDS`` in which the collector neither answered nor changed its
queue's folder.

The queue's folder is read where this node sees the job directory (:func:`relocated`), or, where
the job step put the queue on a node's own disk (its job directory's file system does not lock
files, see :mod:`.queue_place`), in that folder, on that node only. Where the job step put it in
memory and no attempt left it on disk, nothing runs: there is nothing to send.
"""

from __future__ import annotations

import copy
import json
import os
import re
import socket
import subprocess
import tempfile
import time
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .._checks.graph import SECTIONS, component_type, pipeline_refs, pipelines_of, section_of
from .._checks.hops import disk_hops
from .._common.constants import (
    COLLECTOR_DIR,
    DRAIN_CONFIG_NAME,
    DRAIN_RECORD_NAME,
    QUEUE_DIR_NAME,
    SENDER_CONFIG_NAME,
    SENDER_STOP_SECONDS,
    SHUTDOWN_WAIT_SECONDS,
)
from .._common.errors import SubmitConfigError
from .._common.text_file import open_regular, read_text_file
from .._common.yaml_loader import parse_yaml
from .._render.drain_config import DRAIN_FILES_PIPELINE, DRAIN_RECEIVER, serve_metrics
from .._render.sender_config import split_documents
from .drain_processes import DrainProcess, end_in_order, wait_up, write_config
from .queue_place import in_memory_only, local_queue_folder

_RETRIED_AFTER_TIMEOUT = re.compile(
    r"Exporting failed\. Will retry the request after interval\..*deadline exceeded"
)
_SIGNAL_FIELD = re.compile(r'"otelcol\.signal": "(\w+)"')
_EXPORTER_FIELD = re.compile(r'"otelcol\.component\.id": "([^"]+)"')
_TOKEN_REFERENCE = re.compile(r"\$\{env:([A-Za-z_][A-Za-z0-9_]*)\}")
_SAMPLE = re.compile(r"^(otelcol_exporter_[a-z_]+)\{([^}]*)\} (\S+)$")
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')
_UNITS = {"traces": "spans", "metrics": "metric_points", "logs": "log_records"}
_POLL_SECONDS = 0.5
_HEALTH_TIMEOUT_SECONDS = 60
_COMPACTION_WAIT_SECONDS = 60
_MIB = 1024 * 1024
_DEFAULT_REBOUND_NEEDED_MIB = 100  # the file storage's default rebound_needed_threshold_mib
_RENDER_AGAIN = "remove it and render the job again to write the drain config"

Progress = Callable[["DrainState"], None]


@dataclass
class DrainState:
    """What the drain's collector said at its latest reading."""

    queued_bytes: dict[str, int] = field(default_factory=dict)  # signal -> bytes on disk
    sent: dict[str, int] = field(default_factory=dict)  # signal -> items the backend took
    read: bool = False  # whether every disk queue has reported at least once
    files_bytes: int = 0  # the queues' database files on disk

    @property
    def empty(self) -> bool:
        return self.read and not any(self.queued_bytes.values())


@dataclass(frozen=True)
class QueueStorage:
    """A disk queue's storage: its folder, and the size above which its rebound compaction
    rewrites an emptied database (None: it does not compact on rebound)."""

    directory: Path
    compacts_above_bytes: int | None

    def _sizes(self) -> list[int]:
        try:
            paths = list(self.directory.iterdir())
        except OSError:
            return []
        sizes = []
        for path in paths:
            try:  # a compaction renames its temporary file over the database meanwhile
                sizes.append(path.stat().st_size)
            except OSError:
                continue
        return sizes

    def files_bytes(self) -> int:
        """Bytes of every file in the folder, a compaction's temporary file included."""
        return sum(self._sizes())

    def compacted(self) -> bool:
        limit = self.compacts_above_bytes
        return limit is None or all(size < limit for size in self._sizes())


@dataclass(frozen=True)
class DrainResult:
    state: DrainState
    seconds: float
    retried_after_timeout: dict[str, int]
    exit_status: int
    log_tail: str
    # The queue's folder was never made (the job's collector never ran): nothing was run.
    nothing_queued: Path | None = None
    # The nodes where the job step put the queue in memory, when no attempt left it on disk
    # (see queue_place.in_memory_only): nothing was run.
    in_memory: list[str] | None = None

    @property
    def ran(self) -> bool:
        return self.nothing_queued is None and self.in_memory is None

    @property
    def empty(self) -> bool:
        return self.state.empty or not self.ran

    def record(self) -> dict[str, Any]:
        return {
            "time": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "seconds": round(self.seconds, 1),
            "sent": self.state.sent,
            "queued_bytes": self.state.queued_bytes,
            "retried_after_timeout": self.retried_after_timeout,
            "empty": self.empty,
            "queue_files_bytes": self.state.files_bytes,
        }


def _free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


def _listeners(node: Any) -> Iterator[str]:
    """Every ``endpoint`` a receiver or extension binds (host:port), wherever it is nested."""
    if isinstance(node, Mapping):
        for key, value in node.items():
            if key == "endpoint" and isinstance(value, str):
                yield value
            else:
                yield from _listeners(value)
    elif isinstance(node, list):
        for item in node:
            yield from _listeners(item)


def _replace(node: Any, moves: Mapping[str, str]) -> Any:
    """``node`` with every string naming a moved address (``host:port`` alone or after
    ``//`` in a URL) naming its new one."""
    if isinstance(node, Mapping):
        return {key: _replace(value, moves) for key, value in node.items()}
    if isinstance(node, list):
        return [_replace(item, moves) for item in node]
    if isinstance(node, str):
        for old, new in moves.items():
            if node == old:
                return new
            node = re.sub(rf"//{re.escape(old)}(?=/|$)", f"//{new}", node)
    return node


def local_drain_document(document: Mapping[str, Any], metrics_port: int) -> dict[str, Any]:
    """The drain config as this node runs it: listeners on free loopback ports, and the pull
    reader the drain watches."""
    moves = {}
    for section in ("receivers", "extensions"):
        for address in _listeners(document.get(section) or {}):
            moves.setdefault(address, f"127.0.0.1:{_free_port()}")
    local: dict[str, Any] = _replace(document, moves)
    service = _section(local, "service")
    metrics = _section(_section(service, "telemetry"), "metrics")
    # Only the pull reader: what this drain sent is recorded in drain.jsonl, not pushed into
    # the files as a delivery-report reading too (the report would count it twice).
    serve_metrics(metrics, "127.0.0.1", metrics_port, [])
    # Nothing pushes readings now, so the pipeline that wrote them to the files goes too, and
    # nothing arrives at the drain's own receiver: its pipelines need no stamp (which reads
    # SLURM_JOB_ID, unset where a drain runs later).
    pipelines = service.get("pipelines")
    dropped = pipelines.pop(DRAIN_FILES_PIPELINE, None) if isinstance(pipelines, dict) else None
    for pipeline in pipelines.values() if isinstance(pipelines, dict) else ():
        if isinstance(pipeline, dict) and pipeline_refs(pipeline, "receivers") == [DRAIN_RECEIVER]:
            pipeline.pop("processors", None)
    processing = {
        processor
        for pipeline in pipelines_of(local).values()
        for processor in pipeline_refs(pipeline, "processors")
    }
    if isinstance(local.get("processors"), dict):
        local["processors"] = {k: v for k, v in local["processors"].items() if k in processing}
    used = {e for p in pipelines_of(local).values() for e in pipeline_refs(p, "exporters")}
    exporters = local.get("exporters")
    for exporter in pipeline_refs(dropped, "exporters") if isinstance(dropped, Mapping) else ():
        if exporter not in used and isinstance(exporters, dict):
            exporters.pop(exporter, None)
    return local


def local_drain_processes(
    document: Mapping[str, Any], queue_metrics_port: int, sender_metrics_port: int
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the queue's collector's config, the sender's): :func:`local_drain_document` cut as the
    job step cuts the job's (:func:`.._render.sender_config.split_documents`), the hop waiting
    for the sender without a time limit, and the sender serving its own metrics on
    ``sender_metrics_port``. What the cut cannot read (a section or a pipeline of another shape,
    in an edited drain.yaml) goes to the queue's collector as written, for the collector to
    refuse in its own words."""
    local = local_drain_document(document, queue_metrics_port)
    exporters = local.get("exporters")
    for exporter in disk_hops(local):
        if isinstance(exporters, dict) and isinstance(exporters.get(exporter), dict):
            exporters[exporter] = {**exporters[exporter], "timeout": "0s"}  # 0: none
    split = split_documents(local)
    assert split is not None, "drain_config_document found a disk hop"
    queue, sender = split
    for section in SECTIONS:
        if section in local and not isinstance(local[section], Mapping):
            queue[section] = local[section]
    odd = {i: p for i, p in local["service"]["pipelines"].items() if not isinstance(p, Mapping)}
    queue["service"]["pipelines"].update(odd)
    sender["service"] = {
        **sender["service"],
        "telemetry": copy.deepcopy(local["service"]["telemetry"]),
    }
    metrics = sender["service"]["telemetry"]["metrics"]
    serve_metrics(metrics, "127.0.0.1", sender_metrics_port, [])
    return queue, sender


def _section(holder: dict[str, Any], key: str) -> dict[str, Any]:
    """``holder[key]``, made a mapping: the drain writes its own telemetry readers there, and a
    config whose sections are of another shape is the collector's to refuse, with its message."""
    section = holder.get(key)
    if not isinstance(section, dict):
        section = holder[key] = {}
    return section


def token_variable(document: Mapping[str, Any]) -> str | None:
    """The variable the backend exporters' Authorization header names."""
    found = _TOKEN_REFERENCE.search(json.dumps(document.get("exporters") or {}, default=str))
    return found[1] if found else None


def backend_exporters(document: Mapping[str, Any]) -> set[str]:
    """The exporters of the pipelines that read from a hop: where the backend's counts are."""
    receivers = set(disk_hops(document).values())
    return {
        exporter
        for pipeline in pipelines_of(document).values()
        if receivers & set(pipeline_refs(pipeline, "receivers"))
        for exporter in pipeline_refs(pipeline, "exporters")
    }


def read_state(text: str, hops: set[str], backends: set[str]) -> DrainState:
    """The drain's state from the collector's Prometheus exposition."""
    state = DrainState()
    seen: set[tuple[str, str]] = set()
    for line in text.splitlines():
        sample = _SAMPLE.match(line)
        if sample is None:
            continue
        name, labels, value = sample[1], dict(_LABEL.findall(sample[2])), sample[3]
        exporter, signal_name = labels.get("exporter", ""), labels.get("data_type", "")
        number = int(float(value))
        if name == "otelcol_exporter_queue_size" and exporter in hops:
            state.queued_bytes[signal_name] = state.queued_bytes.get(signal_name, 0) + number
            seen.add((exporter, signal_name))
        elif exporter in backends:
            for signal_id, unit in _UNITS.items():
                if name in (f"otelcol_exporter_sent_{unit}", f"otelcol_exporter_sent_{unit}_total"):
                    state.sent[signal_id] = state.sent.get(signal_id, 0) + number
    state.read = bool(seen)
    return state


def retried_after_timeout(log_text: str, exporters: set[str] | frozenset[str]) -> dict[str, int]:
    """Per signal, the requests the queue's ``exporters`` retried after the backend did not
    answer in time (the backend may hold their items twice), from a collector's log."""
    found = (retried_request(line) for line in log_text.splitlines())
    return retried_per_signal(Counter(request for request in found if request), exporters)


def retried_per_signal(
    requests: Mapping[tuple[str, str], int], exporters: Iterable[str]
) -> dict[str, int]:
    """Per signal, the retried ``requests`` (counted by exporter and signal) of ``exporters``."""
    wanted, counts = set(exporters), dict[str, int]()
    for (exporter, signal_name), number in requests.items():
        if exporter in wanted:
            counts[signal_name] = counts.get(signal_name, 0) + number
    return counts


def retried_request(line: str) -> tuple[str, str] | None:
    """(exporter, signal) of a log line saying a request is retried after a timeout."""
    if not _RETRIED_AFTER_TIMEOUT.search(line):
        return None
    exporter, signal_name = _EXPORTER_FIELD.search(line), _SIGNAL_FIELD.search(line)
    return (exporter[1], signal_name[1]) if exporter and signal_name else None


def _get(url: str) -> str | None:
    try:
        with urllib.request.urlopen(url, timeout=2) as answer:
            return str(answer.read().decode("utf-8", "replace"))
    except OSError:
        return None


def health_url(document: Mapping[str, Any]) -> str | None:
    """Where the drain config's health check answers, when it has one."""
    for extension_id, body in section_of(document, "extensions").items():
        if component_type(str(extension_id)) == "health_check" and isinstance(body, Mapping):
            endpoint = body.get("endpoint")
            if isinstance(endpoint, str):
                return f"http://{endpoint}{body.get('path', '/')}"
    return None


def relocated(document: Mapping[str, Any], job_dir: Path) -> dict[str, Any]:
    """The drain config with the package's queue folder (``<job dir>/otel/queue``) where this
    node sees the job directory, or this node's node-local queue folder where the job step put
    the queue there (:func:`.queue_place.local_queue_folder`, which raises
    :class:`.queue_place.QueueOnAnotherNode` where the queue is on another node). A job
    directory reached by another path than the one it was rendered under (another mount point, a
    copy) would otherwise make the storage create an empty queue at the old path, and the drain
    report nothing queued."""
    local = copy.deepcopy(dict(document))
    here = str(local_queue_folder(job_dir) or job_dir.absolute() / COLLECTOR_DIR / QUEUE_DIR_NAME)
    for extension_id, body in section_of(local, "extensions").items():
        if component_type(str(extension_id)) != "file_storage" or not isinstance(body, dict):
            continue
        for holder in (body, body.get("compaction")):
            folder = holder.get("directory") if isinstance(holder, dict) else None
            if isinstance(folder, str) and Path(folder).parts[-2:] == (
                COLLECTOR_DIR,
                QUEUE_DIR_NAME,
            ):
                holder["directory"] = here
    return local


def queue_storages(document: Mapping[str, Any]) -> list[QueueStorage]:
    """The storages the drain config's disk queues keep their databases in."""
    extensions, exporters = section_of(document, "extensions"), section_of(document, "exporters")
    found: dict[str, QueueStorage] = {}
    for exporter in disk_hops(document):
        storage_id = str(exporters[exporter]["sending_queue"]["storage"])
        body = extensions.get(storage_id)
        if not isinstance(body, Mapping) or not isinstance(body.get("directory"), str):
            continue
        compaction = body.get("compaction")
        compaction = compaction if isinstance(compaction, Mapping) else {}
        needed = compaction.get("rebound_needed_threshold_mib", _DEFAULT_REBOUND_NEEDED_MIB)
        rebound = compaction.get("on_rebound") is True and isinstance(needed, int)
        found.setdefault(
            storage_id,
            QueueStorage(Path(body["directory"]), needed * _MIB if rebound else None),
        )
    return list(found.values())


def drain_config_document(job_dir: Path) -> dict[str, Any]:
    path = job_dir / COLLECTOR_DIR / DRAIN_CONFIG_NAME
    if not os.path.lexists(path):  # what is there but is no file is named for what it is
        raise SubmitConfigError(
            "JOB_DIR",
            f"{job_dir} holds no {COLLECTOR_DIR}/{DRAIN_CONFIG_NAME}: its backend queue is not "
            "on disk (otel.backend_queue_megabytes: null), or it was rendered before there was "
            "one; nothing to drain",
        )
    document = parse_yaml(
        read_text_file(str(path), SubmitConfigError, _RENDER_AGAIN), str(path), SubmitConfigError
    )
    if not isinstance(document, dict) or not disk_hops(document):
        raise SubmitConfigError(
            "JOB_DIR", f"{path} is not a drain config (no disk queue); render the job again"
        )
    return document


def drain(
    job_dir: Path,
    collector: Callable[[], str],
    *,
    timeout_seconds: float | None = None,
    progress: Progress | None = None,
) -> DrainResult:
    """Run the job's drain config until its disk queues are empty (or ``timeout_seconds``).
    ``collector`` finds the binary (or raises) only when there is a queue to drain: a job
    directory whose queue was never made needs neither a collector nor the token."""
    document = drain_config_document(job_dir)
    if (nodes := in_memory_only(job_dir)) is not None:
        return DrainResult(DrainState(), 0.0, {}, 0, "", in_memory=nodes)
    document = relocated(document, job_dir)
    storages = queue_storages(document)
    folders = [storage.directory for storage in storages]
    if folders and not any(os.path.lexists(folder) for folder in folders):
        # Running the collector would only create an empty queue there.
        return DrainResult(DrainState(), 0.0, {}, 0, "", nothing_queued=folders[0])
    binary = collector()
    variable = token_variable(document)
    if variable is not None and not os.environ.get(variable):
        raise SubmitConfigError(
            "environment",
            f"{variable} is not set or empty; export the ingest token the job used "
            f"(the drain config's backend exporter reads ${{env:{variable}}})",
        )
    _check_record(job_dir)  # before the run, which cannot be undone
    hops, backends = set(disk_hops(document)), backend_exporters(document)
    ports = (_free_port(), _free_port())
    reading = _Reading(ports, hops, backends, storages)
    queue_document, sender_document = local_drain_processes(document, *ports)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="nemo-gym-otel-drain-") as name:
        state = DrainState()
        sender_path = write_config(Path(name), SENDER_CONFIG_NAME, sender_document)
        queue_path = write_config(Path(name), DRAIN_CONFIG_NAME, queue_document)
        sender = DrainProcess.start(binary, sender_path, sender_document, SENDER_STOP_SECONDS)
        processes = [sender]
        try:
            receivers = _listeners(section_of(sender_document, "receivers"))
            if wait_up(sender, receivers, _HEALTH_TIMEOUT_SECONDS):
                queue = DrainProcess.start(
                    binary, queue_path, queue_document, SHUTDOWN_WAIT_SECONDS
                )
                processes.append(queue)
                health = health_url(queue_document)
                state = _watch(
                    [p.process for p in processes], reading, health, timeout_seconds, progress
                )
        finally:  # the sender first, as the step's stop: nothing then holds the queue's TERM
            statuses = end_in_order(processes)
        state.files_bytes = reading.files_bytes()
        logs = [process.log() for process in processes]
    # Told when the queue was never read: the sender's end where it ended first (or alone).
    telling = 0 if sender.exited_early else -1
    tail = "\n".join(logs[telling].splitlines()[-3:])
    retried = retried_after_timeout("\n".join(logs), hops | backends)  # as the job's
    return DrainResult(state, time.monotonic() - started, retried, statuses[telling], tail)


@dataclass(frozen=True)
class _Reading:
    """Where the drain reads its state: the collector's exposition and the queues' folders."""

    ports: tuple[int, ...]  # the pull readers of the queue's collector and of the sender
    hops: set[str]
    backends: set[str]
    storages: list[QueueStorage]

    def files_bytes(self) -> int:
        return sum(storage.files_bytes() for storage in self.storages)

    def state(self) -> DrainState | None:
        texts = [_get(f"http://127.0.0.1:{port}/metrics") for port in self.ports]
        if None in texts:
            return None
        state = read_state("\n".join(map(str, texts)), self.hops, self.backends)
        state.files_bytes = self.files_bytes()
        return state

    def compacted(self) -> bool:
        return all(storage.compacted() for storage in self.storages)


def _watch(
    processes: list[subprocess.Popen[bytes]],
    reading: _Reading,
    health: str | None,
    timeout_seconds: float | None,
    progress: Progress | None,
) -> DrainState:
    started = time.monotonic()
    state = DrainState()
    empty_polls = 0
    emptied_at: float | None = None
    ready = health is None
    folder_bytes, changed_at = reading.files_bytes(), started
    while all(process.poll() is None for process in processes):
        # The metrics answer from the start, the queue's size only once its exporter has
        # started (after a compaction at start, if the storage does one): the health check
        # says when every component has.
        ready = ready or _get(health or "") is not None
        current = reading.state() if ready else None
        now = time.monotonic()
        if current is not None:
            state, changed_at = current, now
            if progress:
                progress(state)
            empty_polls = empty_polls + 1 if state.empty else 0
            if empty_polls >= 2:  # twice: a batch read from disk but not yet sent is not queued
                emptied_at = now if emptied_at is None else emptied_at
                if reading.compacted() or now - emptied_at > _COMPACTION_WAIT_SECONDS:
                    break
        else:  # not healthy yet, or no answer: give up once neither it nor its queue moves
            files_bytes = reading.files_bytes()
            if files_bytes != folder_bytes:
                folder_bytes, changed_at = files_bytes, now
            elif now - changed_at > _HEALTH_TIMEOUT_SECONDS:
                break
        if timeout_seconds is not None and now - started > timeout_seconds:
            break
        time.sleep(_POLL_SECONDS)
    return state


def _check_record(job_dir: Path) -> None:
    """Refuse, before anything runs, a ``drain.jsonl`` the run could not append its record to."""
    path = job_dir / COLLECTOR_DIR / DRAIN_RECORD_NAME
    fix = "remove it: the drain appends one line per run there"
    try:
        with open_regular(str(path), SubmitConfigError, fix):
            target = path
    except FileNotFoundError:
        target = path.parent
    if not os.access(target, os.W_OK):
        raise SubmitConfigError(
            str(target),
            f"is not writable; the drain appends its record to {COLLECTOR_DIR}/"
            f"{DRAIN_RECORD_NAME}: let this user write it",
        )


def append_record(job_dir: Path, result: DrainResult) -> None:
    with (job_dir / COLLECTOR_DIR / DRAIN_RECORD_NAME).open("a", encoding="utf-8") as record:
        record.write(json.dumps(result.record(), sort_keys=True) + "\n")
