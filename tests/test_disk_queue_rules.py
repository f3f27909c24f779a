"""The token and tenant rules around the backend's disk queue (issue 19).

The long-job fixture renders the queue: ``<signal>/queue`` puts the data on disk and hands it,
through the exporter's URL, to the collector's own loopback receiver ``otlp/queue``, whose
``<signal>/backend`` adds the tenant. The rules must follow that hop like a connector: the
token reaches neither the disk nor the files, and the hop itself is no backend.
"""

from __future__ import annotations

import copy
from typing import Any

import yaml
from support import helpers

from nemo_gym.orchestration.executors.otel import CollectorConfigError, validate_collector_config

GOLDEN = helpers.REPO / "tests" / "golden" / "long-job" / "current" / "otlp_http+file.yaml"
ENDPOINT = "http://collector-gateway.internal:4318"
FLAGS: dict[str, Any] = {"endpoint": ENDPOINT, "allow_plain_http": True}


def _golden() -> dict[str, Any]:
    return yaml.safe_load(GOLDEN.read_text(encoding="utf-8"))


def _errors(doc: dict[str, Any]) -> list[str]:
    try:
        validate_collector_config(yaml.safe_dump(doc, sort_keys=False), **FLAGS)
    except CollectorConfigError as exc:
        return [str(v) for v in exc.violations]
    return []


def test_the_rendered_queue_passes_every_rule() -> None:
    doc = _golden()
    assert doc["exporters"]["otlp_http/queue"]["sending_queue"]["storage"] == "file_storage/queue"
    assert _errors(doc) == []


def test_a_tenant_stamp_before_the_disk_queue_is_refused() -> None:
    doc = _golden()
    for signal in ("traces", "metrics", "logs"):
        doc["service"]["pipelines"][f"{signal}/queue"]["processors"] = ["resource/tenant"]
    errors = _errors(doc)
    assert errors and all("queues it on disk" in e for e in errors), errors
    assert len(errors) == 3


def test_a_backend_exporter_with_a_disk_queue_after_the_tenant_is_refused() -> None:
    doc = _golden()
    backend = doc["exporters"]["otlp_http/backend"]
    backend["sending_queue"] = {"enabled": True, "storage": "file_storage/queue"}
    errors = _errors(doc)
    assert any("otlp_http/backend" in e and "queues it on disk" in e for e in errors), errors


def test_the_hop_carries_the_tenant_into_its_receivers_pipelines() -> None:
    """A tenant stamp before the hop reaches every pipeline of the hop's receiver: one that
    writes a file then carries the token into the job directory."""
    doc = _golden()
    doc["exporters"]["otlp_http/queue"]["sending_queue"].pop("storage")
    doc["service"]["pipelines"]["traces/queue"]["processors"] = ["resource/tenant"]
    doc["service"]["pipelines"]["traces/leak"] = {
        "receivers": ["otlp/queue"],
        "exporters": ["file/traces"],
    }
    errors = _errors(doc)
    assert any("traces/leak" in e and "carrying the tenant attribute" in e for e in errors), errors


def test_an_exporter_to_another_port_is_no_hop_and_must_carry_the_tenant() -> None:
    doc = copy.deepcopy(_golden())
    doc["exporters"]["otlp_http/queue"]["endpoint"] = "http://127.0.0.1:4399"
    errors = _errors(doc)
    assert any("otlp_http/queue" in e and "no tenant processor" in e for e in errors), errors
    assert any("otlp_http/queue" in e and "otel.endpoint" in e for e in errors), errors
