"""``nemo-gym-otel report`` on job directories written here, in the collector's OTLP-JSON shape.

The end-to-end tests (``tests/e2e/test_delivery_report.py``) run the real collector; these
cover what a real run rarely shows: a half-written last line, a job without the delivery
report, a wrong JOB_DIR, the progress bar on a terminal, and a second collector process
appending to the same files (a requeued job).
"""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import zstandard
from support import helpers
from support.bounded import assert_within_bounds, run_bounded

from nemo_gym.orchestration.executors.otel._common.constants import DELIVERY_REPORT_MARKER

SPAN = {"traceId": "00" * 16, "spanId": "00" * 8, "name": "step"}
NOW = 1_700_000_000_000_000_000


def _attrs(**values: str) -> list[dict[str, Any]]:
    return [{"key": k, "value": {"stringValue": v}} for k, v in values.items()]


def _traces(spans: int) -> dict[str, Any]:
    scope = {"scope": {"name": "gym"}, "spans": [SPAN] * spans}
    return {"resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [scope]}]}


def _reading(instance: str, time: int, counters: dict[tuple[str, str], int]) -> dict[str, Any]:
    """One push of the collector's counters: {(name, exporter or receiver): value}."""
    metrics = []
    for (name, owner), value in counters.items():
        key = "receiver" if "receiver" in name else "exporter"
        point = {
            "timeUnixNano": str(time),
            "asInt": str(value),
            "attributes": _attrs(**{key: owner}),
        }
        metrics.append({"name": name, "sum": {"dataPoints": [point]}})
    resource = {
        "attributes": _attrs(
            **{DELIVERY_REPORT_MARKER: "collector", "service.instance.id": instance}
        )
    }
    scope = {"scope": {"name": "go.opentelemetry.io/collector"}, "metrics": metrics}
    return {"resourceMetrics": [{"resource": resource, "scopeMetrics": [scope]}]}


def _counters(spans: int) -> dict[tuple[str, str], int]:
    return {
        ("otelcol_receiver_accepted_spans", "otlp"): spans,
        ("otelcol_exporter_sent_spans", "file/traces"): spans,
        ("otelcol_exporter_sent_spans", "otlp_http/backend"): spans,
    }


def _job(tmp_path: Path, traces: list[str], metrics: list[dict[str, Any]]) -> Path:
    otel = tmp_path / "job" / "otel"
    otel.mkdir(parents=True)
    (otel / "traces.jsonl").write_text("".join(traces))
    (otel / "metrics.jsonl").write_text("".join(json.dumps(m) + "\n" for m in metrics))
    (otel / "logs.jsonl").write_text("")
    return otel.parent


def _signals(stdout: str) -> dict[str, Any]:
    return {s["signal"]: s for s in json.loads(stdout)["signals"]}


def test_complete_job_exits_0_with_counts(tmp_path: Path) -> None:
    job = _job(tmp_path, [json.dumps(_traces(3)) + "\n"], [_reading("a", NOW, _counters(3))])
    result = helpers.run_cli("report", job, "--format", "json", cwd=tmp_path)
    traces = _signals(result.stdout)["traces"]
    assert result.returncode == 0, result.stdout
    assert (traces["received"], traces["files"]["items"], traces["backend"]["sent"]) == (3, 3, 3)


def test_requeued_job_sums_both_collector_processes(tmp_path: Path) -> None:
    readings = [_reading("first", NOW, _counters(3)), _reading("second", NOW + 1, _counters(2))]
    job = _job(tmp_path, [json.dumps(_traces(3)) + "\n", json.dumps(_traces(2)) + "\n"], readings)
    result = helpers.run_cli("report", job, "--format", "json", cwd=tmp_path)
    traces = _signals(result.stdout)["traces"]
    assert result.returncode == 0, result.stdout
    assert (traces["received"], traces["backend"]["sent"]) == (5, 5)


def test_truncated_last_line_is_reported_not_fatal(tmp_path: Path) -> None:
    half = json.dumps(_traces(4))[:40]  # a killed collector's half-written batch, no newline
    job = _job(tmp_path, [json.dumps(_traces(3)) + "\n", half], [_reading("a", NOW, _counters(3))])
    result = helpers.run_cli("report", job, cwd=tmp_path)
    assert result.returncode == 1
    assert "the last line of traces.jsonl is truncated" in result.stdout, result.stdout


def _log_line(time_ns: int, message: str, **fields: object) -> str:
    """One line of the collector's console log, as both lines' binaries write it."""
    seconds, nanos = divmod(time_ns, 1_000_000_000)
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{nanos // 1_000_000:03d}Z"
    return f"{stamp}\tinfo\tservice@v0.161.0/service.go:1\t{message}\t{json.dumps(fields)}\n"


CLEAN_STOP = _log_line(NOW + 9_000_000_000, "Shutdown complete.")
LATE_TRACES = [json.dumps(_traces(3)) + "\n", json.dumps(_traces(2)) + "\n"]  # 2 after reading


def _dropped(time_ns: int, items: int, signal: str = "traces") -> str:
    return _log_line(
        time_ns,
        "Exporting failed. Dropping data.",
        **{"otelcol.component.id": "otlp_http/backend", "otelcol.signal": signal},
        error="interrupted due to shutdown",
        dropped_items=items,
    )


def test_items_after_the_last_reading_cannot_be_told_without_the_log(tmp_path: Path) -> None:
    job = _job(tmp_path, LATE_TRACES, [_reading("a", NOW, _counters(3))])
    result = helpers.run_cli("report", job, "--format", "json", cwd=tmp_path)
    document = json.loads(result.stdout)
    backend = _signals(result.stdout)["traces"]["backend"]
    assert result.returncode == 3, "cannot be told has its own exit status"
    assert document["verdict"] == "cannot be told" and not document["complete"]
    assert backend["reasons"] == [
        "cannot be told: 2 reached the files after the collector's last reading "
        "(no collector.log to tell their fate at the backend)"
    ]


def test_items_after_the_last_reading_are_judged_by_a_clean_log(tmp_path: Path) -> None:
    """The last reading is lost at shutdown; the log of a clean stop that dropped nothing says
    the late items reached the backend: complete, exit 0."""
    job = _job(tmp_path, LATE_TRACES, [_reading("a", NOW, _counters(3))])
    (job / "otel" / "collector.log").write_text(CLEAN_STOP)
    result = helpers.run_cli("report", job, "--format", "json", cwd=tmp_path)
    traces = _signals(result.stdout)["traces"]
    assert result.returncode == 0, result.stdout
    assert traces["verdict"] == "complete" and traces["after_last_reading"] == 2


def test_late_losses_in_the_log_make_the_job_incomplete(tmp_path: Path) -> None:
    job = _job(tmp_path, LATE_TRACES, [_reading("a", NOW, _counters(3))])
    log = tmp_path / "elsewhere.log"
    # Before the last reading: already counted by it (and 0 here); after it: lost.
    log.write_text(_dropped(NOW - 1_000_000_000, 7) + _dropped(NOW + 1_000_000_000, 2) + CLEAN_STOP)
    result = helpers.run_cli("report", job, "--format", "json", "--log", log, cwd=tmp_path)
    traces = _signals(result.stdout)["traces"]
    assert result.returncode == 1, result.stdout
    assert traces["verdict"] == "incomplete"
    assert traces["backend"]["reasons"] == [
        "2 lost at the backend after the collector's last reading (collector.log)"
    ]


def test_a_log_without_a_clean_stop_cannot_tell(tmp_path: Path) -> None:
    job = _job(tmp_path, LATE_TRACES, [_reading("a", NOW, _counters(3))])
    (job / "otel" / "collector.log").write_text(_log_line(NOW, "Everything is ready."))
    result = helpers.run_cli("report", job, cwd=tmp_path)
    assert result.returncode == 3
    assert "cannot be told: 2 reached the files" in result.stdout
    assert "collector.log shows no clean stop" in result.stdout


def test_job_without_delivery_report_cannot_be_told(tmp_path: Path) -> None:
    job = _job(tmp_path, [json.dumps(_traces(3)) + "\n"], [])
    result = helpers.run_cli("report", job, cwd=tmp_path)
    assert result.returncode == 3
    assert "set otel.delivery_report: true" in result.stdout, result.stdout


def test_a_lost_item_wins_over_an_unknown_one(tmp_path: Path) -> None:
    """incomplete (1) when anything is known lost, even beside what cannot be told."""
    half = json.dumps(_traces(4))[:40]
    job = _job(tmp_path, [*LATE_TRACES, half], [_reading("a", NOW, _counters(3))])
    result = helpers.run_cli("report", job, cwd=tmp_path)
    assert result.returncode == 1


def _report_to(job: Path, *, stdout: Any, stderr: Any, json_output: bool = False) -> Any:
    """The report command with its output streams where the test puts them."""
    return subprocess.run(
        [str(helpers.CLI), "report", str(job), *(["--format", "json"] if json_output else [])],
        stdout=stdout,
        stderr=stderr,
        env=helpers.cli_env(),
        text=True,
        timeout=60,
        check=False,
    )


def test_a_closed_pipe_ends_quietly(tmp_path: Path) -> None:
    """``report --format json | head -1``: the reader goes away; no traceback, no message."""
    job = _job(tmp_path, [json.dumps(_traces(3)) + "\n"], [_reading("a", NOW, _counters(3))])
    reader, writer = os.pipe()
    os.close(reader)  # closed before the command writes a byte
    try:
        result = _report_to(job, stdout=writer, stderr=subprocess.PIPE, json_output=True)
    finally:
        os.close(writer)
    assert result.stderr == ""
    assert result.returncode == 141
    shell = subprocess.run(
        ["bash", "-c", f"set -o pipefail; {helpers.CLI} report {job} --format json | head -1"],
        capture_output=True,
        text=True,
        env=helpers.cli_env(),
        timeout=60,
        check=False,
    )
    assert shell.stdout == "{\n" and shell.stderr == "", shell.stderr


def test_job_dir_without_otel_folder_is_a_usage_error(tmp_path: Path) -> None:
    result = helpers.run_cli("report", tmp_path, cwd=tmp_path)
    assert result.returncode == 2
    assert helpers.error_lines(result.stderr)[0].startswith("JOB_DIR: "), result.stderr


def test_progress_bar_only_on_a_terminal(tmp_path: Path) -> None:
    job = _job(tmp_path, [json.dumps(_traces(3)) + "\n"], [_reading("a", NOW, _counters(3))])
    leader, follower = pty.openpty()
    try:
        result = _report_to(job, stdout=subprocess.PIPE, stderr=follower)
        os.close(follower)
        follower = -1
        shown = os.read(leader, 65536).decode()
    finally:
        os.close(leader)
        if follower >= 0:
            os.close(follower)
    assert result.returncode == 0
    assert "reading telemetry [" in shown and "100%" in shown, shown
    assert "reading telemetry" not in result.stdout
    piped = helpers.run_cli("report", job, cwd=tmp_path)
    assert piped.stderr == ""


def test_rotated_files_are_read_oldest_first_with_the_live_one(tmp_path: Path) -> None:
    job = _job(tmp_path, [json.dumps(_traces(2)) + "\n"], [_reading("a", NOW, _counters(5))])
    rotated = job / "otel" / "traces-2026-12-03T16-20-00.000.jsonl"
    rotated.write_text(json.dumps(_traces(3)) + "\n")
    result = helpers.run_cli("report", job, "--format", "json", cwd=tmp_path)
    traces = _signals(result.stdout)["traces"]
    assert result.returncode == 0, result.stdout
    assert traces["files"]["items"] == 5, traces


def _zstd(*frames: str) -> bytes:
    """The collector's native compression: one zstd frame per flush, concatenated."""
    return b"".join(zstandard.ZstdCompressor().compress(f.encode()) for f in frames)


def _zstd_job(tmp_path: Path, traces: bytes, spans: int) -> Path:
    otel = tmp_path / "job" / "otel"
    otel.mkdir(parents=True)
    (otel / "traces.jsonl.zst").write_bytes(traces)
    reading = json.dumps(_reading("a", NOW, _counters(spans))) + "\n"
    (otel / "metrics.jsonl.zst").write_bytes(_zstd(reading))
    (otel / "logs.jsonl.zst").write_bytes(b"")  # created at start, nothing written yet
    return otel.parent


TWO_FLUSHES = (json.dumps(_traces(3)) + "\n", json.dumps(_traces(2)) + "\n")


def test_zstd_files_are_read_frame_after_frame(tmp_path: Path) -> None:
    job = _zstd_job(tmp_path, _zstd(*TWO_FLUSHES), 5)
    rotated = job / "otel" / "traces.jsonl-2026-12-03T16-20-00.000-size.zst"
    rotated.write_bytes(_zstd(json.dumps(_traces(4)) + "\n"))
    result = helpers.run_cli("report", job, "--format", "json", cwd=tmp_path)
    traces = _signals(result.stdout)["traces"]
    # 3 + 2 in the live file and 4 in the rotated one, against a reading of 5 written: the
    # files hold more than the reading (rotation's file is the older collector's), never fewer.
    assert traces["files"]["items"] == 9, traces
    assert traces["files"]["reasons"] == [], traces


def test_a_zstd_stream_cut_short_is_reported_with_what_it_holds(tmp_path: Path) -> None:
    whole, last = _zstd(TWO_FLUSHES[0]), _zstd(json.dumps(_traces(40)) * 50 + "\n")
    job = _zstd_job(tmp_path, whole + last[: len(last) // 2], 3)  # killed mid-frame
    result = helpers.run_cli("report", job, "--format", "json", cwd=tmp_path)
    traces = _signals(result.stdout)["traces"]
    assert result.returncode == 1, result.stdout
    assert traces["files"]["items"] == 3, traces
    assert traces["files"]["reasons"] == [
        "the last line of traces.jsonl.zst is truncated (the collector was killed)"
    ], traces


def test_without_a_zstd_reader_the_report_says_how_to_get_one(tmp_path: Path) -> None:
    job = _zstd_job(tmp_path, _zstd(*TWO_FLUSHES), 5)
    bare = tmp_path / "bin"  # a PATH with the console script's Python and nothing else
    bare.mkdir()
    (bare / "python").symlink_to(sys.executable)
    env = {**helpers.cli_env(), "PATH": str(bare)}
    result = helpers.run_cli("report", job, "--format", "json", cwd=tmp_path, env=env)
    traces = _signals(result.stdout)["traces"]
    if sys.version_info >= (3, 14):  # compression.zstd reads it without the command
        assert traces["files"]["items"] == 5, traces
        return
    assert result.returncode == 3, result.stdout  # cannot be told: nothing judged lost
    assert traces["verdict"] == "cannot be told", traces
    assert (
        "cannot be told: traces.jsonl.zst is zstd-compressed and this machine cannot read it: "
        "install the zstd command (apt-get install zstd, dnf install zstd) or use Python 3.14+"
    ) in traces["files"]["reasons"], traces


# -- what is not the collector's file: refused unread, in bounded memory --------------------------


DISK_QUEUE_CONFIG = (
    helpers.REPO / "tests" / "golden" / "long-job" / "current" / "otlp_http+file.yaml"
)
PUT_BACK = "; put back the file the job wrote there, or remove it"


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _device(path: Path) -> None:
    path.symlink_to("/dev/zero")


def _folder(path: Path) -> None:
    path.mkdir()


def _loop(path: Path) -> None:
    path.symlink_to(path.name)


@pytest.mark.parametrize(
    ("name", "make", "problem"),
    [
        ("logs.jsonl", _fifo, f"is not a regular file (a FIFO){PUT_BACK}"),
        ("traces.jsonl", _device, f"is not a regular file (a device){PUT_BACK}"),
        ("traces.jsonl", _folder, f"is not a regular file (a directory){PUT_BACK}"),
        ("traces.jsonl", _loop, "cannot read the file (Too many levels of symbolic links)"),
        ("collector.yaml", _fifo, f"is not a regular file (a FIFO){PUT_BACK}"),
        ("collector.yaml", _device, f"is not a regular file (a device){PUT_BACK}"),
        ("collector.log", _fifo, f"is not a regular file (a FIFO){PUT_BACK}"),
        ("drain.jsonl", _fifo, f"is not a regular file (a FIFO){PUT_BACK}"),
        ("targets/node.json", _fifo, f"is not a regular file (a FIFO){PUT_BACK}"),
    ],
)
def test_a_file_that_is_not_regular_is_named_and_refused_unread(
    tmp_path: Path, name: str, make: Any, problem: str
) -> None:
    """Exit 2, not the verdict incomplete (1): a script tells a job directory it cannot read
    from lost data. Nothing blocks on a FIFO or reads /dev/zero forever."""
    job = _job(tmp_path, [json.dumps(_traces(3)) + "\n"], [_reading("a", NOW, _counters(3))])
    # A job whose backend queue is on disk, so that its drain records are read too.
    (job / "otel" / "collector.yaml").write_bytes(DISK_QUEUE_CONFIG.read_bytes())
    path = job / "otel" / name
    path.unlink(missing_ok=True)
    path.parent.mkdir(exist_ok=True)
    make(path)
    result = run_bounded([helpers.CLI, "report", job], cwd=tmp_path, env=helpers.cli_env())
    assert result.returncode == 2, result.stderr
    assert helpers.error_lines(result.stderr) == [f"{path}: {problem}"]
    assert result.stdout == ""
    assert_within_bounds(result)


def _zeros_zstd(path: Path, mebibytes: int) -> None:
    """A zstd bomb: ``mebibytes`` of zeros, no line break, in a few kilobytes."""
    compressor = zstandard.ZstdCompressor().compressobj()
    block = bytes(1024 * 1024)
    with path.open("wb") as out:
        for _ in range(mebibytes):
            out.write(compressor.compress(block))
        out.write(compressor.flush())


@pytest.mark.parametrize("compressed", [False, True])
def test_a_line_longer_than_the_limit_is_reported_not_held(
    tmp_path: Path, compressed: bool
) -> None:
    """A 512 MiB line (a sparse file, or a zstd bomb) is skipped in chunks: the memory stays
    bounded; the line is named."""
    job = _job(tmp_path, [json.dumps(_traces(3)) + "\n"], [_reading("a", NOW, _counters(3))])
    if compressed:
        (job / "otel" / "logs.jsonl").unlink()
        name = "logs.jsonl.zst"
        _zeros_zstd(job / "otel" / name, 512)
    else:
        name = "logs.jsonl"
        os.truncate(job / "otel" / name, 512 * 1024 * 1024)
    args = [helpers.CLI, "report", job, "--format", "json"]
    result = run_bounded(args, cwd=tmp_path, env=helpers.cli_env())
    assert_within_bounds(result)
    logs = _signals(result.stdout)["logs"]
    assert result.returncode == 1, result.stderr
    assert logs["files"]["reasons"] == [
        "1 line(s) longer than 64 MiB, not read (the collector writes one batch per line, "
        f"far shorter): {name}:1"
    ], logs


def test_a_zst_file_that_is_no_zstd_stream_is_not_called_truncated(tmp_path: Path) -> None:
    job = _zstd_job(tmp_path, b"\x8f random bytes, not zstd " * 8, 0)
    result = helpers.run_cli("report", job, "--format", "json", cwd=tmp_path)
    traces = _signals(result.stdout)["traces"]
    assert result.returncode == 1, result.stdout
    assert traces["files"]["reasons"] == [
        "traces.jsonl.zst is not a zstd stream (not read; the collector writes a .zst file "
        "only compressed)"
    ], traces


def test_lines_are_read_in_chunks_and_long_ones_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Lines across chunk boundaries are whole; one over the limit is None, the next intact."""
    from nemo_gym.orchestration.executors.otel._common import text_file
    from nemo_gym.orchestration.executors.otel._job_dir import signal_file

    monkeypatch.setattr(text_file, "_CHUNK", 4)
    monkeypatch.setattr(signal_file, "LINE_LIMIT_BYTES", 5)
    path = tmp_path / "traces.jsonl"
    path.write_bytes(b"ab\ncdefghij\nk\n\nabcde\nabcd\nlmn")
    lines = list(signal_file.SignalFile(path).lines())
    assert lines == [b"ab\n", None, b"k\n", b"\n", None, b"abcd\n", b"lmn"]


def _refused_by_file(time_ns: int, error: str, items: int) -> str:
    """The file exporter's line for a write that failed (read from both lines' binaries)."""
    return _log_line(
        time_ns,
        "Exporting failed. Rejecting data.",
        **{
            "otelcol.component.id": "file/traces",
            "otelcol.signal": "traces",
            "error": f"write /job/otel/traces.jsonl: {error}",
            "rejected_items": items,
        },
    )


def test_a_full_disk_is_named_not_a_kill(tmp_path: Path) -> None:
    half = json.dumps(_traces(4))[:40]  # what fit of the batch
    job = _job(tmp_path, [json.dumps(_traces(3)) + "\n", half], [_reading("a", NOW, _counters(3))])
    log = _refused_by_file(NOW + 1, "no space left on device", 4)
    (job / "otel" / "collector.log").write_text(log, encoding="utf-8")
    result = helpers.run_cli("report", job, "--format", "json", cwd=tmp_path)
    reasons = _signals(result.stdout)["traces"]["files"]["reasons"]
    assert result.returncode == 1
    assert reasons[:2] == [
        "the last line of traces.jsonl is truncated (a write that did not fit: no space left on device)",
        "4 not written to the files: no space left on device (the job directory's file system was "
        "full; collector.log)",
    ]


def test_the_disk_budget_is_named_where_it_refused(tmp_path: Path) -> None:
    job = _job(tmp_path, [json.dumps(_traces(3)) + "\n"], [_reading("a", NOW, _counters(3))])
    mib = 1024 * 1024
    budget = f"free={32 * mib} budget={16 * mib} file={2 * mib} queue={mib}\n"
    (job / "otel" / "disk-budget").write_text(budget, encoding="utf-8")
    log = _refused_by_file(NOW + 1, "file too large", 7) + _refused_by_file(
        NOW + 2, "file too large", 5
    )
    (job / "otel" / "collector.log").write_text(log, encoding="utf-8")
    result = helpers.run_cli("report", job, "--format", "json", cwd=tmp_path)
    document = json.loads(result.stdout)
    reasons = _signals(result.stdout)["traces"]["files"]["reasons"]
    assert result.returncode == 1
    assert reasons == [
        "12 refused by the files, the newest, at the disk budget (16.0 MiB, 50% of the 32.0 MiB "
        "free at the start: 2.0 MiB per file, the backend queue 1.0 MiB per signal) (collector.log)"
    ]
    # A budget written before otel.disk_budget_percent existed was its default's.
    assert document["disk_budget"] == {
        "free_bytes": 32 * mib,
        "budget_bytes": 16 * mib,
        "file_bytes": 2 * mib,
        "queue_bytes": mib,
        "percent": 50,
        "cap_bytes": None,
    }


def test_a_capped_disk_budget_is_named_by_its_key(tmp_path: Path) -> None:
    """Where otel.disk_budget_megabytes set the budget, below the share of the free space."""
    job = _job(tmp_path, [json.dumps(_traces(3)) + "\n"], [_reading("a", NOW, _counters(3))])
    mib = 1024 * 1024
    budget = f"free={400 * mib} budget={14 * mib} file={2 * mib} percent=25 cap={14 * mib}\n"
    (job / "otel" / "disk-budget").write_text(budget, encoding="utf-8")
    log = _refused_by_file(NOW + 1, "file too large", 7)
    (job / "otel" / "collector.log").write_text(log, encoding="utf-8")
    result = helpers.run_cli("report", job, "--format", "json", cwd=tmp_path)
    reasons = _signals(result.stdout)["traces"]["files"]["reasons"]
    assert result.returncode == 1
    assert reasons == [
        "7 refused by the files, the newest, at the disk budget (14.0 MiB, "
        "otel.disk_budget_megabytes, below 25% of the 400.0 MiB free at the start: 2.0 MiB per "
        "file) (collector.log)"
    ]
