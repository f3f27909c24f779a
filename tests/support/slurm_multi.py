"""The three-node Slurm cluster of ``.ci/slurm-cluster-up`` as the tests see it.

Nodes n1, n2 and n3 are network namespaces on this machine (10.250.0.11-13, names in
``/etc/hosts``), each with its own host name and loopback, so a job step sees its node as on a
separate host. The cluster runs beside the single-node one of ``.ci/slurm-up``; the Slurm
commands reach it through ``SLURM_CONF`` (``multi_env``), which its slurmd also puts into every
job's environment. The functions of ``support/slurm_cluster.py`` take that environment.

Heterogeneous jobs (SPEC section 8): one component per ``#SBATCH hetjob`` section; component
i's steps run with ``srun --overlap --het-group=<i>``; squeue lists a component's steps under the
component's own job id, which ``component_ids`` gives.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from pathlib import Path

from . import slurm_cluster
from .slurm_cluster import TAKES_JOBS, command_output, command_words, require

MULTI_CONF = Path("/etc/slurm-multi/slurm.conf")
# The host's address on the cluster's bridge, where slurmctld listens.
CONTROLLER_ADDRESS = "10.250.0.1"
NODES = ("n1", "n2", "n3")
NODE_ADDRESSES = {"n1": "10.250.0.11", "n2": "10.250.0.12", "n3": "10.250.0.13"}


def multi_env(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """``base`` (this process's environment when None) with ``SLURM_CONF`` naming the cluster."""
    env = dict(os.environ if base is None else base)
    env["SLURM_CONF"] = str(MULTI_CONF)
    return env


def multi_cluster_problem() -> str | None:
    """Why no job can run on all three nodes, or None when each takes jobs."""
    if not MULTI_CONF.exists():
        return f"no {MULTI_CONF}"
    # Without the bridge the controller's address is routed off the machine: no Slurm command
    # is sent there.
    if not _address_is_local(CONTROLLER_ADDRESS):
        return f"{CONTROLLER_ADDRESS} is not this machine's (the cluster's bridge is down)"
    env = multi_env()
    problem = slurm_cluster.cluster_problem(env)
    if problem is not None:
        return problem
    lines = command_output(["sinfo", "-h", "-N", "-o", "%N %T"], env).splitlines()
    states = dict(line.split(None, 1) for line in lines if line.strip())
    if any(states.get(node, "").rstrip("*~#") not in TAKES_JOBS for node in NODES):
        return f"the nodes {', '.join(NODES)} do not all take jobs (sinfo: {states})"
    return None


def require_multi_cluster() -> None:
    require(
        multi_cluster_problem(),
        "As root, run .ci/slurm-cluster-up to bring up the three-node cluster (n1, n2, n3).",
    )


def submit(script: Path, env: Mapping[str, str] | None = None) -> str:
    """Submits ``script`` to the cluster; the job id (a heterogeneous job's leader's)."""
    return slurm_cluster.submit(script, multi_env(env))


def component_ids(leader: str) -> list[str]:
    """A heterogeneous job's component job ids, component 0 (the leader) first, while squeue
    lists the job (pending or running): its steps of component i are listed under the i-th."""
    ids = command_words(["squeue", "-h", "-j", leader, "-o", "%A"], multi_env())
    return sorted(set(ids), key=int)


def wait_gone(job_id: str, timeout: float) -> None:
    """Waits until the job has left squeue; cancels it and fails the test after ``timeout``."""
    slurm_cluster.wait_gone(job_id, timeout, multi_env())


def job_state(job_id: str) -> str:
    """The job's state as ``scontrol show job`` says (of the leader, for a heterogeneous job)."""
    words = command_words(["scontrol", "show", "job", job_id], multi_env())
    return next((w.split("=", 1)[1] for w in words if w.startswith("JobState=")), "")


def _address_is_local(address: str) -> bool:
    """Whether ``address`` is one of this machine's (binding to it sends nothing)."""
    with socket.socket() as probe:
        try:
            probe.bind((address, 0))
        except OSError:
            return False
    return True
