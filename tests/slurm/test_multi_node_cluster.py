"""The three-node cluster of .ci/slurm-cluster-up has the shape multi-node tests rely on.

One heterogeneous job, component 0 on one node and component 1 on two (SPEC section 8): it
starts within seconds; the batch script sees each component's nodes; component 1's steps run
on n2 and n3, each under its own host name; a TCP server on n2 bound to all interfaces answers
n1's step as ``n2:<port>``, while ``localhost:<port>`` is refused there (each node has a loopback
of its own); while the job runs, squeue names its two component ids.

Outside CI the test skips when the cluster is not up (run ``.ci/slurm-cluster-up`` as root);
with ``CI=true`` it fails instead.
"""

from __future__ import annotations

import json
import random
import sys
import time
from pathlib import Path

import pytest
from support.slurm_multi import component_ids, job_state, require_multi_cluster, submit, wait_gone

# The three-node cluster's tests run on one worker, beside the single-node cluster's (conftest.py).
pytestmark = [pytest.mark.slurm, pytest.mark.xdist_group("slurm-three-nodes")]

# bf_interval=1 starts a heterogeneous job within about a second; the default, after about 30 s.
START_SECONDS = 15
JOB_SECONDS = 120

SERVER = """
import socket, sys
with socket.create_server(("0.0.0.0", int(sys.argv[1]))) as server:
    conn, _ = server.accept()
    with conn:
        conn.sendall(socket.gethostname().encode() + b"\\n")
        conn.recv(1)  # open until the client has also tried localhost
"""

PROBE = """
import json, socket, sys, time
port = int(sys.argv[1])
deadline = time.monotonic() + 30
while True:
    try:
        remote = socket.create_connection(("n2", port), timeout=5)
        break
    except ConnectionRefusedError:
        if time.monotonic() > deadline:
            raise
        time.sleep(0.1)
with remote:
    reply = remote.makefile().readline().strip()
    try:
        socket.create_connection(("localhost", port), timeout=5).close()
        local = "answered"
    except ConnectionRefusedError:
        local = "refused"
print(json.dumps({"host": socket.gethostname(), "n2": reply, "localhost": local}))
"""

BATCH = """#!/bin/bash
#SBATCH --job-name=multi-node-shape
#SBATCH --nodes=1 --ntasks=1 --time=2 --output={dir}/job.out --chdir={dir}
#SBATCH hetjob
#SBATCH --nodes=2 --ntasks-per-node=1
set -euo pipefail
echo "$EPOCHREALTIME" >started
hostname >batch_host
scontrol show hostnames "$SLURM_JOB_NODELIST_HET_GROUP_0" >group0
scontrol show hostnames "$SLURM_JOB_NODELIST_HET_GROUP_1" >group1
srun --overlap --het-group=1 sh -c 'echo "$(hostname) $SLURMD_NODENAME"' >steps1
srun --overlap --het-group=1 --nodes=1 --ntasks=1 --nodelist=n2 {python} server.py {port} &
srun --overlap --het-group=0 {python} probe.py {port} >probe.json
wait
# Still running while the test lists the job's components.
for _ in $(seq 600); do [ -e release ] && break; sleep 0.1; done
"""


def test_a_heterogeneous_job_spans_three_nodes_with_their_own_names_and_networks(
    tmp_path: Path,
) -> None:
    require_multi_cluster()
    port = random.randint(20000, 29999)
    (tmp_path / "server.py").write_text(SERVER)
    (tmp_path / "probe.py").write_text(PROBE)
    script = tmp_path / "job.sh"
    script.write_text(BATCH.format(dir=tmp_path, python=sys.executable, port=port))

    submitted = time.time()
    leader = submit(script)
    try:
        probe = _wait_for(tmp_path / "probe.json", leader, tmp_path / "job.out")
        components = component_ids(leader)
    finally:
        (tmp_path / "release").touch()
    wait_gone(leader, JOB_SECONDS)

    def lines(name: str) -> list[str]:
        return (tmp_path / name).read_text().split("\n")[:-1]

    waited = float((tmp_path / "started").read_text()) - submitted
    assert waited < START_SECONDS, f"the heterogeneous job started {waited:.1f}s after sbatch"
    assert job_state(leader) == "COMPLETED", (tmp_path / "job.out").read_text()
    assert lines("batch_host") == ["n1"]
    assert lines("group0") == ["n1"]
    assert lines("group1") == ["n2", "n3"]
    # Host name and SLURMD_NODENAME of each task of component 1.
    assert sorted(lines("steps1")) == ["n2 n2", "n3 n3"]
    assert json.loads(probe) == {"host": "n1", "n2": "n2", "localhost": "refused"}
    assert len(components) == 2, components
    assert components[0] == leader


def _wait_for(path: Path, job_id: str, output: Path) -> str:
    """The line the job writes to ``path``; fails when the job ends or times out without it."""
    deadline = time.monotonic() + JOB_SECONDS
    while not (path.exists() and path.read_text().endswith("\n")):
        gone = not component_ids(job_id)
        if gone or time.monotonic() > deadline:
            log = output.read_text() if output.exists() else "(no output)"
            why = "the job ended" if gone else f"{JOB_SECONDS}s passed"
            pytest.fail(f"{why} without writing {path.name}; the job's output:\n{log}")
        time.sleep(0.2)
    return path.read_text()
