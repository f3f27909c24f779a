"""The drain config: the job's own backend path, reading what its disk queue still holds.

A stop can leave on disk what was still queued (a request the stop interrupted stays queued,
see docs/guide/outages.md), and so does an outage that outlasts the job. The drain config sends
it: cut from the job's rendered config, so its backend path is the job's own, override and all
(the same queue exporter and storage, the same tenant stamp and backend exporter, the same token
reference), and checked by the same rules before it is written beside ``collector.yaml``. The
job step runs it after the collector (see :mod:`..._step.collector_step`); ``nemo-gym-otel
drain`` runs it later, from any node.

The drain takes nothing from the job's processes: they may still be pushing while it runs (a
server whose driver ended), and what it took would miss the files and the job's attributes. So
it binds neither of the job's OTLP ports. What it keeps: every pipeline receiving from a hop
(the backend path), unchanged; each pipeline that fed a disk-queued hop, fed now by the drain's
own receiver (``DRAIN_RECEIVER``, HTTP on the hop's loopback host at ``DRAIN_RECEIVER_PORT``,
which no job's process is pointed at) through the processors of the job's pipelines that fed it,
so what arrives is stamped as the job's collector stamps it; and, where the job wrote metrics to
files, a pipeline writing that receiver's metrics there the same way. Only the drain's own
delivery report arrives there, when the job pushes one: the readings are sent to this receiver
instead of the job's OTLP/HTTP port. No scrape, no connector. The drain also serves its own
metrics on the hop's loopback host at ``DRAIN_METRICS_PORT``: the stop ends it once they say its
queues are empty, rather than after a fixed time. Its hop waits at most
``DRAIN_HOP_TIMEOUT_SECONDS`` for the backend path (the job's waits longer, see
:mod:`.sender_config`): the stop's drain is one process, whose TERM waits for its hop's
requests. ``nemo-gym-otel drain`` runs it as two processes without that bound (see
:mod:`..._step.drain`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from .._checks.graph import (
    SECTIONS,
    component_type,
    pipeline_refs,
    pipelines_of,
    section_of,
    signal_of,
)
from .._checks.hops import disk_hops
from .._common.constants import DRAIN_HOP_TIMEOUT_SECONDS, DRAIN_METRICS_PORT, DRAIN_RECEIVER_PORT
from .._common.hosts import host_port
from .._templating.file_compression import gate_arguments

DRAIN_FILES_PIPELINE = "metrics/drain_readings"
DRAIN_RECEIVER = "otlp/drain"


def drain_document(config: Mapping[str, Any]) -> dict[str, Any] | None:
    """The drain config cut from a job's parsed config; None when nothing is queued on disk."""
    hops = disk_hops(config)
    if not hops:
        return None
    pipelines = pipelines_of(config)
    kept: dict[str, dict[str, Any]] = {}
    file_exporters: list[str] = []
    for pipeline_id, pipeline in pipelines.items():
        if set(pipeline_refs(pipeline, "receivers")) & set(hops.values()):
            kept[pipeline_id] = dict(pipeline)
        elif queued := [e for e in pipeline_refs(pipeline, "exporters") if e in hops]:
            kept[pipeline_id] = _fed_by_drain(pipelines, pipeline, queued)
        elif signal_of(pipeline_id) == "metrics":
            file_exporters += [
                e
                for e in pipeline_refs(pipeline, "exporters")
                if component_type(e) == "file" and e not in file_exporters
            ]
    readings = next((p for i, p in kept.items() if signal_of(i) == "metrics"), None)
    if file_exporters and readings is not None:
        kept[DRAIN_FILES_PIPELINE] = {
            "receivers": [DRAIN_RECEIVER],
            **({"processors": list(readings["processors"])} if "processors" in readings else {}),
            "exporters": file_exporters,
        }
    document = components_used(config, kept)
    hop_host = _listen_host(config, next(iter(hops.values())))
    address = host_port(hop_host, DRAIN_RECEIVER_PORT)
    document["receivers"][DRAIN_RECEIVER] = {"protocols": {"http": {"endpoint": address}}}
    service = dict(section_of(config, "service"))
    telemetry = _readings_moved(service.get("telemetry"), config, hops, address)
    service["telemetry"] = _queue_sizes_served(telemetry, hop_host)
    service["pipelines"] = kept
    document["service"] = service
    _hop_wait_bounded(document, hops)
    return document


def _hop_wait_bounded(document: dict[str, Any], hops: Mapping[str, str]) -> None:
    """The stop's drain runs the backend path in its own process, behind the hop: a TERM waits
    for the hop's requests, which wait for the backend exporter's retries (a backend's
    Retry-After, a backend that never answers). Each hop request is bounded by
    ``DRAIN_HOP_TIMEOUT_SECONDS``, which must be: longer than one attempt at the backend (the
    backend exporter's 10 s), so that a slow answer is not asked for again; shorter than
    ``SHUTDOWN_WAIT_SECONDS``, so that the TERM ends before the step kills the drain; and
    longer than ``DRAIN_SECONDS`` and the queue's first back-off (1 s), so that the stop's TERM,
    which closes the hop's receiver, comes before the queue would ask again: a longer
    Retry-After is cut short, but no request reaches the backend inside it. ``nemo-gym-otel
    drain``, which runs longer, lifts the bound (see :func:`..._step.drain.local_drain_processes`)."""
    exporters = document.get("exporters")
    for exporter in hops:
        body = exporters.get(exporter) if isinstance(exporters, dict) else None
        if isinstance(body, Mapping):
            exporters[exporter] = {**body, "timeout": f"{DRAIN_HOP_TIMEOUT_SECONDS}s"}


def _fed_by_drain(
    pipelines: Mapping[str, Mapping[str, Any]], pipeline: Mapping[str, Any], queued: list[str]
) -> dict[str, Any]:
    """A pipeline feeding the disk queue, fed by the drain's receiver instead, through the
    processors of the job's pipelines that fed it (through a connector) and its own."""
    feeders = set(pipeline_refs(pipeline, "receivers"))
    processors: list[str] = []
    for other in pipelines.values():
        if feeders & set(pipeline_refs(other, "exporters")):
            processors += [p for p in pipeline_refs(other, "processors") if p not in processors]
    processors += [p for p in pipeline_refs(pipeline, "processors") if p not in processors]
    fed: dict[str, Any] = {"receivers": [DRAIN_RECEIVER]}
    if processors:
        fed["processors"] = processors
    fed["exporters"] = queued
    return fed


def _http_endpoint(body: Any) -> str | None:
    """host:port an ``otlp`` receiver's HTTP protocol binds."""
    protocols = body.get("protocols") if isinstance(body, Mapping) else None
    http = protocols.get("http") if isinstance(protocols, Mapping) else None
    endpoint = http.get("endpoint") if isinstance(http, Mapping) else None
    return endpoint if isinstance(endpoint, str) else None


def _listen_host(config: Mapping[str, Any], receiver: str) -> str:
    """The host a hop's receiver binds (a loopback address; ``disk_hops`` found it there)."""
    endpoint = _http_endpoint(section_of(config, "receivers").get(receiver)) or ""
    return endpoint.rpartition(":")[0].strip("[]")


def _readings_moved(
    telemetry: Any, config: Mapping[str, Any], hops: Mapping[str, str], address: str
) -> Any:
    """The collector's own telemetry with every push to the job's OTLP/HTTP receiver (the
    delivery report) sent to the drain's receiver instead: the drain binds no job's port."""
    ports = {
        endpoint.rpartition(":")[2]
        for receiver_id, body in section_of(config, "receivers").items()
        if component_type(str(receiver_id)) == "otlp" and receiver_id not in hops.values()
        if (endpoint := _http_endpoint(body))
    }

    def moved(node: Any) -> Any:
        if isinstance(node, Mapping):
            return {key: moved(value) for key, value in node.items()}
        if isinstance(node, list):
            return [moved(item) for item in node]
        if isinstance(node, str) and node.startswith("http://"):
            parts = urlsplit(node)
            if str(parts.port) in ports:
                return urlunsplit(parts._replace(netloc=address))
        return node

    return moved(telemetry)


def _queue_sizes_served(telemetry: Any, host: str) -> dict[str, Any]:
    """The drain's telemetry with its own metrics also served for pulling on ``host`` at
    ``DRAIN_METRICS_PORT``, at the basic level at least: the stop reads its queues' sizes
    (``otelcol_exporter_queue_size``) there and ends the drain once they are empty. A
    telemetry section of another shape is the collector's to refuse, with its message."""
    served: dict[str, Any] = dict(telemetry) if isinstance(telemetry, Mapping) else {}
    metrics = served.get("metrics")
    metrics = dict(metrics) if isinstance(metrics, Mapping) else {}
    readers = metrics.get("readers")
    serve_metrics(metrics, host, DRAIN_METRICS_PORT, readers if isinstance(readers, list) else [])
    served["metrics"] = metrics
    return served


def serve_metrics(metrics: dict[str, Any], host: str, port: int, kept: list[Any]) -> None:
    """Make ``metrics`` (a ``service.telemetry.metrics`` section) serve the collector's own
    metrics for pulling on ``host:port``, beside the readers ``kept``, at the basic level at
    least (``none`` would serve nothing): the stop's drain and ``nemo-gym-otel drain`` read its
    queue sizes there."""
    if metrics.get("level", "none") == "none":
        metrics["level"] = "basic"
    pull = {"pull": {"exporter": {"prometheus": {"host": host, "port": port}}}}
    metrics["readers"] = [*kept, pull]


def _compressing_file_exporters(document: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [
        body
        for name, body in section_of(document, "exporters").items()
        if component_type(str(name)) == "file"
        and isinstance(body, Mapping)
        and body.get("compression")
    ]


def feature_gate_arguments(document: Mapping[str, Any]) -> tuple[str, ...]:
    """The command-line feature gates a parsed config needs: a config that was rendered to
    compress its files says so in its file exporters (``compression``), and only collectors that
    take the gate render that way. The drain and anything else that starts a collector from a
    written config reads it from there rather than from the submit config."""
    return gate_arguments(bool(_compressing_file_exporters(document)))


def components_used(config: Mapping[str, Any], kept: Mapping[str, Any]) -> dict[str, Any]:
    """Each component section of ``config`` cut to what the pipelines ``kept`` use (every
    extension as it is; a section ``config`` lacks stays out): the drain's and the sender's cut
    of the same rendering."""
    used = {
        ref
        for pipeline in kept.values()
        for role in ("receivers", "processors", "exporters")
        for ref in pipeline_refs(pipeline, role)
    }
    document: dict[str, Any] = {}
    for section in SECTIONS:
        components = config.get(section)
        if not isinstance(components, Mapping):
            continue
        if section == "extensions":
            document[section] = dict(components)
        else:
            document[section] = {k: v for k, v in components.items() if k in used}
    return document
