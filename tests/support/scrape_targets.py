"""The scrape targets files, written the way the job step writes them, for runs outside Slurm.

A rendered config reads its scrape targets from files that ``otel_collector_start`` writes from
Slurm's node lists. A collector run by the tests or the benchmarks without Slurm gets the same
files from the same code: the package's fragment, sourced in bash, with the environment of a
job whose every node pool is the one node ``LOCAL_NODE``.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from nemo_gym.orchestration.executors.otel import SubmitConfig, collector_step_script

LOCAL_NODE = "e2e-node"


def write_targets(
    config: SubmitConfig, benchmark: str, job_dir: Path, node: str = LOCAL_NODE
) -> None:
    """Every targets file of ``config``'s scrape jobs, as a job with all its pools on ``node``
    has them (a heterogeneous job's components each on that node when it has several pools)."""
    fragment = collector_step_script(config, benchmark, str(job_dir))
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "SLURMD_NODENAME": node}
    pools = config.compute.node_pools
    if len(pools) > 1:
        env["SLURM_HET_SIZE"] = str(len(pools))
        env.update({f"SLURM_JOB_NODELIST_HET_GROUP_{i}": node for i in range(len(pools))})
    else:
        env["SLURM_JOB_NODELIST"] = node
    result = subprocess.run(
        ["bash", "-c", f"{fragment}\n_otel_collector_write_targets"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, f"writing the scrape targets failed: {result.stderr}"
