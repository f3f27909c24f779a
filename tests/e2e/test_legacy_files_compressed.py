"""The legacy line's files, rotated by the real collector and compressed by the job step.

Collectors before v0.154.0 write JSON lines only; the step compresses each file their rotation
finished (``_step/finished_files.py``). Here the real legacy collector rotates at 1 MB under
4 MB of log records, the step's own pass runs once while it writes and once after its stop (as
the step does), and every record is read back from the compressed files and the live one, by
``zstd`` itself, by the tests' reader, by the README's example and by ``nemo-gym-otel report``.
"""

from __future__ import annotations

import json
import secrets
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from support import helpers
from support.e2e_job import TOKEN_ENV, StepCollector, running
from support.e2e_life import Life
from support.e2e_otlp import post_json
from support.otelcol import collector_binary

from nemo_gym.orchestration.executors.otel._common.constants import DELIVERY_REPORT_INTERVAL_SECONDS

pytestmark = pytest.mark.collector

HOST = "127.0.0.73"
BATCHES = 40  # x RECORDS x about 1 KB: 4 MB of JSON lines, four rotations at 1 MB
RECORDS = 100


def _post_logs(batch: int) -> None:
    records = [{"body": {"stringValue": f"{batch}-{i}-" + "x" * 1000}} for i in range(RECORDS)]
    resource = {"attributes": [{"key": "service.name", "value": {"stringValue": "bulk"}}]}
    post_json(
        HOST,
        "logs",
        {"resourceLogs": [{"resource": resource, "scopeLogs": [{"logRecords": records}]}]},
    )


def test_every_record_is_read_back_from_the_compressed_files(tmp_path: Path) -> None:
    zstd = shutil.which("zstd")
    assert zstd, "the zstd command is needed (.ci/run installs it)"
    rotation = {"max_megabytes": 1, "max_backups": 0}
    life = Life(
        "legacy",
        HOST,
        tmp_path,
        collector_binary("legacy"),
        secrets.token_urlsafe(48),
        otel={"file_rotation": rotation, "delivery_report": True},
    )

    def compress_pass() -> None:
        life.step_call("_otel_collector_compress_finished")

    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), TOKEN_ENV: life.token}
    env["SLURM_JOB_ID"] = "4242"
    try:
        collector = StepCollector(
            life.binary, life.config_path, env, life.job_dir, tmp_path / "c.log", HOST
        )
        life.prepare_files()  # as the step's start does, before the collector
        with running(collector):
            collector.wait_healthy()
            for batch in range(BATCHES):
                _post_logs(batch)
                time.sleep(0.25)  # one request per batch (the batch processor: 200ms)
                if batch == BATCHES // 2:
                    compress_pass()  # the background pass, while the collector writes
            time.sleep(3 * DELIVERY_REPORT_INTERVAL_SECONDS)  # readings after the last item
            collector.stop()
        compress_pass()  # the stop's last pass
    finally:
        life.close()
    otel = life.otel_dir
    finished = sorted(otel.glob("logs-*.jsonl.zst"))
    assert len(finished) >= 3, sorted(p.name for p in otel.iterdir())
    assert not list(otel.glob("logs-*.jsonl")) and not list(otel.glob("*.part")), sorted(
        p.name for p in otel.iterdir()
    )
    subprocess.run([zstd, "-tq", *map(str, finished)], check=True, timeout=60)
    text = (
        b"".join(
            subprocess.run([zstd, "-dcq", str(p)], check=True, capture_output=True).stdout
            for p in finished
        )
        + (otel / "logs.jsonl").read_bytes()
    )
    bodies = [
        record["body"]["stringValue"]
        for line in text.decode("utf-8").splitlines()
        for group in json.loads(line)["resourceLogs"]
        for scope in group["scopeLogs"]
        for record in scope["logRecords"]
    ]
    want = {f"{b}-{i}-" + "x" * 1000 for b in range(BATCHES) for i in range(RECORDS)}
    assert len(bodies) == len(want) and set(bodies) == want, len(bodies)
    assert len([r for r in life.file_items("logs") if r.body in want]) == len(want)
    shown = helpers.run_readme_files_example(1, life.job_dir)  # the legacy line's example
    records = [json.loads(row)["body"]["stringValue"] for row in shown.splitlines()]
    assert sorted(records) == sorted(bodies), "the README's example reads other records"
    result = helpers.run_cli(
        "report", life.job_dir, "--format", "json", "--log", tmp_path / "c.log", cwd=tmp_path
    )
    document = json.loads(result.stdout)
    logs = {s["signal"]: s for s in document["signals"]}["logs"]
    assert logs["files"]["items"] == logs["files"]["written"] == len(want), logs
    assert logs["files"]["complete"], logs
    traces = {s["signal"]: s for s in document["signals"]}["traces"]
    assert traces["files"]["complete"] and traces["files"]["items"] == 0, traces
