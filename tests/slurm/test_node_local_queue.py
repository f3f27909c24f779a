"""A node-local queue is drained on its node only, on the three-node cluster of
.ci/slurm-cluster-up (issue 37, "No flock, no failed job"; see ``_step/queue_place.py``).

One job on n1 and n2 whose job directory is on the ``noflock`` mount of ``.ci/job-fs-up``: the
batch script (on n1) runs the step's placing of the queue, which puts it in a node-local folder;
then ``nemo-gym-otel drain`` runs as a step on n2, where it must run nothing and name n1 in one
line (exit 5), and as a step on n1, where it drains the (empty) queue with the real collector.
The node names come from Slurm itself (``SLURMD_NODENAME``).

Outside CI the test skips when the cluster or the mount is not up; with ``CI=true`` it fails.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest
from support import helpers, job_fs
from support.otelcol import collector_binary
from support.slurm_multi import component_ids, job_state, require_multi_cluster, submit, wait_gone

# The three-node cluster's tests run on one worker, beside the single-node cluster's (conftest.py).
pytestmark = [
    pytest.mark.slurm,
    pytest.mark.collector,
    pytest.mark.xdist_group("slurm-three-nodes"),
]

JOB_SECONDS = 180
BATCH = """#!/bin/bash
#SBATCH --job-name=node-local-queue
#SBATCH --nodes=2 --ntasks-per-node=1 --nodelist=n1,n2 --time=3
#SBATCH --output={work}/job.out --chdir={work}
set -uo pipefail
source {work}/collector-step.sh
_otel_collector_place_queue
echo "place $?" >>status
for node in n2 n1; do
    srun --overlap --nodes=1 --ntasks=1 --nodelist="$node" {cli} drain {job_dir} \\
        --collector {collector} >"$node.out" 2>"$node.err"
    echo "$node $?" >>status
done
"""


def test_drain_runs_only_on_the_node_that_holds_the_queue(tmp_path: Path) -> None:
    require_multi_cluster()
    job_dir, fragment = helpers.rendered_job_dir(job_fs.fresh_folder("noflock"))
    (tmp_path / "collector-step.sh").write_text(fragment, encoding="utf-8")
    script = tmp_path / "job.sh"
    script.write_text(
        BATCH.format(
            work=tmp_path,
            cli=helpers.CLI,
            job_dir=job_dir,
            collector=collector_binary("current"),
        )
    )
    job_id = submit(script, helpers.cli_env(OTEL_TOKEN="node-local-queue-test"))
    deadline = time.monotonic() + JOB_SECONDS
    while component_ids(job_id) and time.monotonic() < deadline:
        time.sleep(0.5)
    wait_gone(job_id, 10)
    places = (job_dir / "otel" / "queue-node-local").read_text("utf-8").splitlines()
    try:
        output = (tmp_path / "job.out").read_text("utf-8")
        assert job_state(job_id) == "COMPLETED", output
        status = (tmp_path / "status").read_text("utf-8").splitlines()
        assert status == ["place 0", "n2 5", "n1 0"], (status, output)
        (place,) = places
        node, _, folder = place.partition(" ")
        assert node == "n1", place
        assert (tmp_path / "n2.out").read_text("utf-8") == ""
        # One line of the command's own; srun adds its own about the exit code.
        said, *by_srun = (tmp_path / "n2.err").read_text("utf-8").splitlines()
        assert said == (
            f"nemo-gym-otel: {job_dir}: the backend queue is node-local on n1 ({folder}), not on "
            "this node (n2); run nemo-gym-otel drain on n1"
        )
        assert all(line.startswith("srun: ") for line in by_srun), by_srun
        drained = (tmp_path / "n1.out").read_text("utf-8")
        assert "the disk queue is empty" in drained, drained + (tmp_path / "n1.err").read_text()
        # The drain on n1 ran the real collector on the node-local folder: its databases are there.
        assert any(Path(folder).iterdir()), f"no queue database in {folder}"
        assert len((job_dir / "otel" / "drain.jsonl").read_text("utf-8").splitlines()) == 1
    finally:
        for place in places:
            shutil.rmtree(place.partition(" ")[2], ignore_errors=True)
