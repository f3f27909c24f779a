"""Where the backend's disk queue goes when the job directory's file system does not lock files
(issue 37, "No flock, no failed job"; see ``_step/queue_place.py``).

The step's start is run as bash (its ``_otel_collector_place_queue``) on real file systems: a job
directory on the ``noflock`` mount of ``.ci/job-fs-up`` (flock fails with ENOSYS, as on Lustre
without ``flock``) and one in the test's temporary folder (flock works). What it leaves behind is
then read by the real ``nemo-gym-otel drain`` and ``report``. The whole job on the cluster is in
``tests/slurm/test_slurm_job.py``.
"""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

import pytest
import yaml
from support import helpers, job_fs

from nemo_gym.orchestration.executors.otel._step.disk_budget import MEMORY_QUEUE_BYTES

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


IN_MEMORY = "nemo-gym-otel: the backend's queue is in memory on "
TOKEN = "queue-in-memory-test-token"


def _memory_config(job_dir: Path) -> dict[str, object]:
    """The second config the start's budget writes for a queue in memory."""
    text = (job_dir / "otel" / "queue-budget.yaml").read_text("utf-8")
    assert "${" not in text, text  # no reference the collector would expand
    for path in job_dir.rglob("*"):  # nothing the start wrote holds the token
        assert not path.is_file() or TOKEN.encode() not in path.read_bytes(), path
    document = yaml.safe_load(text)
    assert isinstance(document, dict), text
    return document


def _budget(fragment: str, node: str, tmpdir: Path) -> subprocess.CompletedProcess[str]:
    """The start's placing of the queue, then its disk budget (which writes the second config)."""
    environment = helpers.cli_env(
        SLURM_JOB_ID=JOB_ID, SLURMD_NODENAME=node, TMPDIR=str(tmpdir), OTEL_TOKEN=TOKEN
    )
    return subprocess.run(
        [
            "/bin/bash",
            "-c",
            f"{fragment}\n_otel_collector_place_queue && _otel_collector_set_budget && "
            'printf "%s\\n" "${_otel_collector_budget_args[@]}"',
        ],
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_no_node_local_lock_either_keeps_the_queue_in_memory(
    noflock_job: tuple[Path, str],
) -> None:
    """TMPDIR on a file system without flock too: the queue goes to memory, bounded, and the
    log, the marker and the second config say so."""
    job_dir, fragment = noflock_job
    tmpdir = job_fs.fresh_folder("noflock")
    placed = _budget(fragment, "n1", tmpdir)
    assert (placed.returncode, placed.stderr) == (0, ""), placed.stderr
    config = job_dir / "otel" / "queue-budget.yaml"
    assert placed.stdout.splitlines() == [f"--config=file:{config}"]
    assert list(tmpdir.iterdir()) == []  # the folder made for the queue, unused, is gone
    assert not (job_dir / "otel" / "queue").exists()
    assert _places(job_dir) == ["n1 memory"]
    (said,) = [line for line in _log(job_dir) if line.startswith(IN_MEMORY)]
    assert said.startswith(f"{IN_MEMORY}n1: the job directory's file system does not lock files")
    assert f"nor does the node-local folder {tmpdir}/nemo-gym-otel-{JOB_ID}-" in said, said
    assert said.count("Function not implemented") == 2, said
    assert _memory_config(job_dir) == {
        "exporters": {
            "otlp_http/queue": {
                "sending_queue": {"queue_size": MEMORY_QUEUE_BYTES, "storage": None}
            }
        }
    }
    budget = (job_dir / "otel" / "disk-budget").read_text("utf-8")
    assert "queue=" not in budget and "file=" in budget, budget
    (line,) = [x for x in _log(job_dir) if x.startswith("nemo-gym-otel: disk budget:")]
    assert ", the backend queue in memory (6.0 MiB per signal), the log its first " in line, line
    # A requeue on the same node: the marker keeps one line.
    assert _budget(fragment, "n1", tmpdir).returncode == 0
    assert _places(job_dir) == ["n1 memory"]


def test_the_queue_in_memory_holds_at_most_the_configured_cap(tmp_path: Path) -> None:
    job_dir, fragment = helpers.rendered_job_dir(
        job_fs.fresh_folder("noflock"), backend_queue_megabytes=2
    )
    placed = _budget(fragment, "n1", job_fs.fresh_folder("noflock"))
    assert placed.returncode == 0, placed.stderr
    sending_queue = _memory_config(job_dir)["exporters"]["otlp_http/queue"]["sending_queue"]  # type: ignore[index]
    assert sending_queue == {"queue_size": 2 * 1024 * 1024, "storage": None}


def test_a_node_local_folder_that_cannot_be_made_keeps_the_queue_in_memory(
    noflock_job: tuple[Path, str], tmp_path: Path
) -> None:
    job_dir, fragment = noflock_job
    key = hashlib.sha256(str(job_dir).encode("utf-8")).hexdigest()[:12]
    blocker = tmp_path / f"nemo-gym-otel-{JOB_ID}-{key}"
    blocker.write_text("not a folder", "utf-8")  # where the folder would go
    placed = _place(fragment, "n1", tmp_path)
    assert (placed.returncode, placed.stderr) == (0, "")
    assert blocker.read_text("utf-8") == "not a folder"
    assert _places(job_dir) == ["n1 memory"]
    (said,) = [line for line in _log(job_dir) if line.startswith(IN_MEMORY)]
    assert said.endswith(
        f"and the node-local folder {blocker} cannot be made (File exists); what it holds at a "
        "crash is lost for the backend, and nothing is left on disk for a drain"
    ), said


def test_in_a_container_the_queue_stays_in_memory(tmp_path: Path) -> None:
    """The collector's container sees only the job directory: no node-local folder is tried."""
    job_dir, fragment = helpers.rendered_job_dir(
        job_fs.fresh_folder("noflock"), container="otel/collector:1"
    )
    placed = _budget(fragment, "n1", tmp_path)
    assert (placed.returncode, placed.stderr) == (0, ""), placed.stderr
    assert list(tmp_path.iterdir()) == [] and not (job_dir / "otel" / "queue").exists()
    assert _places(job_dir) == ["n1 memory"]
    (said,) = [line for line in _log(job_dir) if line.startswith(IN_MEMORY)]
    assert "and the collector's container sees only the job directory" in said, said
    sending_queue = _memory_config(job_dir)["exporters"]["otlp_http/queue"]["sending_queue"]  # type: ignore[index]
    assert sending_queue["storage"] is None


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


def test_drain_and_report_of_a_queue_in_memory_say_nothing_is_on_disk(
    noflock_job: tuple[Path, str], tmp_path: Path
) -> None:
    job_dir, fragment = noflock_job
    assert _place(fragment, "n1", job_fs.fresh_folder("noflock")).returncode == 0
    collector = _fake_collector(tmp_path)
    for node in ("n1", "n2"):  # nothing is on disk anywhere: the same on every node
        env = helpers.cli_env(SLURMD_NODENAME=node, OTEL_TOKEN="drain-test-token")
        drained = helpers.run_cli("drain", job_dir, "--collector", collector, cwd=tmp_path, env=env)
        assert (drained.returncode, drained.stderr) == (0, ""), drained.stderr
        assert drained.stdout.splitlines() == [
            f"{job_dir}: nothing queued on disk: the job step kept the backend's queue in memory "
            "on n1 (no folder there locked its database; collector.log says why); nothing sent, "
            "nothing written"
        ]
    as_json = helpers.run_cli(
        "drain", job_dir, "--collector", collector, "--format", "json", cwd=tmp_path, env=env
    )
    document = yaml.safe_load(as_json.stdout)
    assert (document["nothing_queued"], document["in_memory"], document["empty"]) == (
        True,
        ["n1"],
        True,
    )
    assert not (tmp_path / "given.yaml").exists()  # no collector ran
    assert not (job_dir / "otel" / "drain.jsonl").exists()
    text = helpers.run_cli("report", job_dir, cwd=tmp_path).stdout.splitlines()
    assert [line for line in text if line.startswith("backend queue:")] == [
        "backend queue: in memory on n1 (no folder there locked its database; collector.log says "
        "why): nothing of it is on disk, nothing to drain"
    ]
    report = yaml.safe_load(
        helpers.run_cli("report", job_dir, "--format", "json", cwd=tmp_path).stdout
    )
    assert report["backend_queue_in_memory"] == ["n1"]
    assert report["backend_queue_node_local"] == []


def test_an_earlier_node_local_queue_is_still_named_after_a_start_in_memory(
    noflock_job: tuple[Path, str], tmp_path: Path
) -> None:
    """n1's temporary folder locked, n2's does not: n1's queue stays the one to drain, on n1."""
    job_dir, fragment = noflock_job
    assert _place(fragment, "n1", tmp_path).returncode == 0
    (folder,) = tmp_path.iterdir()
    folder.rename(tmp_path / "elsewhere")  # n2 does not see n1's folder: the link leads nowhere
    placed = _place(fragment, "n2", job_fs.fresh_folder("noflock"))
    assert (placed.returncode, placed.stderr) == (0, "")
    assert not (job_dir / "otel" / "queue").is_symlink()  # the link that led nowhere went
    (tmp_path / "elsewhere").rename(folder)
    assert _places(job_dir) == [f"n1 {folder}", "n2 memory"]
    env = helpers.cli_env(SLURMD_NODENAME="n2", OTEL_TOKEN="drain-test-token")
    collector = _fake_collector(tmp_path)
    drained = helpers.run_cli("drain", job_dir, "--collector", collector, cwd=tmp_path, env=env)
    assert drained.returncode == 5, drained.stdout + drained.stderr
    assert drained.stderr.splitlines() == [
        f"nemo-gym-otel: {job_dir}: the backend queue is node-local on n1 ({folder}), not on "
        "this node (n2); run nemo-gym-otel drain on n1"
    ]
    text = helpers.run_cli("report", job_dir, cwd=tmp_path).stdout.splitlines()
    where = [line for line in text if "backend queue:" in line or "earlier attempt" in line]
    assert where == [
        "backend queue: in memory on n2 (no folder there locked its database; collector.log says "
        "why): nothing of it is on disk, nothing to drain",
        f"  an earlier attempt's queue stays on n1 in {folder}: only nemo-gym-otel drain run on "
        "n1 sends what is left there",
    ]


def test_a_marker_that_cannot_be_written_fails_the_start_in_one_line(
    noflock_job: tuple[Path, str],
) -> None:
    job_dir, fragment = noflock_job
    marker = job_dir / "otel" / "queue-node-local"
    marker.mkdir()  # a folder where the marker goes
    placed = _place(fragment, "n1", job_fs.fresh_folder("noflock"))
    assert placed.returncode == 1
    assert placed.stderr.splitlines() == [
        f"otel_collector_start: cannot write {marker}; is the job directory writable?"
    ]
