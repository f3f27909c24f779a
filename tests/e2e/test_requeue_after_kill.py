"""A collector killed between two flushes of its zstd streams, then the job requeued, on the real
current-line collector: both attempts' files read whole, with the tests' reader, ``zstd -t`` and
``report``.

The kill leaves each stream's last frame without its end whenever it lands between two of the
exporter's once-a-second flushes; the test makes that certain by cutting the last byte of the
traces stream after the kill, as a kill a moment earlier would have. Appended after such a frame,
the next attempt's frames would be unreadable: the step's start sets the earlier files aside
(``Life.start`` runs the step's own bash for it).

Also with the job directory on the file systems of ``.ci/job-fs-up`` (``support/job_fs.py``):
sshfs, a network file system, and ``noflock``, whose flock fails with ENOSYS, where the step's
start puts the backend's queue in a node-local folder and the requeue's start finds it there
again (one folder, one line in ``otel/queue-node-local``). There the executor's grace before the
late batch is shortened to a few seconds: what is tried is the file system's part (renames,
appends, links), and the grace's own part is the local run's.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from support import helpers, job_fs
from support.e2e_checks import random_token
from support.e2e_life import Life
from support.e2e_otlp import SIGNALS
from support.e2e_tally import assert_holds_exactly, found, in_files, sent
from support.otelcol import collector_binary

from nemo_gym.orchestration.executors.otel._step.queue_place import queue_places

pytestmark = pytest.mark.collector

HOSTS = {"": "127.0.0.72", "sshfs": "127.0.0.74", "noflock": "127.0.0.75"}
SHORT_GRACE_SECONDS = 3


@pytest.mark.parametrize("file_system", HOSTS, ids=lambda fs: fs or "local")
def test_a_requeue_after_a_kill_mid_stream_keeps_both_attempts_readable(
    tmp_path: Path, file_system: str
) -> None:
    output_path = job_fs.fresh_folder(file_system) if file_system else None
    life = Life(
        "current",
        HOSTS[file_system],
        tmp_path,
        collector_binary("current"),
        random_token(),
        output_path=output_path,
    )
    grace = {"grace_seconds": SHORT_GRACE_SECONDS} if file_system else {}
    try:
        first = life.start(kill=True, **grace)
        live = life.otel_dir / "traces.jsonl.zst"
        with live.open("r+b") as stream:
            stream.truncate(live.stat().st_size - 1)  # the frame's end never written
        second = life.start(**grace)
        places = queue_places(life.job_dir)
        queue = life.otel_dir / "queue"
        if file_system == "noflock":
            # Both attempts on this node: one folder, which the link names.
            (place,) = places
            assert queue.readlink() == place.folder, queue
            assert any(p.stat().st_size for p in place.folder.iterdir()), "no queue database"
        else:
            assert not places and not queue.is_symlink(), places
        assert second.drain_exit_code == 0, second.log
    finally:
        life.close()

    (aside,) = life.otel_dir.glob("traces.jsonl-*-restart.zst")
    # The second attempt's stream is a file of its own, whole for the standard tool too.
    whole = subprocess.run(["zstd", "-tq", str(live)], capture_output=True, timeout=60)
    assert whole.returncode == 0, whole.stderr
    cut = subprocess.run(["zstd", "-tq", str(aside)], capture_output=True, timeout=60)
    assert cut.returncode != 0, "the first attempt's stream should end cut"

    # Every item of the second attempt is in the files; of the first, all but the cut frame's.
    files = found(in_files(life))
    assert_holds_exactly(
        {s: files[s] & sent([second])[s] for s in SIGNALS}, sent([second]), "second attempt"
    )
    first_sent = sent([first])
    assert all(files[s] & first_sent[s] for s in SIGNALS), "the first attempt's items are gone"

    report = helpers.run_cli("report", life.job_dir, "--format", "json", cwd=tmp_path)
    traces = next(s for s in json.loads(report.stdout)["signals"] if s["signal"] == "traces")
    assert traces["files"]["items"] == len(life.file_items("traces")), traces
    assert (
        f"the last line of {aside.name} is truncated (the collector was killed)"
        in traces["files"]["reasons"]
    ), traces
