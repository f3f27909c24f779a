"""The scrape targets the job step's start writes, from Slurm's node lists, for every node.

The fragment's ``_otel_collector_write_targets`` runs here in bash with the variables Slurm
sets in a batch script (SPEC section 8). Node lists with brackets are expanded by
``scontrol show hostnames``; a stand-in ``scontrol`` that expands the one list these tests use
takes its place (the real one runs in tests/slurm/test_multi_node_job.py).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml
from support import helpers

from nemo_gym.orchestration.api import SubmitConfig
from nemo_gym.orchestration.executors.otel import (
    collector_step,
    collector_step_script,
    render_collector_config,
)

EXAMPLE = SubmitConfig.from_yaml(helpers.REPO / "examples" / "submit.yaml")
STAND_IN_SCONTROL = """#!/bin/sh
[ "$1 $2 $3" = "show hostnames n[2-3]" ] || exit 1
printf 'n2\\nn3\\n'
"""


def write(tmp_path: Path, env: dict[str, str], config: SubmitConfig = EXAMPLE):
    benchmark = next(iter(config.driver.benchmarks))
    job_dir = tmp_path / "runs" / "gym-1" / benchmark
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "scontrol").write_text(STAND_IN_SCONTROL)
    (bin_dir / "scontrol").chmod(0o755)
    fragment = collector_step_script(config, benchmark, str(job_dir))
    result = subprocess.run(
        ["bash", "-c", f"{fragment}\n_otel_collector_write_targets"],
        env={"PATH": f"{bin_dir}:{os.environ['PATH']}", **env},
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    targets = job_dir / "otel" / "targets"
    files = (
        {p.name: json.loads(p.read_text()) for p in targets.glob("*")} if targets.exists() else {}
    )
    return result, files


def group(address: str, node: str, port: int, service: str | None = None) -> dict:
    labels = {"instance": f"{node}:{port}"}
    if service:
        labels["gym_service"] = service
    return {"targets": [f"{address}:{port}"], "labels": labels}


HET_JOB = {
    "SLURM_HET_SIZE": "2",
    "SLURM_JOB_NODELIST_HET_GROUP_0": "n1",
    "SLURM_JOB_NODELIST_HET_GROUP_1": "n[2-3]",
    "SLURMD_NODENAME": "n1",
}


def test_every_node_of_a_heterogeneous_job_is_a_target(tmp_path: Path) -> None:
    """The bundled example: policy on pool main (n1, the collector's node), the judge on pool
    judge (n2, n3): the judge is scraped on n2, node and DCGM exporters on all three."""
    result, files = write(tmp_path, HET_JOB)
    assert result.returncode == 0, result.stderr
    every_node = [("localhost", "n1"), ("n2", "n2"), ("n3", "n3")]
    assert files == {
        "model-policy.json": [group("localhost", "n1", 8000, "policy")],
        "model-judge.json": [group("n2", "n2", 8100, "judge")],
        "dcgm.json": [group(a, n, 9400) for a, n in every_node],
        "node.json": [group(a, n, 9100) for a, n in every_node],
    }


def test_the_rendered_config_reads_exactly_the_files_the_start_writes(tmp_path: Path) -> None:
    _, files = write(tmp_path, HET_JOB)
    job_dir = tmp_path / "runs" / "gym-1" / "aime25"
    parsed = yaml.safe_load(render_collector_config(EXAMPLE, "aime25", str(job_dir)))
    read = {
        Path(f).name
        for job in parsed["receivers"]["prometheus"]["config"]["scrape_configs"]
        for sd in job["file_sd_configs"]
        for f in sd["files"]
    }
    assert read == set(files)
    step = collector_step(EXAMPLE, "aime25", str(job_dir))
    assert step.pools == ("main", "judge")
    assert {f"{step.targets_dir}/{name}" for name in files} == {
        f
        for job in parsed["receivers"]["prometheus"]["config"]["scrape_configs"]
        for f in job["file_sd_configs"][0]["files"]
    }


def test_a_one_pool_job_is_a_plain_job(tmp_path: Path) -> None:
    """No pools listed: one plain allocation, every service on its first node."""
    mapping = yaml.safe_load((helpers.REPO / "examples" / "submit.yaml").read_text())
    del mapping["services"]["judge"]["node_pool"], mapping["services"]["sandbox"]
    del mapping["compute"]["eos"]["node_pools"]
    config = SubmitConfig.from_dict(mapping)
    result, files = write(
        tmp_path, {"SLURM_JOB_NODELIST": "gpu-07", "SLURMD_NODENAME": "gpu-07"}, config
    )
    assert result.returncode == 0, result.stderr
    assert files == {
        "model-policy.json": [group("localhost", "gpu-07", 8000, "policy")],
        "model-judge.json": [group("localhost", "gpu-07", 8100, "judge")],
        "dcgm.json": [group("localhost", "gpu-07", 9400)],
        "node.json": [group("localhost", "gpu-07", 9100)],
    }


@pytest.mark.parametrize(
    ("env", "message"),
    [
        (
            {"SLURM_JOB_NODELIST": "n1", "SLURMD_NODENAME": "n1"},
            "the job has 1 component(s) but compute.eos.node_pools lists 2 pool(s) (main judge); "
            "submit one heterogeneous job component per pool, in that order",
        ),
        (
            {**HET_JOB, "SLURM_JOB_NODELIST_HET_GROUP_1": ""},
            "node pool judge (job component 1) has no nodes: SLURM_JOB_NODELIST_HET_GROUP_1 is empty",
        ),
        (
            {**HET_JOB, "SLURM_JOB_NODELIST_HET_GROUP_0": 'n1"'},
            'SLURM_JOB_NODELIST_HET_GROUP_0 names a node the targets cannot hold: n1"',
        ),
        (
            {k: v for k, v in HET_JOB.items() if k != "SLURMD_NODENAME"},
            "SLURMD_NODENAME is not set",
        ),
    ],
    ids=["components-against-pools", "pool-without-nodes", "odd-node-name", "no-node-name"],
)
def test_a_job_of_the_wrong_shape_fails_with_one_line(
    tmp_path: Path, env: dict[str, str], message: str
) -> None:
    result, files = write(tmp_path, env)
    assert result.returncode == 1
    (line,) = result.stderr.splitlines()
    assert line.startswith("otel_collector_start: ") and message in line
    assert files == {}
