"""The drain config: the job's own backend path, reading what its disk queue still holds.

A stop leaves on disk what was still queued (the hop's receiver closes with the other
receivers, before the queue's exporter could send its last batch), and so does an outage that
outlasts the job. The drain config sends it: cut from the job's rendered config, so its backend
path is the job's own, override and all (the same queue exporter and storage, the same tenant
stamp and backend exporter, the same token reference), and checked by the same rules before it
is written beside ``collector.yaml``. The job step runs it after the collector (see
:mod:`..._step.collector_step`); ``nemo-gym-otel drain`` runs it later, from any node.

What it keeps: every pipeline receiving from a hop (the backend path), unchanged; each pipeline
that fed a disk-queued hop, now fed by the job's own OTLP receiver instead of the ingest
pipelines (nothing sends there but the collector's own delivery report, when it pushes one);
and, where the job wrote metrics to files, a pipeline writing that receiver's metrics there, so
a drain's own readings join the delivery report. Nothing else: no scrape, no processing of
the job's data, no connector.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._checks.graph import (
    SECTIONS,
    component_type,
    pipeline_refs,
    pipelines_of,
    section_of,
    signal_of,
)
from .._checks.hops import disk_hops
from .._templating.file_compression import gate_arguments

DRAIN_FILES_PIPELINE = "metrics/drain_readings"


def drain_document(config: Mapping[str, Any]) -> dict[str, Any] | None:
    """The drain config cut from a job's parsed config; None when nothing is queued on disk."""
    hops = disk_hops(config)
    ingest = next(
        (
            str(r)
            for r in section_of(config, "receivers")
            if component_type(str(r)) == "otlp" and r not in hops.values()
        ),
        None,
    )
    if not hops or ingest is None:
        return None
    kept: dict[str, dict[str, Any]] = {}
    file_exporters: list[str] = []
    for pipeline_id, pipeline in pipelines_of(config).items():
        if set(pipeline_refs(pipeline, "receivers")) & set(hops.values()):
            kept[pipeline_id] = dict(pipeline)
        elif queued := [e for e in pipeline_refs(pipeline, "exporters") if e in hops]:
            kept[pipeline_id] = {"receivers": [ingest], "exporters": queued}
        elif signal_of(pipeline_id) == "metrics":
            file_exporters += [
                e
                for e in pipeline_refs(pipeline, "exporters")
                if component_type(e) == "file" and e not in file_exporters
            ]
    if file_exporters:
        kept[DRAIN_FILES_PIPELINE] = {"receivers": [ingest], "exporters": file_exporters}
    used = {
        ref
        for p in kept.values()
        for role in ("receivers", "processors", "exporters")
        for ref in pipeline_refs(p, role)
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
    service = dict(section_of(config, "service"))
    service["pipelines"] = kept
    document["service"] = service
    return document


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
