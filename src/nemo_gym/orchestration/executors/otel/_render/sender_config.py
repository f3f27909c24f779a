"""The job's collector as two processes: ``ingest.yaml`` and ``sender.yaml``, cut from its config.

A backend that is overloaded answers 429 or 503 with ``Retry-After``, and the backend exporter
waits that long before it asks again (exporterhelper's throttle retry). Behind the disk queue's
loopback hop (see the template's data flow) the delay used to be lost: the hop's receiver hands
its client a plain retryable status, so the queue's own back-off (1 s, doubling) decided. The
backend exporter behind the hop therefore retries itself, honouring the delay, while the queue's
request waits for it (the queue's ``timeout`` bounds the wait). In one process that wait would
hold the collector's TERM: the collector stops its receivers first, and a receiver waits for the
requests it is answering, so the files would wait for the backend's delay and the step would
kill the collector with their last second unwritten.

So the job step runs the backend path in a process of its own, the sender: every pipeline that
receives from a disk hop's receiver, with that receiver and the components those pipelines use
(the tenant stamp, the backend exporter, the token's reference). The job's collector runs the
rest (``ingest.yaml``: the job's receivers, the files, the disk queue, whose exporter sends to the
sender's receiver on the hop's loopback address). The stop ends the sender first, killing it
when it does not exit at once: whatever it had not delivered was not acknowledged, so it is still
in the disk queue, which the collector's TERM keeps and the stop's drain sends. (Where the
step's start kept the queue in memory, no folder locking its database, the stop TERMs the
collector first and the sender a few seconds later: see ``_step/queue_place.py``.) The two cuts are
together exactly the checked config (``collector.yaml``, which stays the rendering to read and a
config one collector can run, as the benchmarks do: its TERM then waits for the backend's delay,
up to the hop's timeout); the sender binds no port but the hop's, and neither cut is the
token's business beyond what the checked config allowed: the ingest cut holds no reference to it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._checks.graph import pipeline_refs, pipelines_of, section_of
from .._checks.hops import disk_hops
from .drain_config import components_used


def backend_path(config: Mapping[str, Any]) -> tuple[set[str], set[str]]:
    """(the disk hops' receivers, the pipelines that receive from them)."""
    receivers = set(disk_hops(config).values())
    pipelines = {
        pipeline_id
        for pipeline_id, pipeline in pipelines_of(config).items()
        if receivers & set(pipeline_refs(pipeline, "receivers"))
    }
    return receivers, pipelines


def split_documents(config: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """(the job collector's config, the sender's) cut from a job's parsed config; None when
    nothing is queued on disk (one process runs the whole config then)."""
    receivers, sender_pipelines = backend_path(config)
    if not receivers:
        return None
    pipelines = pipelines_of(config)
    ingest = _cut(config, {i: p for i, p in pipelines.items() if i not in sender_pipelines})
    sender = _cut(config, {i: p for i, p in pipelines.items() if i in sender_pipelines})
    # The sender binds the hop's port alone: no health check (the job's collector has it) and
    # no storage (it queues nothing). The step knows it is up when its receiver answers.
    sender.pop("extensions", None)
    sender["service"].pop("extensions", None)
    return ingest, sender


def _cut(config: Mapping[str, Any], kept: dict[str, Any]) -> dict[str, Any]:
    """``config`` with only the pipelines ``kept`` and the components they use (every
    extension and the telemetry as they are; a section left empty goes)."""
    document = {
        section: components
        for section, components in components_used(config, kept).items()
        if components or section == "extensions"
    }
    service = dict(section_of(config, "service"))
    service["pipelines"] = {i: dict(p) for i, p in kept.items()}
    document["service"] = service
    return document
