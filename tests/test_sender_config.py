"""The job step's two cuts of collector.yaml (issue 38): ``ingest.yaml`` (the collector) and
``sender.yaml`` (the backend path, in a process of its own so that its wait for a backend's
Retry-After never holds the collector's TERM). Pure functions of the parsed config; the real
collectors run them in ``tests/e2e/test_retry_after.py`` and validate them here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from support import helpers
from support.otelcol import collector_binary

from nemo_gym.orchestration.executors.otel._render.sender_config import split_documents

GOLDEN = helpers.REPO / "tests" / "golden"
QUEUED = sorted(p for p in GOLDEN.glob("*/*/*.yaml") if "otlp_http" in p.stem)


def _load(path: Path) -> dict:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("path", QUEUED, ids=lambda p: "/".join(p.parts[-3:]))
def test_the_cuts_are_the_config_split_at_the_hop(path: Path) -> None:
    config = _load(path)
    split = split_documents(config)
    assert split is not None, "the default rendering queues on disk"
    ingest, sender = split
    pipelines = config["service"]["pipelines"]
    backend = {i for i in pipelines if i.endswith("/backend")}
    assert set(sender["service"]["pipelines"]) == backend
    assert set(ingest["service"]["pipelines"]) == set(pipelines) - backend
    for section in ("receivers", "processors", "exporters", "connectors"):
        both = {**ingest.get(section, {}), **sender.get(section, {})}
        assert both == config.get(section, {}), section
        assert not set(ingest.get(section, {})) & set(sender.get(section, {})), section
    assert list(sender["receivers"]) == ["otlp/queue"]
    assert "extensions" not in sender and "extensions" not in sender["service"]
    assert ingest["extensions"] == config["extensions"]
    assert sender["service"]["telemetry"] == config["service"]["telemetry"]
    # The token is the sender's alone: the collector's cut does not name it.
    assert "OTEL_TOKEN" not in json.dumps(ingest)
    assert "${env:OTEL_TOKEN}" in json.dumps(sender)


def test_a_config_without_a_disk_queue_is_not_cut() -> None:
    (path,) = [p for p in GOLDEN.glob("minimal/current/file.yaml")]
    assert split_documents(_load(path)) is None


@pytest.mark.collector
@pytest.mark.parametrize("line", tuple(helpers.line_metadata()))
def test_the_line_collector_takes_both_cuts(line: str, tmp_path: Path) -> None:
    import subprocess

    config = _load(GOLDEN / "example" / line / "otlp_http+file.yaml")
    split = split_documents(config)
    assert split is not None
    for name, document in zip(("ingest", "sender"), split, strict=True):
        path = tmp_path / f"{name}.yaml"
        path.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
        result = subprocess.run(
            [str(collector_binary(line)), "validate", f"--config=file:{path}"],
            capture_output=True,
            text=True,
            timeout=60,
            env={"OTEL_TOKEN": "t", "SLURM_JOB_ID": "1", "PATH": "/usr/bin:/bin"},
        )
        assert result.returncode == 0, (name, result.stderr)
