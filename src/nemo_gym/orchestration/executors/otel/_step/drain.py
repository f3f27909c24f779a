"""``nemo-gym-otel drain``: send what a job's disk queue still holds, from any node, later.

The job directory's ``otel/drain.yaml`` is the job's own backend path (see
:mod:`.._render.drain_config`), so the drain needs nothing but a collector binary of the job's
line and the token in the environment. It is run as written except for where it listens: the
job's addresses belong to the job's node, so every listener moves to a free loopback port (the
hop's exporter and the delivery report's push follow their receiver), and one pull reader of the
collector's own metrics on another free loopback port tells the drain how much is still queued
and how much the backend took (``otelcol_exporter_queue_size``, in bytes for the disk queue;
``otelcol_exporter_sent_*`` of the backend exporter). The run config lives in a temporary
folder and holds no secret: the token stays a reference.

The drain ends when every disk queue is empty, with TERM and the bounded wait of the job step's
stop. Its own counters are not pushed into the job's files (the drain config's delivery-report
reader is replaced by the pull reader): each run appends one JSON line to ``otel/drain.jsonl``
instead, which the report reads: when, how long, what the backend took per signal, what is still
queued, and how many requests were retried after a timeout (the backend may hold those twice).
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .._checks.graph import pipelines_of
from .._checks.hops import disk_hops
from .._common.constants import (
    COLLECTOR_DIR,
    DRAIN_CONFIG_NAME,
    DRAIN_RECORD_NAME,
    SHUTDOWN_WAIT_SECONDS,
)
from .._common.errors import SubmitConfigError
from .._common.text_file import read_text_file
from .._common.yaml_loader import parse_yaml
from .._render.drain_config import DRAIN_FILES_PIPELINE, feature_gate_arguments

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

Progress = Callable[["DrainState"], None]


@dataclass
class DrainState:
    """What the drain's collector said at its latest reading."""

    queued_bytes: dict[str, int] = field(default_factory=dict)  # signal -> bytes on disk
    sent: dict[str, int] = field(default_factory=dict)  # signal -> items the backend took
    read: bool = False  # whether every disk queue has reported at least once

    @property
    def empty(self) -> bool:
        return self.read and not any(self.queued_bytes.values())


@dataclass(frozen=True)
class DrainResult:
    state: DrainState
    seconds: float
    retried_after_timeout: dict[str, int]
    exit_status: int
    log_tail: str

    @property
    def empty(self) -> bool:
        return self.state.empty

    def record(self) -> dict[str, Any]:
        return {
            "time": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "seconds": round(self.seconds, 1),
            "sent": self.state.sent,
            "queued_bytes": self.state.queued_bytes,
            "retried_after_timeout": self.retried_after_timeout,
            "empty": self.empty,
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
    service = local.setdefault("service", {})
    telemetry = service.setdefault("telemetry", {})
    metrics = telemetry.setdefault("metrics", {})
    if metrics.get("level", "none") == "none":
        metrics["level"] = "basic"
    # Only the pull reader: what this drain sent is recorded in drain.jsonl, not pushed into
    # the files as a delivery-report reading too (the report would count it twice).
    metrics["readers"] = [
        {"pull": {"exporter": {"prometheus": {"host": "127.0.0.1", "port": metrics_port}}}}
    ]
    # Nothing pushes readings now, so the pipeline that wrote them to the files goes too.
    pipelines = service.get("pipelines") or {}
    dropped = pipelines.pop(DRAIN_FILES_PIPELINE, None) or {}
    used = {e for p in pipelines.values() for e in p.get("exporters") or []}
    for exporter in dropped.get("exporters") or []:
        if exporter not in used:
            (local.get("exporters") or {}).pop(exporter, None)
    return local


def token_variable(document: Mapping[str, Any]) -> str | None:
    """The variable the backend exporters' Authorization header names."""
    found = _TOKEN_REFERENCE.search(json.dumps(document.get("exporters") or {}))
    return found[1] if found else None


def backend_exporters(document: Mapping[str, Any]) -> set[str]:
    """The exporters of the pipelines that read from a hop: where the backend's counts are."""
    receivers = set(disk_hops(document).values())
    return {
        exporter
        for pipeline in pipelines_of(document).values()
        if receivers & set(pipeline.get("receivers") or [])
        for exporter in pipeline.get("exporters") or []
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
    counts: dict[str, int] = {}
    for line in log_text.splitlines():
        if not _RETRIED_AFTER_TIMEOUT.search(line):
            continue
        exporter, signal_name = _EXPORTER_FIELD.search(line), _SIGNAL_FIELD.search(line)
        if exporter and signal_name and exporter[1] in exporters:
            counts[signal_name[1]] = counts.get(signal_name[1], 0) + 1
    return counts


def _get(url: str) -> str | None:
    try:
        with urllib.request.urlopen(url, timeout=2) as answer:
            return str(answer.read().decode("utf-8", "replace"))
    except OSError:
        return None


def health_url(document: Mapping[str, Any]) -> str | None:
    """Where the drain config's health check answers, when it has one."""
    extensions = document.get("extensions") or {}
    for extension_id, body in extensions.items():
        if str(extension_id).split("/")[0] == "health_check" and isinstance(body, Mapping):
            endpoint = body.get("endpoint")
            if isinstance(endpoint, str):
                return f"http://{endpoint}{body.get('path', '/')}"
    return None


def drain_config_document(job_dir: Path) -> dict[str, Any]:
    path = job_dir / COLLECTOR_DIR / DRAIN_CONFIG_NAME
    if not path.is_file():
        raise SubmitConfigError(
            "JOB_DIR",
            f"{job_dir} holds no {COLLECTOR_DIR}/{DRAIN_CONFIG_NAME}: its backend queue is not "
            "on disk (otel.backend_queue_megabytes: null), or it was rendered before there was "
            "one; nothing to drain",
        )
    document = parse_yaml(
        read_text_file(str(path), SubmitConfigError), str(path), SubmitConfigError
    )
    if not isinstance(document, dict) or not disk_hops(document):
        raise SubmitConfigError(
            "JOB_DIR", f"{path} is not a drain config (no disk queue); render the job again"
        )
    return document


def drain(
    job_dir: Path,
    binary: str,
    *,
    timeout_seconds: float | None = None,
    progress: Progress | None = None,
) -> DrainResult:
    """Run the job's drain config until its disk queues are empty (or ``timeout_seconds``)."""
    document = drain_config_document(job_dir)
    variable = token_variable(document)
    if variable is not None and not os.environ.get(variable):
        raise SubmitConfigError(
            "environment",
            f"{variable} is not set or empty; export the ingest token the job used "
            f"(the drain config's backend exporter reads ${{env:{variable}}})",
        )
    hops, backends = set(disk_hops(document)), backend_exporters(document)
    metrics_port = _free_port()
    local = local_drain_document(document, metrics_port)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="nemo-gym-otel-drain-") as folder:
        import yaml

        config_path = Path(folder) / DRAIN_CONFIG_NAME
        config_path.write_text(yaml.safe_dump(local, sort_keys=False), encoding="utf-8")
        log_path = Path(folder) / "collector.log"
        with log_path.open("wb") as log:
            process = subprocess.Popen(
                [binary, f"--config=file:{config_path}", *feature_gate_arguments(local)],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        try:
            health = health_url(local)
            state = _watch(process, metrics_port, health, hops, backends, timeout_seconds, progress)
        finally:
            status = _stop(process)
        text = log_path.read_text(encoding="utf-8", errors="replace")
    tail = "\n".join(text.splitlines()[-3:])
    retried = retried_after_timeout(text, hops)
    return DrainResult(state, time.monotonic() - started, retried, status, tail)


def _watch(
    process: subprocess.Popen[bytes],
    port: int,
    health: str | None,
    hops: set[str],
    backends: set[str],
    timeout_seconds: float | None,
    progress: Progress | None,
) -> DrainState:
    started = time.monotonic()
    state = DrainState()
    empty_polls = 0
    ready = health is None
    while process.poll() is None:
        # The metrics answer from the start, the queue's size only once its exporter has
        # started (after the storage's compaction at start, seconds for a large queue): the
        # health check says when every component has.
        ready = ready or _get(health or "") is not None
        text = _get(f"http://127.0.0.1:{port}/metrics") if ready else None
        if text is not None:
            state = read_state(text, hops, backends)
            if progress:
                progress(state)
            empty_polls = empty_polls + 1 if state.empty else 0
            if empty_polls >= 2:  # twice: a batch read from disk but not yet sent is not queued
                break
        elif time.monotonic() - started > _HEALTH_TIMEOUT_SECONDS:
            break
        if timeout_seconds is not None and time.monotonic() - started > timeout_seconds:
            break
        time.sleep(_POLL_SECONDS)
    return state


def _stop(process: subprocess.Popen[bytes]) -> int:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=SHUTDOWN_WAIT_SECONDS)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    return int(process.returncode)


def append_record(job_dir: Path, result: DrainResult) -> None:
    with (job_dir / COLLECTOR_DIR / DRAIN_RECORD_NAME).open("a", encoding="utf-8") as record:
        record.write(json.dumps(result.record(), sort_keys=True) + "\n")
