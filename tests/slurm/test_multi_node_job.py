"""Every node of a multi-node job observed, on the three-node cluster of .ci/slurm-cluster-up.

The bundled example's shape (``support/slurm_multi_job.py``): policy, driver and collector on
pool ``main`` (n1), the judge on a two-node pool ``judge`` (n2, n3), node and DCGM exporters on
every node. The collector on n1 scrapes the judge on n2 and the exporters of all three nodes
through the targets its start wrote from Slurm's node lists; every scraped point names its node
in ``host.name``. A second run leaves out n3's exporters and the judge's server: the rest of the
data is complete, and ``nemo-gym-otel report`` names what is missing, per node.

Outside CI the suite skips when the cluster is not up; with ``CI=true`` it fails instead.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support import helpers
from support.e2e_backend import OtlpBackend, RoutingProxy
from support.e2e_checks import OVERRIDE, check_no_token, check_run, check_sdk_items, random_token
from support.e2e_job import Job, Result
from support.e2e_job_end import (
    PUSHERS,
    JobEnd,
    count_differences,
    held,
    last_accepted,
    read_reports,
    term_time,
    unattributed,
)
from support.e2e_otlp import SIGNALS, file_bytes
from support.otelcol import collector_binary
from support.slurm_job import output_tail
from support.slurm_multi import require_multi_cluster
from support.slurm_multi_job import (
    EXPORTERS,
    NODES,
    MultiRun,
    MultiScenario,
    backend_on_the_bridge,
    run_multi_node_job,
)
from support.slurm_script import pusher_report

# The three-node cluster's tests run on one worker, beside the single-node cluster's (conftest.py).
pytestmark = [
    pytest.mark.slurm,
    pytest.mark.collector,
    pytest.mark.xdist_group("slurm-three-nodes"),
]

# The stop races a steady stream only if items were accepted this close before TERM.
LAST_SECOND = 1.0
SHARED = ("service.name", "user", "run_id", "slurm_job_id", "benchmark", "cluster")
# What the Prometheus receiver reports of each scrape, answered or not; the rest is the target's.
SCRAPE_OUTCOME = {
    "up",
    "scrape_duration_seconds",
    "scrape_samples_scraped",
    "scrape_samples_post_metric_relabeling",
    "scrape_series_added",
}


@pytest.fixture(autouse=True)
def _cluster() -> None:
    require_multi_cluster()


@pytest.fixture
def token() -> str:
    return random_token()


@pytest.fixture
def backend_and_proxy(token: str) -> Iterator[tuple[OtlpBackend, RoutingProxy]]:
    backend, proxy = backend_on_the_bridge(token)
    yield backend, proxy
    proxy.close()
    backend.close()


def run(
    tmp_path: Path,
    token: str,
    pair: tuple[OtlpBackend, RoutingProxy],
    line: str = "current",
    **changes: Any,
) -> MultiRun:
    name = changes.pop("name")
    job = Job(line, ("otlp_http", "file"), token)
    scenario = MultiScenario(name, job, str(collector_binary(line)), **changes)
    return run_multi_node_job(tmp_path / name, tmp_path / "runs", scenario, *pair)


def check_clean_life(multi: MultiRun) -> Result:
    assert multi.status.get("start") == "0", f"start failed: {multi.start_error.strip()}"
    assert multi.status.get("driver") == "0", f"the driver failed:\n{output_tail(multi.work)}"
    assert multi.status.get("stop") == "0", f"stop: {multi.stop_error.strip()}"
    assert multi.stop_error == "" and multi.job_state == "COMPLETED", (
        multi.stop_error,
        multi.job_state,
    )
    assert not multi.cmdline_leaks, f"the token is on command lines: {multi.cmdline_leaks[:3]}"
    assert multi.result is not None
    assert multi.result.collector_log == multi.job_dir / "otel" / "collector.log"
    return multi.result


def scraped_nodes(points: list[Any]) -> dict[str, set[str]]:
    """Scrape job -> the host.name of every point its targets served (None where one was
    missing); the receiver's own series of each scrape are left out."""
    found: dict[str, set[str]] = {}
    for p in points:
        if p.metric in SCRAPE_OUTCOME:
            continue
        job = p.resource.get(OVERRIDE)
        if job in ("dcgm", "node") or str(job).startswith("gym-vllm/"):
            found.setdefault(job, set()).add(p.resource.get("host.name"))
    return found


def check_shared_attributes(result: Result, points: list[Any], where: str) -> None:
    for p in points:
        missing = [k for k in SHARED if k not in p.resource]
        assert not missing, (
            f"{where}: {p.resource.get(OVERRIDE)} on {p.resource.get('host.name')} lacks {missing}"
        )
    assert {p.resource["slurm_job_id"] for p in points} == {result.slurm_job_id}


def report(job_dir: Path) -> dict[str, Any]:
    completed = helpers.run_cli("report", job_dir, "--format", "json", cwd=job_dir)
    return json.loads(completed.stdout)


@pytest.mark.parametrize("line", ["legacy", "current"])
def test_every_node_of_the_bundled_example_is_observed(
    tmp_path: Path, token: str, backend_and_proxy: tuple[OtlpBackend, RoutingProxy], line: str
) -> None:
    multi = run(tmp_path, token, backend_and_proxy, line, name=f"example-{line}")
    result = check_clean_life(multi)
    check_run(result)  # backend == files, every SDK item, the token in no file nor log line
    targets = json.loads((multi.job_dir / "otel" / "targets" / "node.json").read_text())
    assert targets == [
        {
            "targets": [f"{'localhost' if n == 'n1' else n}:9100"],
            "labels": {"instance": f"{n}:9100"},
        }
        for n in NODES
    ]
    for where, items in (("files", result.file_items), ("backend", result.backend_items)):
        points = items("metrics")
        assert scraped_nodes(points) == {
            "gym-vllm/policy": {"n1"},
            "gym-vllm/judge": {"n2"},
            "dcgm": set(NODES),
            "node": set(NODES),
        }, where
        check_shared_attributes(result, [p for p in points if "host.name" in p.resource], where)
        # Every node delivered the whole exposition of each of its exporters.
        for job, fixture in EXPORTERS.items():
            names = Counter(
                p.resource["host.name"]
                for p in points
                if p.resource.get(OVERRIDE) == job
                and p.metric in result.exporters[job].metric_names()
            )
            assert set(names) == set(NODES), (where, job, fixture, names)
    states = {
        t["instance"]: (t["node"], t["state"]) for t in report(multi.job_dir)["scrape_targets"]
    }
    assert states == {
        "n1:8000": ("n1", "up"),
        "n2:8100": ("n2", "up"),
        **{f"{n}:{port}": (n, "up") for n in NODES for port in (9100, 9400)},
    }


def test_a_node_without_exporters_and_a_pool_without_its_service(
    tmp_path: Path, token: str, backend_and_proxy: tuple[OtlpBackend, RoutingProxy]
) -> None:
    multi = run(
        tmp_path,
        token,
        backend_and_proxy,
        name="faults",
        exporters_on=("n1", "n2"),
        judge_starts=False,
    )
    result = check_clean_life(multi)
    check_no_token(result)
    for where, items in (("files", result.file_items), ("backend", result.backend_items)):
        check_sdk_items(result, {s: items(s) for s in SIGNALS}, where)
        assert scraped_nodes(items("metrics")) == {
            "gym-vllm/policy": {"n1"},
            "dcgm": {"n1", "n2"},
            "node": {"n1", "n2"},
        }, where
    targets = report(multi.job_dir)["scrape_targets"]
    missing = {(t["node"], t["instance"], t["state"]) for t in targets if t["state"] != "up"}
    assert missing == {
        ("n2", "n2:8100", "never up"),
        ("n3", "n3:9100", "never up"),
        ("n3", "n3:9400", "never up"),
    }
    text = helpers.run_cli("report", multi.job_dir, cwd=multi.job_dir).stdout
    assert (
        "  n3: node (n3:9100) never up" in text
        and "  n2: gym-vllm/judge (n2:8100) never up" in text
    )


@pytest.mark.parametrize("line", ["legacy", "current"])
def test_servers_on_every_node_pushing_until_the_job_ends(
    tmp_path: Path, token: str, backend_and_proxy: tuple[OtlpBackend, RoutingProxy], line: str
) -> None:
    """Issue 37 across nodes: a server on each of n1, n2 and n3 (``e2e_pusher.py``, one step
    each; n2's and n3's push over the job's network to the collector on n1, which listens on
    every interface) pushes spans every 25 ms, log records and a counter from the collector's
    start through its stop and the stop's drain, TERMed only after the stop returned; the
    delivery report is on. Every item their SDK saw accepted is in the files (read whole by
    ``zstd`` too) and at the backend exactly once, and every resource at the backend, the
    scraped nodes' included, carries the job's attributes: the drain took nothing pushed from
    any node."""
    multi = run(
        tmp_path,
        token,
        backend_and_proxy,
        line,
        name=f"job-end-{line}",
        pushers=True,
        otel={"listen_host": "0.0.0.0", "delivery_report": True},
    )
    assert multi.status.get("start") == "0", f"start failed: {multi.start_error.strip()}"
    assert multi.status.get("stop") == "0", f"stop: {multi.stop_error.strip()}"
    assert multi.status.get("pushers") == "0", output_tail(multi.work)
    assert multi.job_state == "COMPLETED", multi.job_state
    assert not multi.cmdline_leaks, f"the token is on command lines: {multi.cmdline_leaks[:3]}"
    result = multi.result
    assert result is not None, output_tail(multi.work)
    term = term_time((multi.job_dir / "otel" / "collector.log").read_text(errors="replace"))
    end = read_reports({name: pusher_report(multi.work, name) for name in PUSHERS}, term)
    # The stop met a steady stream from every node: items of each signal accepted in the last
    # second before TERM.
    last = {(n, s): last_accepted(end, s, n) for n in PUSHERS for s in SIGNALS}
    quiet = {k: t for k, t in last.items() if t is None or t <= -LAST_SECOND}
    assert not quiet, f"nothing accepted in the last second before TERM from {quiet}"
    items = {
        "backend": {s: result.backend_items(s) for s in SIGNALS},
        "files": {s: result.file_items(s) for s in SIGNALS},
    }
    wrong = [
        problem
        for where, held_there in items.items()
        if (problem := count_differences(where, held(held_there), end.accepted))
    ]
    assert not wrong, "; ".join(wrong)
    found = unattributed(items["backend"])
    assert not found, f"{sum(found.values())} items at the backend lack the job's attributes"
    check_zstd_reads_the_files(multi.job_dir / "otel", line)
    check_no_token(result)
    print(
        f"[job end, {line}] accepted spans/points/logs per server: "
        f"{ {n: [end_items(end, n, s) for s in SIGNALS] for n in PUSHERS} }; the last before "
        f"TERM {min(t for t in last.values() if t is not None):+.2f}s or later"
    )


def end_items(end: JobEnd, service: str, signal: str) -> int:
    """How many of ``service``'s items of ``signal`` the collector accepted."""
    return sum(n for (name, _), n in end.accepted[signal].items() if name == service)


def check_zstd_reads_the_files(otel_dir: Path, line: str) -> None:
    """Each signal's file is there as the line writes it (zstd streams on the current line,
    JSON lines on the legacy one), and ``zstd -dc`` (zstdcat) reads every compressed file
    whole, to the very bytes the tests' own reader counted the items from."""
    zstd = shutil.which("zstd")
    assert zstd, "the zstd command is needed (.ci/run installs it)"
    for s in SIGNALS:
        assert (otel_dir / f"{s}{helpers.FILE_SUFFIXES[line]}").is_file(), f"no {s} file"
    for path in sorted(otel_dir.glob("*.zst")):
        decoded = subprocess.run([zstd, "-dcq", str(path)], capture_output=True, timeout=60)
        assert decoded.returncode == 0, (path.name, decoded.stderr)
        assert decoded.stdout == file_bytes(path), f"zstd reads {path.name} otherwise"
