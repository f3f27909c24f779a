"""The job directory's file system fills (issue 37, "A full disk costs the backend nothing" and
"Room for the job"), on the real collector of each line, started as the job step's start starts
it (its disk budget: ``_step/disk_budget.py``), on the size-limited file systems of
``.ci/job-fs-up`` (tmpfs, 64 MiB: a quota).

- **Full disk**: once the collector is healthy and the backend holds items of each of the job's
  servers (``e2e_pusher.py``, the real OpenTelemetry SDK, pushing until stopped), the job's
  results take every free byte. The servers push on for ``FULL_SECONDS``: the backend holds every
  item they report accepted (counted per item id), the files lose what did not fit, and
  ``report`` says the disk was full, not that the collector was killed.
- **Budget**: the job's results take half the file system before the start; a 503 outage meets
  2 MB/s of spans (1 KB random attribute each) for 40 s. The job keeps at least 8 MiB free, the
  collector stays healthy, and ``report`` exits 1 naming the disk budget.
"""

from __future__ import annotations

import errno
import json
import os
import secrets
import time
from pathlib import Path
from typing import Any

import pytest
from support import helpers, job_fs
from support.e2e_job import running, wait_for
from support.e2e_job_end import Pushers, count_differences, held, read_reports
from support.e2e_life import Life
from support.e2e_otlp import SIGNALS, post_json
from support.e2e_tally import at_backend, in_files
from support.otelcol import collector_binary

pytestmark = pytest.mark.collector

LINES = tuple(helpers.line_metadata())
FULL_SECONDS = 10
OUTAGE_SECONDS = 40
BYTES_PER_SECOND = 2_000_000
SPAN_ATTRIBUTE_BYTES = 1000
MIB = 1024 * 1024


def _host(line: str, test: int) -> str:
    return f"127.0.0.{150 + 2 * test + LINES.index(line)}"


def _free(mount: Path) -> int:
    stat = os.statvfs(mount)
    return stat.f_bavail * stat.f_frsize


def _take(mount: Path, size: int | None) -> None:
    """The job's own results: ``size`` bytes of the file system, or every free byte (None)."""
    fd = os.open(mount / "job-results", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        left = size
        for chunk in (MIB, 64 * 1024, 4096, 1):
            block = os.urandom(chunk)
            while left is None or left >= chunk:
                try:
                    os.write(fd, block)
                except OSError as exc:
                    assert exc.errno == errno.ENOSPC, exc
                    break
                if left is not None:
                    left -= chunk
    finally:
        os.close(fd)


def _life(line: str, test: int, mount: Path, tmp_path: Path) -> tuple[Life, dict[str, str], Path]:
    """A job whose directory is on ``mount``, with the delivery report on; the collector's
    environment; a folder outside the mount for the tests' own files."""
    life = Life(
        line,
        _host(line, test),
        mount,
        collector_binary(line),
        secrets.token_urlsafe(48),
        otel={"delivery_report": True},
    )
    outside = tmp_path / "outside"
    outside.mkdir()
    return life, life.collector_env(outside), outside


def _report(life: Life) -> tuple[int, dict[str, Any]]:
    result = helpers.run_cli("report", life.job_dir, "--format", "json", cwd=life.tmp_path)
    return result.returncode, json.loads(result.stdout)


def _reasons(document: dict[str, Any]) -> list[str]:
    return [
        reason
        for signal in document["signals"]
        for part in (signal["files"], signal["backend"] or {})
        for reason in part.get("reasons", [])
    ]


@pytest.mark.parametrize("line", LINES)
def test_a_full_disk_costs_the_backend_nothing(line: str, tmp_path: Path) -> None:
    with job_fs.small_file_system() as mount:
        life, env, outside = _life(line, 0, mount, tmp_path)
        try:
            # Where the job step writes it: on the file system that fills.
            collector = life.collector(env, life.otel_dir / "collector.log")
            with running(collector):
                collector.wait_healthy()
                pushers = Pushers(outside, life.host)
                try:
                    wait_for(
                        lambda: (
                            {
                                s.resource.get("service.name.override")
                                for s in life.backend.items("traces")
                            }
                            >= set(pushers.reports)
                        ),
                        60,
                        "every server's first items at the backend",
                    )
                    _take(mount, None)
                    full_at = time.time()
                    time.sleep(FULL_SECONDS)
                    free_while_full = _free(mount)
                    pushers.stop()
                except BaseException:
                    pushers.kill()
                    raise
                end = read_reports(pushers.reports, full_at)
                wait_for(
                    lambda: not any(end.accepted[s] - held(at_backend(life))[s] for s in SIGNALS),
                    60,
                    "the backend to hold every accepted item",
                    0.5,
                )
                collector.stop()
            life.stop_drain(env, outside / "drain.log")
            code, document = _report(life)
            files = held(in_files(life))
            backend = held(at_backend(life))
        finally:
            life.close()
    while_full = {
        s: sum(1 for (sig, _), t in end.accepted_at.items() if sig == s and t > 0) for s in SIGNALS
    }
    short = {s: sum((end.accepted[s] - files[s]).values()) for s in SIGNALS}
    # The figures, for the docs' "Measured" (shown with pytest -s).
    print(
        f"{line}: accepted while full {while_full}; files short {short}; report: {_reasons(document)}"
    )
    assert free_while_full == 0, free_while_full
    assert while_full["traces"] > 100 and while_full["logs"] > 50, while_full
    missing = {s: end.accepted[s] - backend[s] for s in SIGNALS}
    assert not any(missing.values()), count_differences("backend", backend, end.accepted)
    assert short["traces"] > 0, short  # the files lost what did not fit
    reasons = _reasons(document)
    assert code == 1, document
    assert any("no space left on device" in r for r in reasons), reasons
    assert not any("killed" in r for r in reasons), reasons


def _spans(batch: int, count: int) -> dict[str, Any]:
    """OTLP/JSON spans of about ``SPAN_ATTRIBUTE_BYTES`` each, their attribute random (the
    files' zstd cannot shrink it)."""
    spans = [
        {
            "traceId": secrets.token_hex(16),
            "spanId": secrets.token_hex(8),
            "name": f"bulk-{batch}",
            "startTimeUnixNano": "1",
            "endTimeUnixNano": "2",
            "attributes": [
                {"key": "r", "value": {"stringValue": secrets.token_hex(SPAN_ATTRIBUTE_BYTES // 2)}}
            ],
        }
        for _ in range(count)
    ]
    resource = {"attributes": [{"key": "service.name", "value": {"stringValue": "bulk"}}]}
    return {"resourceSpans": [{"resource": resource, "scopeSpans": [{"spans": spans}]}]}


@pytest.mark.parametrize("line", LINES)
def test_an_outage_leaves_the_job_its_room(line: str, tmp_path: Path) -> None:
    with job_fs.small_file_system() as mount:
        _take(mount, job_fs.SMALL_BYTES // 2)
        life, env, _ = _life(line, 1, mount, tmp_path)
        lowest, unhealthy = _free(mount), []
        try:
            life.proxy.start_outage()
            collector = life.collector(env, life.otel_dir / "collector.log")
            with running(collector):
                collector.wait_healthy()
                per_request = 500
                requests = BYTES_PER_SECOND // (per_request * SPAN_ATTRIBUTE_BYTES)
                began = time.monotonic()
                for second in range(OUTAGE_SECONDS):
                    for request in range(requests):
                        post_json(
                            life.host, "traces", _spans(second * requests + request, per_request)
                        )
                    lowest = min(lowest, _free(mount))
                    if not collector.healthy():
                        unhealthy.append(second)
                    time.sleep(max(0.0, began + second + 1 - time.monotonic()))
                lowest = min(lowest, _free(mount))
                collector.stop()
            code, document = _report(life)
        finally:
            life.close()
    print(
        f"{line}: {lowest / MIB:.1f} MiB free at the lowest; report (exit {code}): {_reasons(document)}"
    )
    assert lowest >= 8 * MIB, f"{lowest / MIB:.1f} MiB free at the lowest"
    assert not unhealthy, f"the collector was not healthy at second(s) {unhealthy}"
    reasons = _reasons(document)
    assert code == 1, document
    assert any("disk budget" in r for r in reasons), reasons
