"""The step's start sets the job's disk budget (issue 37, "Room for the job"; see
``_step/disk_budget.py``): run as bash (its ``_otel_collector_set_budget`` and
``_otel_collector_limit_files``) on real file systems: a size-limited tmpfs of ``.ci/job-fs-up``
(a quota), and its FUSE mount, which allocates nothing ahead. What it leaves is read back by the
real ``nemo-gym-otel report``. The collector's side (a full disk, an outage within the budget) is
in ``tests/e2e/test_full_disk.py``.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
import yaml
from support import helpers, job_fs

from nemo_gym.orchestration.executors.otel._common.errors import JobDirError
from nemo_gym.orchestration.executors.otel._step.disk_budget import read_disk_budget

MIB = 1024 * 1024
QUEUE_FILES = [f"exporter_otlp_http_queue_{s}" for s in ("traces", "metrics", "logs")]


def _start(fragment: str, functions: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["/bin/bash", "-c", f"{fragment}\n{functions}"],
        env=helpers.cli_env(SLURM_JOB_ID="4242", SLURMD_NODENAME="n1"),
        capture_output=True,
        text=True,
        timeout=60,
    )


def _log(job_dir: Path) -> list[str]:
    return (job_dir / "otel" / "collector.log").read_text("utf-8").splitlines()


def _taken(path: Path) -> int:
    return path.stat().st_blocks * 512


def test_the_budget_is_half_the_free_space_shared_by_the_collectors_files() -> None:
    with job_fs.small_file_system() as mount:
        job_dir, fragment = helpers.rendered_job_dir(mount, backend_queue_megabytes=1)
        otel = job_dir / "otel"
        stat = os.statvfs(mount)
        # What otel/ holds counts as free: it is the job's telemetry already.
        held = sum(_taken(p) for p in otel.rglob("*") if p.is_file())
        free = stat.f_bavail * stat.f_frsize + held
        started = _start(
            fragment,
            "_otel_collector_set_budget && echo $_otel_collector_log_head $_otel_collector_log_chunk",
        )
        assert (started.returncode, started.stderr) == (0, "")
        budget = read_disk_budget(job_dir)
        assert budget is not None
        # collector.log's bound (_step/bounded_log.py): a file's share, half for its first part,
        # a quarter for each of its two tails.
        assert budget.file_bytes < 16 * MIB
        assert started.stdout.split() == [str(budget.file_bytes // 2), str(budget.file_bytes // 4)]
        # 50%, over the 3 signal files, the 3 queue databases and collector.log.
        assert (budget.free_bytes, budget.budget_bytes) == (free, free // 2)
        assert budget.file_bytes == free // 2 // 7
        # The cap (otel.backend_queue_megabytes: 1) is below the queue's share.
        assert budget.queue_bytes == MIB
        override = yaml.safe_load((otel / "queue-budget.yaml").read_text("utf-8"))
        assert override == {
            "exporters": {"otlp_http/queue": {"sending_queue": {"queue_size": MIB}}}
        }
        # Each database's share allocated ahead, none of it inside the file (bbolt starts it).
        reserved = min(budget.file_bytes, 32 * MIB)
        for name in QUEUE_FILES:
            database = otel / "queue" / name
            assert database.stat().st_size == 0 and _taken(database) >= reserved, name
            assert database.stat().st_mode & 0o777 == 0o600
        assert _taken(otel / "collector.log") >= min(budget.file_bytes, 4 * MIB)
        (said,) = [line for line in _log(job_dir) if "disk budget" in line]
        assert said.startswith("nemo-gym-otel: disk budget: ") and "per file" in said


@pytest.mark.parametrize("percent, cap", [(25, None), (50, 8)])
def test_the_share_and_the_cap_are_the_submit_configs(percent: int, cap: int | None) -> None:
    """otel.disk_budget_percent sets the share of the free space, otel.disk_budget_megabytes
    caps it (here below the share of a 64 MiB file system); the log and report say which."""
    with job_fs.small_file_system() as mount:
        job_dir, fragment = helpers.rendered_job_dir(
            mount, disk_budget_percent=percent, disk_budget_megabytes=cap
        )
        stat = os.statvfs(mount)
        held = sum(_taken(p) for p in (job_dir / "otel").rglob("*") if p.is_file())
        free = stat.f_bavail * stat.f_frsize + held
        started = _start(fragment, "_otel_collector_set_budget")
        assert (started.returncode, started.stderr) == (0, "")
        budget = read_disk_budget(job_dir)
        assert budget is not None
        want = free * percent // 100 if cap is None else cap * MIB
        assert cap is None or cap * MIB < free * percent // 100
        assert (budget.budget_bytes, budget.file_bytes) == (want, want // 7)
        assert (budget.percent, budget.cap_bytes) == (percent, None if cap is None else cap * MIB)
        (said,) = [line for line in _log(job_dir) if "disk budget" in line]
        assert (", at most otel.disk_budget_megabytes)" in said) is (cap is not None), said
        assert f"({percent}% of " in said, said


def test_the_queue_share_bounds_a_larger_cap() -> None:
    with job_fs.small_file_system() as mount:
        job_dir, fragment = helpers.rendered_job_dir(mount)  # the default cap: 4096 MiB
        assert _start(fragment, "_otel_collector_set_budget").returncode == 0
        budget = read_disk_budget(job_dir)
        assert budget is not None and budget.queue_bytes == budget.file_bytes // 2


def test_a_full_file_system_fails_the_start_in_one_line() -> None:
    with job_fs.small_file_system() as mount:
        job_dir, fragment = helpers.rendered_job_dir(mount)
        fd = os.open(mount / "job-results", os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            with pytest.raises(OSError, match="No space left on device"):
                while True:
                    os.write(fd, b"\0" * 65536)
        finally:
            os.close(fd)
        started = _start(fragment, "_otel_collector_set_budget || echo rc=$?")
        assert started.stdout == "rc=1\n"
        (line,) = started.stderr.splitlines()
        assert line.startswith("otel_collector_start: no space left on device for telemetry: ")
        assert not (job_dir / "otel" / "disk-budget").exists()


def test_where_nothing_can_be_allocated_ahead_the_log_says_so() -> None:
    job_dir, fragment = helpers.rendered_job_dir(job_fs.fresh_folder("sshfs"))
    started = _start(fragment, "_otel_collector_set_budget")
    assert (started.returncode, started.stderr) == (0, "")
    said = [line for line in _log(job_dir) if "no space taken ahead" in line]
    # The first queue database, then the log: each says so once.
    assert [line.split()[6] for line in said] == [
        "exporter_otlp_http_queue_traces",
        "collector.log",
    ]
    assert all("(keep size mode is unsupported)" in line for line in said), said
    assert read_disk_budget(job_dir) is not None  # the budget holds all the same


def test_the_collectors_files_end_at_their_share(tmp_path: Path) -> None:
    job_dir, fragment = helpers.rendered_job_dir(tmp_path)
    assert _start(fragment, "_otel_collector_set_budget").returncode == 0
    budget = read_disk_budget(job_dir)
    assert budget is not None
    stand_in = subprocess.Popen(["sleep", "60"])  # the limit of any process the step names
    try:
        assert _start(fragment, f"_otel_collector_limit_files {stand_in.pid}").returncode == 0
        limits = Path(f"/proc/{stand_in.pid}/limits").read_text("utf-8")
        (row,) = [line for line in limits.splitlines() if line.startswith("Max file size")]
        assert row.split()[3:5] == [str(budget.file_bytes)] * 2, row
    finally:
        stand_in.kill()
        stand_in.wait()


def test_an_unreadable_budget_file_is_named(tmp_path: Path) -> None:
    otel = tmp_path / "otel"
    otel.mkdir()
    assert read_disk_budget(tmp_path) is None
    (otel / "disk-budget").write_text("free=1 budget=2\n", encoding="utf-8")
    with pytest.raises(JobDirError, match="disk-budget"):
        read_disk_budget(tmp_path)
    (otel / "disk-budget").write_text("free=10 budget=5 file=1\n", encoding="utf-8")
    budget = read_disk_budget(tmp_path)
    assert budget is not None and budget.queue_bytes is None
