"""The job step compresses the files a legacy collector's rotation finished.

Collectors before v0.154.0 write JSON lines only; their file exporters rotate, and the step's
own bash compresses every renamed file with the ``zstd`` command (``_step/finished_files.py``).
Here that bash, run as the step runs it, on files laid out as the exporter names them; the real
legacy collector rotating under load and the report reading the result are in
``tests/e2e/test_legacy_files_compressed.py``, the start and stop on Slurm in ``tests/slurm/``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest
import yaml
import zstandard
from support import helpers

from nemo_gym.orchestration.api import SubmitConfig
from nemo_gym.orchestration.executors.otel import (
    collector_step,
    collector_step_script,
    render_collector_config,
)
from nemo_gym.orchestration.executors.otel._job_dir.delivery_report import signal_files

LEGACY = "0.141.0"
# A job directory a shell would split or expand, were a word of it left unquoted (braces and a
# tilde, not a wildcard: the example scrapes targets, so '*', '?', '[' and '\\' are refused in its
# job directory; tests/test_job_dir.py).
HOSTILE = "it's a $(touch PWNED) `touch PWNED2` {a,b} ~"


def _step_bash(example_mapping: dict, job_dir: Path, **otel: object) -> str:
    example_mapping["otel"].update(otel)
    config = SubmitConfig.from_dict(example_mapping)
    return collector_step_script(config, "aime25", str(job_dir))


def _run(script: str, call: str, path: str | None = None) -> None:
    env = {**os.environ, "PATH": path} if path is not None else None
    bash = shutil.which("bash")
    assert bash
    subprocess.run([bash, "-c", f"{script}\n{call}"], check=True, timeout=60, env=env)


def _finished(otel: Path, signal: str, minute: int, lines: int) -> bytes:
    text = "".join(f'{{"resourceLogs": [], "n": {minute * 1000 + i}}}\n' for i in range(lines))
    (otel / f"{signal}-2026-12-04T10-{minute:02d}-00.000.jsonl").write_text(text)
    return text.encode()


@pytest.fixture
def otel_dir(tmp_path: Path) -> Path:
    otel = tmp_path / HOSTILE / "aime25" / "otel"
    otel.mkdir(parents=True)
    return otel


def test_legacy_collectors_rotate_and_the_step_names_what_it_compresses(
    example_mapping: dict,
) -> None:
    example_mapping["otel"]["collector_version"] = LEGACY
    config = SubmitConfig.from_dict(example_mapping)
    document = yaml.safe_load(render_collector_config(config, "aime25", "/runs/g1/aime25"))
    for signal in ("traces", "metrics", "logs"):
        body = document["exporters"][f"file/{signal}"]
        assert body["path"] == f"/runs/g1/aime25/otel/{signal}.jsonl"
        assert body["rotation"] == {"max_megabytes": 100, "max_backups": 0}
        assert "append" not in body and "compression" not in body
    step = collector_step(config, "aime25", "/runs/g1/aime25")
    assert step.finished_files == tuple(
        f"/runs/g1/aime25/otel/{s}-*.jsonl" for s in ("traces", "metrics", "logs")
    )
    assert step.finished_files_kept == 0


def test_the_users_rotation_is_kept_and_bounds_the_compressed_files(
    example_mapping: dict,
) -> None:
    rotation = {"max_megabytes": 8, "max_backups": 3}
    example_mapping["otel"].update(collector_version=LEGACY, file_rotation=rotation)
    config = SubmitConfig.from_dict(example_mapping)
    document = yaml.safe_load(render_collector_config(config, "aime25", "/runs/g1/aime25"))
    assert document["exporters"]["file/traces"]["rotation"] == rotation
    assert collector_step(config, "aime25", "/runs/g1/aime25").finished_files_kept == 3


@pytest.mark.parametrize("version", [None, "0.161.0"])
def test_collectors_that_compress_themselves_leave_the_step_nothing(
    example_mapping: dict, tmp_path: Path, version: str | None
) -> None:
    step_config = SubmitConfig.from_dict(
        {**example_mapping, "otel": {**example_mapping["otel"], "collector_version": version}}
    )
    assert collector_step(step_config, "aime25", "/runs/g1/aime25").finished_files == ()
    job_dir = tmp_path / "aime25"
    script = _step_bash(example_mapping, job_dir, collector_version=version)
    assert "_otel_collector_compressing &" not in script
    otel = job_dir / "otel"
    otel.mkdir(parents=True)
    _finished(otel, "traces", 1, 3)  # not a name this collector writes; left alone
    _run(script, "_otel_collector_compress_finished")
    assert sorted(p.name for p in otel.iterdir()) == ["traces-2026-12-04T10-01-00.000.jsonl"]


def test_every_finished_file_becomes_its_zstd_stream_and_the_live_file_stays(
    example_mapping: dict, otel_dir: Path
) -> None:
    script = _step_bash(example_mapping, otel_dir.parent, collector_version=LEGACY)
    first = _finished(otel_dir, "traces", 1, 5)
    second = _finished(otel_dir, "traces", 2, 7)
    logs = _finished(otel_dir, "logs", 1, 2)
    (otel_dir / "traces.jsonl").write_text('{"live": 1}\n')
    _run(script, "_otel_collector_compress_finished")
    names = sorted(p.name for p in otel_dir.iterdir())
    assert names == [
        "logs-2026-12-04T10-01-00.000.jsonl.zst",
        "traces-2026-12-04T10-01-00.000.jsonl.zst",
        "traces-2026-12-04T10-02-00.000.jsonl.zst",
        "traces.jsonl",
    ]
    read = zstandard.ZstdDecompressor()
    for name, want in (
        ("traces-2026-12-04T10-01-00.000.jsonl.zst", first),
        ("traces-2026-12-04T10-02-00.000.jsonl.zst", second),
        ("logs-2026-12-04T10-01-00.000.jsonl.zst", logs),
    ):
        assert read.stream_reader((otel_dir / name).read_bytes()).read() == want
    assert (otel_dir / "traces.jsonl").read_text() == '{"live": 1}\n'
    assert [p.name for p in signal_files(otel_dir, "traces")] == names[1:]
    assert not list(otel_dir.parent.parent.glob("PWNED*")), "a word of the path was run"


def test_beyond_max_backups_the_oldest_compressed_files_go(
    example_mapping: dict, otel_dir: Path
) -> None:
    rotation = {"max_megabytes": 8, "max_backups": 2}
    script = _step_bash(
        example_mapping, otel_dir.parent, collector_version=LEGACY, file_rotation=rotation
    )
    for minute in (1, 2, 3):
        _finished(otel_dir, "metrics", minute, 1)
    _finished(otel_dir, "traces", 1, 1)  # each signal counts its own
    _run(script, "_otel_collector_compress_finished")
    _finished(otel_dir, "metrics", 4, 1)
    _run(script, "_otel_collector_compress_finished")
    assert sorted(p.name for p in otel_dir.iterdir()) == [
        "metrics-2026-12-04T10-03-00.000.jsonl.zst",
        "metrics-2026-12-04T10-04-00.000.jsonl.zst",
        "traces-2026-12-04T10-01-00.000.jsonl.zst",
    ]


@pytest.mark.parametrize("finished", [0, 2], ids=["shorter than one rotation", "rotated twice"])
def test_the_readmes_legacy_example_reads_every_log_record_once_in_order(
    example_mapping: dict, otel_dir: Path, finished: int
) -> None:
    """The README's second example under "The job's files", as written, on what the step leaves:
    the compressed finished files, oldest first, then the live file."""
    script = _step_bash(example_mapping, otel_dir.parent, collector_version=LEGACY)
    records = []
    for minute in range(1, finished + 1):
        batch = [{"body": {"stringValue": f"minute {minute} record {i}"}} for i in range(3)]
        records += batch
        line = json.dumps({"resourceLogs": [{"scopeLogs": [{"logRecords": batch}]}]})
        (otel_dir / f"logs-2026-12-04T10-{minute:02d}-00.000.jsonl").write_text(line + "\n")
    live = [{"body": {"stringValue": "live"}}]
    records += live
    line = json.dumps({"resourceLogs": [{"scopeLogs": [{"logRecords": live}]}]})
    (otel_dir / "logs.jsonl").write_text(line + "\n")
    _run(script, "_otel_collector_compress_finished")
    assert len(list(otel_dir.glob("logs-*.jsonl.zst"))) == finished
    shown = helpers.run_readme_files_example(1, otel_dir.parent)
    assert [json.loads(row) for row in shown.splitlines()] == records


def test_without_the_zstd_command_the_files_stay_as_they_are(
    example_mapping: dict, otel_dir: Path, tmp_path: Path
) -> None:
    script = _step_bash(example_mapping, otel_dir.parent, collector_version=LEGACY)
    want = _finished(otel_dir, "traces", 1, 3)
    tools = tmp_path / "no-zstd"
    tools.mkdir()
    for tool in ("mv", "rm"):  # everything the pass uses but zstd
        found = shutil.which(tool)
        assert found, tool
        (tools / tool).symlink_to(found)
    _run(script, "_otel_collector_compress_finished", path=str(tools))
    (only,) = otel_dir.iterdir()
    assert only.read_bytes() == want


def test_the_background_pass_ends_at_once_on_term(example_mapping: dict, otel_dir: Path) -> None:
    """The stop ends it before its last pass: neither it nor its 30 s pause may outlive the
    TERM, also in a batch script under ``set -euo pipefail`` (the README's), where a pause left
    behind would hold the script's output open for its 30 s."""
    script = _step_bash(example_mapping, otel_dir.parent, collector_version=LEGACY)
    bash = shutil.which("bash")
    assert bash
    calls = (
        "_otel_collector_compressing & _otel_collector_compressor=$!\n"
        "_otel_collector_pause 0.5\n"
        "_otel_collector_end_compressing\n"
        "echo ended\n"
    )
    started = time.monotonic()
    done = subprocess.run(
        [bash, "-c", f"set -euo pipefail\n{script}\n{calls}"],
        capture_output=True,  # returns once every process holding the output has ended
        text=True,
        timeout=60,
        check=True,
    )
    assert done.stdout == "ended\n"
    assert time.monotonic() - started < 10


def test_the_start_creates_the_live_files_a_rotating_exporter_opens_late(
    example_mapping: dict, otel_dir: Path
) -> None:
    """A signal the job never sends is an empty file, not a missing one, which the report would
    call a loss; an existing live file (a requeue) keeps what it holds."""
    script = _step_bash(example_mapping, otel_dir.parent, collector_version=LEGACY)
    (otel_dir / "traces.jsonl").write_text('{"earlier": 1}\n')
    _run(script, "_otel_collector_live_files")
    assert {p.name: p.read_text() for p in otel_dir.iterdir()} == {
        "traces.jsonl": '{"earlier": 1}\n',
        "metrics.jsonl": "",
        "logs.jsonl": "",
    }
