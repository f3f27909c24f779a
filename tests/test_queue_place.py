"""Where the backend's disk queue goes when the job directory's file system does not lock files
(issue 37, "No flock, no failed job"; see ``_step/queue_place.py``).

The step's start is run as bash (its ``_otel_collector_place_queue``) on real file systems: a job
directory on the ``noflock`` mount of ``.ci/job-fs-up`` (flock fails with ENOSYS, as on Lustre
without ``flock``) and one in the test's temporary folder (flock works). What it leaves behind is
then read by the real ``nemo-gym-otel drain`` and ``report``. The whole job on the cluster is in
``tests/slurm/test_slurm_job.py``.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml
from support import helpers, job_fs

MOVED = "nemo-gym-otel: the backend's queue is node-local on "
JOB_ID = "4242"


def _place(
    fragment: str, node: str, tmpdir: Path, **env: str | None
) -> subprocess.CompletedProcess[str]:
    """The start's placing of the queue, as the batch script on ``node`` runs it."""
    environment = helpers.cli_env(
        SLURM_JOB_ID=JOB_ID, SLURMD_NODENAME=node, TMPDIR=str(tmpdir), **env
    )
    return subprocess.run(
        ["/bin/bash", "-c", f"{fragment}\n_otel_collector_place_queue"],
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.fixture
def noflock_job(tmp_path: Path) -> tuple[Path, str]:
    return helpers.rendered_job_dir(job_fs.fresh_folder("noflock"))


def _log(job_dir: Path) -> list[str]:
    return (job_dir / "otel" / "collector.log").read_text("utf-8").splitlines()


def _places(job_dir: Path) -> list[str]:
    return (job_dir / "otel" / "queue-node-local").read_text("utf-8").splitlines()


def test_a_job_dir_that_locks_keeps_the_queue(tmp_path: Path) -> None:
    job_dir, fragment = helpers.rendered_job_dir(tmp_path)
    placed = _place(fragment, "n1", tmp_path / "node-tmp")
    assert (placed.returncode, placed.stderr) == (0, "")
    otel = job_dir / "otel"
    assert not (otel / "queue").is_symlink() and not (otel / "queue-node-local").exists()
    assert not (tmp_path / "node-tmp").exists()
    assert not any(line.startswith("nemo-gym-otel:") for line in _log(job_dir))


def test_no_flock_moves_the_queue_to_the_node_and_a_requeue_follows(
    noflock_job: tuple[Path, str], tmp_path: Path
) -> None:
    job_dir, fragment = noflock_job
    queue = job_dir / "otel" / "queue"
    node_tmp = tmp_path / "node-tmp"
    node_tmp.mkdir()
    placed = _place(fragment, "n1", node_tmp)
    assert (placed.returncode, placed.stderr) == (0, "")
    (folder,) = node_tmp.iterdir()
    assert folder.name.startswith(f"nemo-gym-otel-{JOB_ID}-")
    assert folder.stat().st_mode & 0o777 == 0o700
    assert list(folder.iterdir()) == []  # the probe's file is gone
    assert queue.is_symlink() and queue.readlink() == folder
    assert _places(job_dir) == [f"n1 {folder}"]
    (said,) = _log(job_dir)
    assert said.startswith(f"{MOVED}n1 in {folder} ") and "(Function not implemented)" in said

    # A requeue on the same node: the same folder, no new line in the marker.
    assert _place(fragment, "n1", node_tmp).returncode == 0
    assert list(node_tmp.iterdir()) == [folder] and _places(job_dir) == [f"n1 {folder}"]
    # On another node (here the same path, as /tmp is on every node): a second line, and the log
    # says the first one stays on n1.
    assert _place(fragment, "n2", node_tmp).returncode == 0
    assert _places(job_dir) == [f"n1 {folder}", f"n2 {folder}"]
    stranded = [line for line in _log(job_dir) if "earlier attempt" in line]
    assert stranded == [
        f"nemo-gym-otel: the earlier attempt's node-local queue stays on n1 in {folder}: "
        "only nemo-gym-otel drain run on n1 sends what is left there"
    ]
    assert _log(job_dir)[-1].startswith(f"{MOVED}n2 in {folder} ")


def test_an_unusable_tmpdir_falls_back_to_tmp_and_two_jobs_differ(
    noflock_job: tuple[Path, str], tmp_path: Path
) -> None:
    job_dir, fragment = noflock_job
    other_dir, other_fragment = helpers.rendered_job_dir(job_fs.fresh_folder("noflock"))
    folders = []
    try:
        for fragment_of in (fragment, other_fragment):
            assert _place(fragment_of, "n1", Path("relative/tmp")).returncode == 0
        folders = [(d / "otel" / "queue").readlink() for d in (job_dir, other_dir)]
        assert _place(fragment, "n1", tmp_path / "no-such-folder").returncode == 0
        assert (job_dir / "otel" / "queue").readlink() == folders[0]
        assert [f.parent for f in folders] == [Path("/tmp"), Path("/tmp")]
        assert folders[0] != folders[1]
    finally:
        for folder in folders:
            folder.rmdir()


def test_no_node_local_lock_either_fails_the_start_in_one_line(
    noflock_job: tuple[Path, str],
) -> None:
    job_dir, fragment = noflock_job
    placed = _place(fragment, "n1", job_fs.fresh_folder("noflock"))
    assert placed.returncode == 1
    (line,) = placed.stderr.splitlines()
    assert line.startswith("otel_collector_start: the backend's disk queue needs file locks")
    assert "otel.backend_queue_megabytes: null" in line and "Function not implemented" in line
    assert not (job_dir / "otel" / "queue").exists()


def test_in_a_container_the_start_fails_where_the_queue_would_move(tmp_path: Path) -> None:
    job_dir, fragment = helpers.rendered_job_dir(
        job_fs.fresh_folder("noflock"), container="otel/collector:1"
    )
    placed = _place(fragment, "n1", tmp_path)
    assert placed.returncode == 1
    (line,) = placed.stderr.splitlines()
    assert "container sees only the job directory" in line, line
    assert "otel.backend_queue_megabytes: null" in line
    assert list(tmp_path.iterdir()) == [] and not (job_dir / "otel" / "queue").exists()


def test_without_the_flock_command_the_queue_stays_and_the_log_says_so(
    noflock_job: tuple[Path, str], tmp_path: Path
) -> None:
    job_dir, fragment = noflock_job
    placed = _place(fragment, "n1", tmp_path, PATH=str(tmp_path / "empty-bin"))
    assert (placed.returncode, placed.stderr) == (0, "")
    assert not (job_dir / "otel" / "queue").exists()
    assert _log(job_dir) == [
        f"nemo-gym-otel: no flock command (util-linux) on n1: the backend's queue stays in "
        f"{job_dir}/otel/queue, its file system's locks unprobed"
    ]


def test_an_earlier_queue_in_the_job_dir_is_not_abandoned(
    noflock_job: tuple[Path, str], tmp_path: Path
) -> None:
    """What a collector that could not lock left (empty files) is replaced; data is not."""
    job_dir, fragment = noflock_job
    queue = job_dir / "otel" / "queue"
    queue.mkdir()
    (queue / "exporter_otlp_http_queue_traces").write_bytes(b"")
    assert _place(fragment, "n1", tmp_path).returncode == 0
    assert queue.is_symlink()
    queue.unlink()
    queue.mkdir()
    (queue / "exporter_otlp_http_queue_traces").write_bytes(b"queued")
    placed = _place(fragment, "n1", tmp_path)
    assert placed.returncode == 1
    (line,) = placed.stderr.splitlines()
    assert f"{queue} holds a queue" in line and "nemo-gym-otel drain" in line, line
    assert (queue / "exporter_otlp_http_queue_traces").read_bytes() == b"queued"


def _fake_collector(tmp_path: Path) -> Path:
    """A "collector" that keeps the config the drain wrote for its queue's collector (beside
    the sender's it is given first: the queue's is started only once a sender answers) and
    reports nothing."""
    script = tmp_path / "otelcol-fake"
    given = '"$(dirname "${1#--config=file:}")/drain.yaml"'
    script.write_text(f"#!/bin/sh\ncp {given} {tmp_path}/given.yaml\n", "utf-8")
    script.chmod(0o755)
    return script


def test_drain_on_another_node_says_where_in_one_line(
    noflock_job: tuple[Path, str], tmp_path: Path
) -> None:
    job_dir, fragment = noflock_job
    assert _place(fragment, "n1", tmp_path).returncode == 0
    (folder,) = tmp_path.iterdir()
    collector = _fake_collector(tmp_path)
    args = ("drain", job_dir, "--collector", collector)
    env = helpers.cli_env(SLURMD_NODENAME="n2", OTEL_TOKEN="drain-test-token")
    elsewhere = helpers.run_cli(*args, cwd=tmp_path, env=env)
    assert elsewhere.returncode == 5, elsewhere.stdout + elsewhere.stderr
    assert elsewhere.stdout == ""
    assert elsewhere.stderr.splitlines() == [
        f"nemo-gym-otel: {job_dir}: the backend queue is node-local on n1 ({folder}), not on "
        "this node (n2); run nemo-gym-otel drain on n1"
    ]
    assert not (tmp_path / "given.yaml").exists()
    assert not (job_dir / "otel" / "drain.jsonl").exists()

    # On n1 the drain's storage is the node-local folder (the collector is a stand-in: what it
    # was given is the point here; tests/slurm drains a real one).
    env["SLURMD_NODENAME"] = "n1"
    here = helpers.run_cli(*args, cwd=tmp_path, env=env)
    assert here.returncode == 4, here.stdout + here.stderr
    given = yaml.safe_load((tmp_path / "given.yaml").read_text("utf-8"))
    assert given["extensions"]["file_storage/queue"]["directory"] == str(folder)


def test_report_says_where_the_queue_was(noflock_job: tuple[Path, str], tmp_path: Path) -> None:
    job_dir, fragment = noflock_job
    for node in ("n1", "n2"):
        (tmp_path / node).mkdir()
        assert _place(fragment, node, tmp_path / node).returncode == 0
    first, second = (next((tmp_path / node).iterdir()) for node in ("n1", "n2"))
    text = helpers.run_cli("report", job_dir, cwd=tmp_path).stdout.splitlines()
    where = [line for line in text if "backend queue:" in line or "earlier attempt" in line]
    assert where == [
        f"backend queue: node-local on n2 in {second} (the job directory's file system does not "
        "lock files); what is left there can be drained only on n2: run nemo-gym-otel drain there",
        f"  an earlier attempt's queue stays on n1 in {first}: only nemo-gym-otel drain run on "
        "n1 sends what is left there",
    ]
    document = helpers.run_cli("report", job_dir, "--format", "json", cwd=tmp_path).stdout
    assert yaml.safe_load(document)["backend_queue_node_local"] == [
        {"node": "n1", "folder": str(first)},
        {"node": "n2", "folder": str(second)},
    ]
