"""Outages against the disk queue (issue 19), on the real collector of each line, in seconds.

Each scenario is one job directory and backend on a loopback address of its own
(``support/e2e_life.py``): the backend starts answering 503 while the job's last batches are on
their way, and the job ends during the outage. Then ``nemo-gym-otel drain`` runs with the
backend back:

- ``stopped``: the job's stop (TERM, then the stop's drain, which meets the outage too) leaves
  the refused items on disk; the drain sends them, a second drain sends nothing;
- ``killed``: SIGKILL instead of the stop, with the last batch already on disk; the drain,
  run where the job directory was moved to, sends everything that reached the disk queue.

Every item reaches the backend exactly as often as it was sent (the spans' ids are unique), the
token is in no file of the job directory (the queue's files included), and ``drain.jsonl``
records each drain. The long versions (10-minute outages at the large job's load) are in
``python -m benchmarks --only long_jobs``.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import yaml
from support import helpers
from support.e2e_job import TOKEN_ENV, StepCollector, running
from support.e2e_life import FAULTS, Life
from support.e2e_otlp import SIGNALS, post_json
from support.e2e_tally import assert_holds_exactly, at_backend, found, in_files, sent
from support.otelcol import collector_binary

from nemo_gym.orchestration.executors.otel._common.constants import DELIVERY_REPORT_INTERVAL_SECONDS

pytestmark = pytest.mark.collector

LINES = tuple(helpers.line_metadata())
SCENARIOS = ("stopped", "killed")


@pytest.fixture(scope="module", params=LINES)
def outages(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Future[Life]]]:
    line = request.param
    binary = collector_binary(line)
    folders = {name: tmp_path_factory.mktemp(f"outage-{line}-{name}") for name in SCENARIOS}
    started: list[Life] = []

    def live(index: int, name: str) -> Life:
        host = f"127.0.0.{100 + 10 * LINES.index(line) + index}"
        life = Life(line, host, folders[name], binary, secrets.token_urlsafe(48))
        started.append(life)
        life.start(FAULTS["503"], kill=name == "killed")
        return life

    with ThreadPoolExecutor(max_workers=len(SCENARIOS)) as pool:
        futures = {name: pool.submit(live, i, name) for i, name in enumerate(SCENARIOS)}
        for future in futures.values():
            future.exception()
    yield futures
    for life in started:
        life.close()


def _report(life: Life) -> tuple[int, dict[str, Any]]:
    result = helpers.run_cli("report", life.job_dir, "--format", "json", cwd=life.tmp_path)
    return result.returncode, json.loads(result.stdout)


def drain(life: Life, job_dir: Path | None = None) -> tuple[int, dict[str, Any]]:
    result = helpers.run_cli(
        "drain",
        job_dir or life.job_dir,
        "--collector",
        life.binary,
        "--format",
        "json",
        "--timeout",
        "120",
        cwd=life.tmp_path,
        env=helpers.cli_env(**{TOKEN_ENV: life.token}),
    )
    assert result.returncode in (0, 4), result.stderr
    return result.returncode, json.loads(result.stdout)


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_drain_sends_what_the_outage_left_exactly_once(
    outages: dict[str, Future[Life]], scenario: str
) -> None:
    life = outages[scenario].result()
    before = found(at_backend(life))
    want = sent(life.runs)
    assert any(want[s] - before[s] for s in SIGNALS), "the outage cost the backend nothing"
    assert any((life.otel_dir / "queue").iterdir()), "no queue files in the job directory"
    life.proxy.end_outage()

    if scenario == "killed":
        # Drained where the job directory was moved to: drain.yaml names the old path, where
        # the storage would create an empty queue and the drain report nothing queued.
        moved = life.job_dir.with_name(f"{life.job_dir.name}-moved")
        life.job_dir.rename(moved)
        status, outcome = drain(life, moved)
        assert not life.job_dir.exists(), "the drain wrote at the job directory's old path"
        moved.rename(life.job_dir)
    else:
        status, outcome = drain(life)

    assert status == 0 and outcome["empty"], outcome
    assert sum(outcome["sent"].values()) > 0, outcome
    files = found(in_files(life))
    if scenario == "stopped":
        assert_holds_exactly(files, want, "files")
    # What the files hold reached the disk queue too: the backend holds exactly that.
    assert_holds_exactly(found(at_backend(life)), files, "backend after the drain")
    again, second = drain(life)
    assert again == 0 and second["empty"] and sum(second["sent"].values()) == 0, second
    records = (life.otel_dir / "drain.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(r)["empty"] for r in records] == [True, True]
    token = life.token.encode()
    leaks = [p.name for p in life.job_dir.rglob("*") if p.is_file() and token in p.read_bytes()]
    assert not leaks, f"the token is written in {leaks}"


def _post_logs(host: str, batch: int, records: int, body_bytes: int) -> None:
    """One OTLP/HTTP JSON request of ``records`` log records of ``body_bytes`` each."""
    body = {
        "resourceLogs": [
            {
                "resource": {
                    "attributes": [{"key": "service.name", "value": {"stringValue": "bulk"}}]
                },
                "scopeLogs": [
                    {
                        "logRecords": [
                            {"body": {"stringValue": f"{batch}-{i}-" + "x" * body_bytes}}
                            for i in range(records)
                        ]
                    }
                ],
            }
        ]
    }
    post_json(host, "logs", body)


def _compact_above_one_mib(drain_config: Path) -> None:
    """The storage compacts an emptied database from 100 MiB on by default: this test's queue
    is a few MiB, so its drain config asks for that from 1 MiB on."""
    document = yaml.safe_load(drain_config.read_text(encoding="utf-8"))
    compaction = document["extensions"]["file_storage/queue"]["compaction"]
    compaction.update(rebound_needed_threshold_mib=1, rebound_trigger_threshold_mib=1)
    drain_config.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")


@pytest.mark.parametrize("line", LINES)
def test_a_full_disk_queue_refuses_the_newest_and_counts_it(line: str, tmp_path: Path) -> None:
    """``otel.backend_queue_megabytes: 1`` and 4 MB of log records during an outage: the queue
    stops at its cap (its files stay near it), the rest is refused for the backend and counted
    as lost there by the report, the files hold everything, and a drain sends exactly what the
    queue kept, then waits until the storage compacted the emptied database."""
    host = "127.0.0.130" if line == "legacy" else "127.0.0.131"
    life = Life(
        line,
        host,
        tmp_path,
        collector_binary(line),
        secrets.token_urlsafe(48),
        otel={"backend_queue_megabytes": 1, "delivery_report": True},
    )
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), TOKEN_ENV: life.token}
    env["SLURM_JOB_ID"] = "4242"
    try:
        life.proxy.start_outage()
        collector = StepCollector(
            life.binary, life.config_path, env, life.job_dir, tmp_path / "c.log", host
        )
        with running(collector):
            collector.wait_healthy()
            for batch in range(40):  # 40 x 100 x 1 KB, one batch each (the batch processor: 200ms)
                _post_logs(host, batch, 100, 1000)
                time.sleep(0.3)
            time.sleep(3 * DELIVERY_REPORT_INTERVAL_SECONDS)
            collector.stop()
        queue_sizes = [p.stat().st_size for p in (life.otel_dir / "queue").iterdir()]
        code, document = _report(life)
        logs = {s["signal"]: s for s in document["signals"]}["logs"]
        life.proxy.end_outage()
        _compact_above_one_mib(life.otel_dir / "drain.yaml")
        # What a compaction killed by SIGKILL leaves: the next start removes it.
        leftover = life.otel_dir / "queue" / "tempdb4242"
        leftover.write_bytes(b"\0" * 2 * 1024 * 1024)
        status, outcome = drain(life)
        after = [p.stat().st_size for p in (life.otel_dir / "queue").iterdir()]
        at_backend = [
            r
            for r in life.backend.items("logs")
            if r.resource.get("service.name.override") == "bulk"
        ]
    finally:
        life.close()
    in_files = [
        r for r in life.file_items("logs") if r.resource.get("service.name.override") == "bulk"
    ]
    assert len(in_files) == 4000, len(in_files)
    refused = logs["backend"]["failed_or_dropped"]
    assert 0 < refused < 4000, logs
    assert code == 1 and "lost at the backend" in " ".join(logs["backend"]["reasons"]), logs
    # The cap is on OTLP protobuf bytes; the database adds pages and free lists around it.
    assert sum(queue_sizes) < 4 * 1024 * 1024, queue_sizes
    assert status == 0 and outcome["empty"], outcome
    # The drain stopped only once the storage had compacted the emptied database.
    assert max(queue_sizes) >= 1024 * 1024 > max(after), (queue_sizes, after)
    assert not leftover.exists()
    assert outcome["queue_files_bytes"] == sum(after), outcome
    bodies = [r.body for r in at_backend]
    assert len(bodies) == len(set(bodies)) == 4000 - refused, (len(bodies), refused)
