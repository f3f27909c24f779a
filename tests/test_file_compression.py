"""Which collectors get zstd files, the gate every command starting one passes, and the
requeue's fresh files.

The real collectors write and the report reads these files in ``tests/e2e/`` and
``tests/test_report_cli.py``; here, the choice itself: by collector release, per combination,
and the same in the rendered config, the job step's two commands and the drain's reading of a
written config; and the step's start setting an earlier attempt's zstd files aside.
"""

from __future__ import annotations

import json
import re
import subprocess
from datetime import datetime, timezone
from pathlib import Path

import pytest
import yaml
import zstandard

from nemo_gym.orchestration.api import SubmitConfig
from nemo_gym.orchestration.executors.otel import (
    collector_step,
    collector_step_script,
    render_collector_config,
)
from nemo_gym.orchestration.executors.otel._job_dir.delivery_report import signal_files
from nemo_gym.orchestration.executors.otel._job_dir.signal_file import SignalFile
from nemo_gym.orchestration.executors.otel._render.drain_config import feature_gate_arguments

JOB_DIR = "/runs/g1/aime25"
GATE = "--feature-gates=exporter.file.nativeCompression"


def _render(example_mapping: dict, **otel: object) -> tuple[SubmitConfig, dict]:
    example_mapping["otel"].update(otel)
    config = SubmitConfig.from_dict(example_mapping)
    return config, yaml.safe_load(render_collector_config(config, "aime25", JOB_DIR))


@pytest.mark.parametrize(
    ("version", "compressed"),
    [
        ("0.130.0", False),
        ("0.141.0", False),
        ("0.153.9", False),  # the old names still load there, native zstd is not yet in
        ("0.154.0", True),  # contrib's file exporter has the gate from here on
        ("0.161.0", True),
        (None, True),  # unnamed: the newest line's newest collector
    ],
)
def test_collectors_with_native_zstd_write_zst_files(
    example_mapping: dict, version: str | None, compressed: bool
) -> None:
    config, document = _render(example_mapping, collector_version=version)
    files = {k: v for k, v in document["exporters"].items() if k.startswith("file/")}
    assert sorted(files) == ["file/logs", "file/metrics", "file/traces"]
    for name, body in files.items():
        signal = name.split("/")[1]
        assert body["path"] == f"{JOB_DIR}/otel/{signal}.jsonl" + (".zst" if compressed else "")
        assert body.get("compression") == ("zstd" if compressed else None)
    step = collector_step(config, "aime25", JOB_DIR)
    gates = [GATE] if compressed else []
    assert list(step.command[2:]) == gates
    assert list(step.drain_command[2:]) == gates
    assert list(feature_gate_arguments(document)) == gates


def test_without_file_exporters_no_gate_is_passed(example_mapping: dict) -> None:
    """The gate is registered by the file exporter: a collector built without it would refuse
    to start on an unknown gate."""
    config, document = _render(example_mapping, exporters=["otlp_http"])
    assert not any(k.startswith("file/") for k in document["exporters"])
    assert collector_step(config, "aime25", JOB_DIR).command[2:] == ()
    assert feature_gate_arguments(document) == ()


def test_an_override_that_drops_compression_drops_the_drains_gate() -> None:
    """The drain reads the written config, not the submit config: what it says goes."""
    plain = {"exporters": {"file/metrics": {"path": "/j/otel/metrics.jsonl", "format": "json"}}}
    assert feature_gate_arguments(plain) == ()
    plain["exporters"]["file/metrics"]["compression"] = "zstd"
    assert feature_gate_arguments(plain) == (GATE,)


def _frame(spans: int) -> bytes:
    line = {"resourceSpans": [{"scopeSpans": [{"spans": [{"name": "s"}] * spans}]}]}
    return zstandard.ZstdCompressor().compress((json.dumps(line) + "\n").encode())


def test_a_requeues_start_sets_the_earlier_attempts_zstd_files_aside(
    example_mapping: dict, tmp_path: Path
) -> None:
    """A killed collector's cut stream would make the next one's appended frames unreadable;
    the step's start renames it first, and the report reads both files in order."""
    job_dir = tmp_path / "runs" / "g1" / "aime25"
    otel = job_dir / "otel"
    otel.mkdir(parents=True)
    cut = _frame(2) + _frame(40)[:20]  # one whole frame, then a frame the kill cut
    (otel / "traces.jsonl.zst").write_bytes(cut)
    (otel / "logs.jsonl.zst").write_bytes(b"")  # nothing written: nothing to set aside
    config, _ = _render(example_mapping)
    script = collector_step_script(config, "aime25", str(job_dir))
    before = datetime.now(timezone.utc)
    subprocess.run(["bash", "-c", f"{script}\n_otel_collector_set_aside"], check=True, timeout=30)
    after = datetime.now(timezone.utc)
    (aside,) = otel.glob("traces.jsonl-*.zst")
    stamp = re.fullmatch(r"traces\.jsonl-(.{23})-restart\.zst", aside.name)
    assert stamp, aside.name
    when = datetime.strptime(stamp[1], "%Y-%m-%dT%H-%M-%S.%f").replace(tzinfo=timezone.utc)
    assert before.replace(microsecond=0) <= when <= after, (before, when, after)
    assert aside.read_bytes() == cut
    assert sorted(p.name for p in otel.iterdir()) == ["logs.jsonl.zst", aside.name]

    (otel / "traces.jsonl.zst").write_bytes(_frame(3))  # the requeued collector's stream
    files = [SignalFile(p) for p in signal_files(otel, "traces")]
    assert [f.path.name for f in files] == [aside.name, "traces.jsonl.zst"]
    spans = [
        len(json.loads(line)["resourceSpans"][0]["scopeSpans"][0]["spans"])
        for f in files
        for line in f.lines()
    ]
    assert spans == [2, 3]
    assert [f.cut_short for f in files] == [True, False]


def test_the_legacy_lines_start_renames_nothing(example_mapping: dict, tmp_path: Path) -> None:
    """JSON lines survive a cut: the legacy line appends to the earlier attempt's files."""
    otel = tmp_path / "runs" / "g1" / "aime25" / "otel"
    otel.mkdir(parents=True)
    (otel / "traces.jsonl").write_text('{"resourceSpans": []}\n{"resour')
    config, _ = _render(example_mapping, collector_version="0.141.0")
    script = collector_step_script(config, "aime25", str(otel.parent))
    subprocess.run(["bash", "-c", f"{script}\n_otel_collector_set_aside"], check=True, timeout=30)
    assert sorted(p.name for p in otel.iterdir()) == ["traces.jsonl"]
