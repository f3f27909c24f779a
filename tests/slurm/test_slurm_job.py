"""The collector's life as a step of a real Slurm job, on the single-node cluster of .ci/slurm-up.

Every scenario submits one batch job built around the package's ``collector_step_script`` (see
``support/slurm_job.py``): model service and node exporters as ``srun --overlap`` steps, the
collector's start, a driver step with the real OpenTelemetry SDK in the environment of
``merged_driver_env``, the collector's stop. The backend behind the routing proxy runs in this
process. The collector's ports are fixed by the templates, so the scenarios run one after
another, never in parallel.

Outside CI the suite skips when no cluster takes jobs (run ``.ci/slurm-up`` as root); with
``CI=true`` it fails instead.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml
from support import helpers, job_fs
from support.e2e_backend import OtlpBackend, RoutingProxy
from support.e2e_checks import (
    check_files,
    check_final_counter,
    check_no_token,
    check_run,
    check_sdk_items,
    check_span_counts,
    random_token,
)
from support.e2e_job import TOKEN_ENV, Job, Result
from support.e2e_job_end import (
    PUSHERS,
    count_differences,
    held,
    last_accepted,
    read_reports,
    term_time,
    unattributed,
)
from support.e2e_life import OWN_METRICS_DEFAULT, port_taken
from support.e2e_otlp import SIGNALS
from support.e2e_tally import assert_holds_exactly, count, found, sent
from support.otelcol import collector_binary
from support.slurm_cluster import require_cluster
from support.slurm_job import SlurmRun, merge_runs, run_slurm_job
from support.slurm_multi import (
    CONTROLLER_ADDRESS,
    NODES,
    require_multi_cluster,
    submit,
    wait_gone,
)
from support.slurm_script import Scenario, pusher_report

from nemo_gym.orchestration.executors.otel import COLLECTOR_SERVICE_NAME, DRAIN_SECONDS
from nemo_gym.orchestration.executors.otel._job_dir.collector_log import (
    CLEAN_STOP,
    read_collector_log,
)
from nemo_gym.orchestration.executors.otel._step.bounded_log import LOG_MAX_BYTES, log_parts
from nemo_gym.orchestration.executors.otel._step.disk_budget import read_disk_budget

pytestmark = [pytest.mark.slurm, pytest.mark.collector]

LINES = ("legacy", "current")
BOTH = ("otlp_http", "file")
MISSING_BINARY = "nemo-gym-otel-no-such-collector"
# The stop races a steady stream only if items were accepted this close before TERM.
LAST_SECOND = 1.0


# The single-node cluster runs one job at a time (its jobs share the machine's ports), so its
# tests are the suite's longest path. The scenarios that need nothing of the machine's own
# namespace (the port 8888 taken there, say) run as the same single-node job on one node of the
# three-node cluster instead, on that cluster's worker (``conftest.py``): each cluster's tests
# still run one after the other.
ON_THREE_NODES = pytest.mark.xdist_group("slurm-three-nodes")
# The backend path behind the disk queue, a step of its own (see _render/sender_config.py).
SENDER_STEP = f"{COLLECTOR_SERVICE_NAME}_sender"


def _on_three_nodes(request: pytest.FixtureRequest) -> bool:
    return any(m.args == ON_THREE_NODES.args for m in request.node.iter_markers("xdist_group"))


@pytest.fixture(autouse=True)
def _cluster(request: pytest.FixtureRequest) -> None:
    if _on_three_nodes(request):
        require_multi_cluster()
    else:
        require_cluster()


@pytest.fixture
def token() -> str:
    return random_token()


@pytest.fixture
def backend() -> Iterator[OtlpBackend]:
    backend = OtlpBackend()
    yield backend
    backend.close()


@pytest.fixture
def proxy(
    request: pytest.FixtureRequest, backend: OtlpBackend, token: str
) -> Iterator[RoutingProxy]:
    """On loopback, or on the three-node cluster's bridge, where its nodes reach it."""
    host = CONTROLLER_ADDRESS if _on_three_nodes(request) else "127.0.0.1"
    proxy = RoutingProxy(backend, token, host=host)
    yield proxy
    proxy.close()


def run(tmp_path: Path, backend: OtlpBackend, proxy: RoutingProxy, scenario: Scenario) -> SlurmRun:
    return run_slurm_job(
        tmp_path / scenario.name,
        tmp_path / "runs",
        scenario,
        backend,
        proxy,
        three_nodes=on_three_nodes(proxy),
    )


def on_three_nodes(proxy: RoutingProxy) -> bool:
    """Whether the test's job runs on the three-node cluster (its proxy listens on the bridge)."""
    return urlsplit(proxy.url).hostname == CONTROLLER_ADDRESS


def scenario(name: str, token: str, line: str = "current", **changes: Any) -> Scenario:
    binary = changes.pop("binary", None) or str(collector_binary(line))
    return Scenario(name, Job(line, BOTH, token), binary, **changes)


# --- checks -----------------------------------------------------------------------------------


def check_token_hidden(slurm: SlurmRun) -> None:
    """Not in the job script, the fragment, Slurm's output, scontrol's view or a command line.
    (The job directory and the collector's log are checked by ``check_run``.)"""
    token = slurm.scenario.job.token
    places = {
        "the job script": slurm.script.read_text("utf-8"),
        "the collector step fragment": (slurm.work / "collector-step.sh").read_text("utf-8"),
        **{
            f"Slurm output {p.name}": p.read_text("utf-8", "replace") for p in slurm.slurm_outputs()
        },
        "scontrol show job -d": "\n".join(slurm.scontrol),
        "the job directory": "\n".join(
            p.read_text("utf-8", "replace") for p in slurm.job_dir.rglob("*") if p.is_file()
        ),
    }
    assert any(slurm.scontrol), "scontrol show job -d was never read"
    leaks = [where for where, text in places.items() if token in text]
    assert not leaks, f"the token is in {leaks}"
    assert not slurm.cmdline_leaks, (
        f"the token is on {len(slurm.cmdline_leaks)} command lines: {slurm.cmdline_leaks[:3]}"
    )


def check_started_and_stopped(slurm: SlurmRun) -> Result:
    """The whole life: healthy start, the driver ran, the stop ended the named step with 0."""
    status = slurm.status
    assert status.get("start") == "0", f"start failed: {slurm.start_error.strip()}"
    assert status.get("driver") == "0", f"the driver step failed:\n{slurm.output_tail()}"
    assert COLLECTOR_SERVICE_NAME in slurm.steps_seen, (
        f"no step named {COLLECTOR_SERVICE_NAME} while the job ran: {sorted(slurm.steps_seen)}"
    )
    assert status.get("stop") == "0", (
        f"otel_collector_stop returned {status.get('stop')}: {slurm.stop_error.strip()}"
    )
    assert slurm.stop_error == "", slurm.stop_error
    assert COLLECTOR_SERVICE_NAME not in slurm.steps_after_stop
    assert SENDER_STEP not in slurm.steps_after_stop
    assert slurm.job_state == "COMPLETED", slurm.job_state
    assert slurm.result is not None
    return slurm.result


def check_job_end(result: Result, items: dict[str, dict[str, list[Any]]]) -> None:
    """The counter's final value and the span metrics of the last spans, at both destinations."""
    for where, destination in items.items():
        check_final_counter(result, destination["metrics"], where)
        check_span_counts(result, destination["metrics"], where)


def destinations(result: Result) -> dict[str, dict[str, list[Any]]]:
    return {
        "backend": {s: result.backend_items(s) for s in SIGNALS},
        "files": {s: result.file_items(s) for s in SIGNALS},
    }


def check_failed_start(slurm: SlurmRun, status: str, *words: str) -> str:
    """Start returned ``status`` with one line on stderr holding ``words``; no step is left."""
    assert slurm.status.get("start") == status, (
        f"start returned {slurm.status.get('start')}, want {status}: {slurm.start_error.strip()}"
    )
    lines = slurm.start_error.splitlines()
    assert len(lines) == 1, f"want one line on stderr, got: {slurm.start_error!r}"
    for word in words:
        assert word in lines[0], f"{word!r} not in {lines[0]!r}"
    assert COLLECTOR_SERVICE_NAME not in slurm.steps_after_start, slurm.steps_after_start
    assert SENDER_STEP not in slurm.steps_after_start, slurm.steps_after_start
    assert slurm.result is None, "the job went on after a failed start"
    assert slurm.job_state == "COMPLETED", slurm.job_state
    check_token_hidden(slurm)
    print(f"[{slurm.scenario.name}] start returned {status}: {lines[0]}")
    return lines[0]


def print_stop(slurm: SlurmRun, extra: str = "") -> None:
    print(
        f"[{slurm.scenario.name}] job {slurm.job_id}: TERM to exit "
        f"{slurm.seconds_from_term_to_exit():.1f}s{extra}"
    )


# --- the tests --------------------------------------------------------------------------------


@pytest.mark.parametrize("line", LINES)
def test_collector_step_delivers_everything(
    tmp_path: Path, backend: OtlpBackend, proxy: RoutingProxy, token: str, line: str
) -> None:
    """The whole life on the cluster: every e2e check, the job's end, the step, the token."""
    slurm = run(tmp_path, backend, proxy, scenario(f"life-{line}", token, line))
    result = check_started_and_stopped(slurm)
    # The disk queue is the default: the backend path ran as a step of its own (the sender),
    # and the stop ran the drain config as another.
    assert SENDER_STEP in slurm.steps_seen, sorted(slurm.steps_seen)
    assert f"{COLLECTOR_SERVICE_NAME}_drain" in slurm.steps_seen, sorted(slurm.steps_seen)
    check_run(result)  # prints what was sent and what arrived where
    check_job_end(result, destinations(result))
    check_token_hidden(slurm)
    # The backend was up, so the stop left nothing queued: the stop ended its drain on the drain's
    # own reading of its empty queues, not after the whole DRAIN_SECONDS.
    drain_ran = drain_seconds(slurm.job_dir / "otel" / "collector.log")
    assert drain_ran < DRAIN_SECONDS, f"the drain ran {drain_ran:.1f}s, its whole bound"
    print_stop(slurm, f", drain ready to TERM {drain_ran:.1f}s")


def drain_seconds(log: Path) -> float:
    """From the stop's drain being ready to its TERM, by the last start's and shutdown's lines
    of the collector's log (the step appends the drain's output there after the collector's)."""
    stamps: dict[str, float] = {}
    for line in log.read_text(errors="replace").splitlines():
        for message in ("Everything is ready", "Starting shutdown"):
            if message in line:
                stamps[message] = datetime.fromisoformat(line.split("\t", 1)[0]).timestamp()
    assert len(stamps) == 2, f"no start or no shutdown of a collector in {log}"
    seconds = stamps["Starting shutdown"] - stamps["Everything is ready"]
    assert seconds > 0, f"the last collector in {log} shut down before it was ready"
    return seconds


def test_missing_binary_fails_the_start(
    tmp_path: Path, backend: OtlpBackend, proxy: RoutingProxy, token: str
) -> None:
    slurm = run(tmp_path, backend, proxy, scenario("no-binary", token, binary=MISSING_BINARY))
    check_failed_start(slurm, "127", "not found", MISSING_BINARY)
    assert COLLECTOR_SERVICE_NAME not in slurm.steps_seen


def test_unset_token_fails_the_start(
    tmp_path: Path, backend: OtlpBackend, proxy: RoutingProxy, token: str
) -> None:
    slurm = run(tmp_path, backend, proxy, scenario("no-token", token, token_in_env=False))
    check_failed_start(slurm, "1", TOKEN_ENV)
    assert COLLECTOR_SERVICE_NAME not in slurm.steps_seen


def _unknown_section_before_the_mark(text: str) -> str:
    """A section the collector refuses, inserted before the last line that ties collector.yaml to
    its drain.yaml, so that the start's check of the pair passes and the collector reads it (an
    edit after that line is refused by the start itself: tests/test_step.py)."""
    body, mark = text.rstrip("\n").rsplit("\n", 1)
    return f"{body}\nno_such_section: {{}}\n{mark}\n"


def test_broken_config_fails_fast_naming_the_log(
    tmp_path: Path, backend: OtlpBackend, proxy: RoutingProxy, token: str
) -> None:
    """The collector's config broken after it was written (ingest.yaml, what the step runs
    beside a disk queue): the collector exits, the start says so (not a timeout), stops the
    sender it started, and names the log, whose last line says why."""
    broken = scenario("broken-config", token, break_config=_unknown_section_before_the_mark)
    slurm = run(tmp_path, backend, proxy, broken)
    log = slurm.job_dir / "otel" / "collector.log"
    line = check_failed_start(slurm, "1", "exited", str(log))
    assert "no_such_section" in line, "the last log line does not say what is wrong"
    assert proxy.kept.total() == 0


def _judged_complete(signals: dict[str, Any], result: Result) -> None:
    """``report`` judged the job's traces and logs complete: the files hold what the tests read
    there, and the backend got all of it with nothing failed or dropped (the delivery report's
    metrics have their own last reading lost at the stop, upstream issue 12944)."""
    for name in ("traces", "logs"):
        entry = signals[name]
        assert entry["verdict"] == "complete", entry
        assert entry["files"]["items"] == len(result.file_items(name)) > 0, entry
        assert entry["backend"]["sent"] == entry["files"]["items"], entry
        assert entry["backend"]["failed_or_dropped"] == 0, entry


@ON_THREE_NODES
def test_black_holed_backend_at_stop(
    tmp_path: Path, backend: OtlpBackend, proxy: RoutingProxy, token: str
) -> None:
    """The backend takes requests and never answers from the moment the stop begins: the
    collector still exits 0 within the bound, and the files hold everything."""
    slurm = run(tmp_path, backend, proxy, scenario("black-hole", token, black_hole_at_stop=True))
    result = check_started_and_stopped(slurm)
    assert proxy.held.total() > 0, "nothing reached the black hole: the scenario proved nothing"
    check_files(result)
    check_no_token(result)
    check_job_end(result, {"files": destinations(result)["files"]})
    check_token_hidden(slurm)
    print_stop(slurm, f"; requests the black hole held unanswered: {dict(proxy.held)}")


def test_taken_port_8888_does_not_stop_the_collector(
    tmp_path: Path, backend: OtlpBackend, proxy: RoutingProxy, token: str
) -> None:
    """Something on the node (a site's own collector) already listens on 8888."""
    with port_taken(OWN_METRICS_DEFAULT):
        slurm = run(tmp_path, backend, proxy, scenario("port-8888", token))
    result = check_started_and_stopped(slurm)
    check_run(result)
    check_token_hidden(slurm)
    print_stop(slurm)


def test_second_run_keeps_the_first_runs_data(
    tmp_path: Path, backend: OtlpBackend, proxy: RoutingProxy, token: str
) -> None:
    """A requeued job: the same job directory, the config written again, a second collector."""
    first = check_started_and_stopped(run(tmp_path, backend, proxy, scenario("run-1", token)))
    second_run = run(tmp_path, backend, proxy, scenario("run-2", token))
    second = check_started_and_stopped(second_run)
    assert second.job_dir == first.job_dir
    both = merge_runs(first, second)
    files = {s: both.file_items(s) for s in SIGNALS}
    first_spans = {s["span_id"] for report in first.sent.values() for s in report["spans"]}
    kept = len(first_spans & {s.span_id for s in files["traces"]})
    assert kept == len(first_spans), (
        f"after the second run the files hold {kept} of the first run's {len(first_spans)} spans"
    )
    check_sdk_items(both, files, "files after two runs")
    check_token_hidden(second_run)
    print(
        f"[second run] files hold {len(files['traces'])} spans, {len(files['logs'])} log records "
        f"from jobs {first.slurm_job_id} and {second.slurm_job_id}"
    )


@pytest.mark.parametrize("stop", ["naive", "scancel-term"])
def test_how_the_step_is_signalled_decides_the_last_batch(
    tmp_path: Path, backend: OtlpBackend, proxy: RoutingProxy, token: str, stop: str
) -> None:
    """A batch accepted just before the stop signal. ``kill -TERM`` of the collector's
    background srun (what an executor keeping its pid does) makes srun kill the collector, which
    never flushes: the batch never reaches the job directory's files. A TERM to the step itself
    (``scancel --signal=TERM``, what the fragment sends) lets it flush to both destinations.
    This is why the fragment stops the step the way it does, and it shows that the suite fails
    when the stop is wrong. With the backend's queue in memory: on disk (the default) the batch
    a TERM leaves queued reaches the backend through the stop's drain, which these hand-made
    stops do not run (the fragment's does: ``test_collector_step_delivers_everything``)."""
    in_memory = {"backend_queue_megabytes": None}
    slurm = run(
        tmp_path, backend, proxy, scenario(f"stop-{stop}", token, stop=stop, otel=in_memory)
    )
    assert slurm.status.get("start") == "0", slurm.start_error
    assert slurm.status.get("driver") == "0", f"the driver step failed:\n{slurm.output_tail()}"
    result = slurm.result
    assert result is not None
    late = slurm.late_spans()
    assert late, "the late producer's collector accepted no span"
    arrived = {
        where: late & {s.span_id for s in destination["traces"]}
        for where, destination in destinations(result).items()
    }
    print(
        f"[stop by {stop}] srun exit {slurm.status['stop']}; late spans accepted {len(late)}, "
        f"arrived: { {where: len(spans) for where, spans in arrived.items()} }"
    )
    if stop == "naive":
        assert slurm.status["stop"] != "0", "the naive stop ended the collector cleanly"
        # The backend may still win the race with the kill (srun's kill travels through
        # slurmd); the job directory's files, flushed once a second, never do.
        assert not arrived["files"], "the late batch reached the files despite the naive stop"
    else:
        assert slurm.status["stop"] == "0", f"the collector exited {slurm.status['stop']}"
        assert all(spans == late for spans in arrived.values()), f"late spans arrived: {arrived}"


@pytest.mark.parametrize("line", LINES)
def test_delivery_report_job_stops_cleanly_and_is_reported(
    tmp_path: Path, backend: OtlpBackend, proxy: RoutingProxy, token: str, line: str
) -> None:
    """With ``otel.delivery_report`` the collector's last push, at shutdown, finds its own
    receiver closed and it exits 1 (upstream collector issue 12944). The stop tells that one
    failure from any other, returns 0 with one line saying so, and ``nemo-gym-otel report`` on
    the job directory finds traces and logs complete, equal at the files and the backend."""
    slurm = run(
        tmp_path,
        backend,
        proxy,
        scenario(f"report-{line}", token, line, otel={"delivery_report": True}),
    )
    assert slurm.status.get("start") == "0", slurm.start_error
    log = (slurm.job_dir / "otel" / "collector.log").read_text("utf-8")
    assert "failed to shutdown meter provider" in log, "the collector did not fail its last push"
    assert slurm.status.get("stop") == "0", slurm.stop_error
    (note,) = slurm.stop_error.splitlines()
    assert "only the delivery report's own last reading" in note and "12944" in note, note
    assert slurm.job_state == "COMPLETED", slurm.job_state
    report = helpers.run_cli("report", slurm.job_dir, "--format", "json", cwd=tmp_path)
    assert report.returncode in (0, 1), report.stderr
    signals = {s["signal"]: s for s in json.loads(report.stdout)["signals"]}
    result = slurm.result
    assert result is not None
    _judged_complete(signals, result)
    check_token_hidden(slurm)
    print_stop(slurm, f"; {note}")


@ON_THREE_NODES
@pytest.mark.parametrize("line", LINES)
def test_servers_pushing_until_the_job_ends(
    tmp_path: Path, backend: OtlpBackend, proxy: RoutingProxy, token: str, line: str
) -> None:
    """Issue 37 on the cluster: three servers (``e2e_pusher.py``, one step each) push spans every
    25 ms, log records and a counter from the collector's start through its stop and the stop's
    drain, and are TERMed only after the stop returned; the delivery report is on. Every item
    their SDK saw accepted is in the files and at the backend exactly once, and every resource at
    the backend carries the job's attributes: the drain took nothing the servers pushed."""
    slurm = run(
        tmp_path,
        backend,
        proxy,
        scenario(f"job-end-{line}", token, line, pushers=PUSHERS, otel={"delivery_report": True}),
    )
    assert slurm.status.get("start") == "0", slurm.start_error
    assert slurm.status.get("stop") == "0", slurm.stop_error
    assert slurm.status.get("pushers") == "0", slurm.output_tail()
    assert f"{COLLECTOR_SERVICE_NAME}_drain" in slurm.steps_seen, sorted(slurm.steps_seen)
    result = slurm.result
    assert result is not None
    term = term_time((slurm.job_dir / "otel" / "collector.log").read_text(errors="replace"))
    end = read_reports({name: pusher_report(slurm.work, name) for name in PUSHERS}, term)
    last = {(n, s): last_accepted(end, s, n) for n in PUSHERS for s in SIGNALS}
    quiet = {k: t for k, t in last.items() if t is None or t <= -LAST_SECOND}
    assert not quiet, f"nothing accepted in the last second before TERM from {quiet}"
    items = destinations(result)
    wrong = [
        problem
        for where, held_there in items.items()
        if (problem := count_differences(where, held(held_there), end.accepted))
    ]
    assert not wrong, "; ".join(wrong)
    found = unattributed(items["backend"])
    assert not found, f"{sum(found.values())} items at the backend lack the job's attributes"
    check_token_hidden(slurm)
    print_stop(
        slurm, f"; accepted spans/points/logs {[sum(end.accepted[s].values()) for s in SIGNALS]}"
    )


# --- job directories on other file systems (issue 37, "No flock, no failed job") ---------------
# The job directory on the mounts of .ci/job-fs-up: noflock (flock fails with ENOSYS, as on Lustre
# without flock) and sshfs (a network file system whose flock works, node-locally). On noflock the
# collector cannot open its disk queue in the job directory (bbolt flocks its database): the
# step's start puts it in a node-local folder, and the job starts, delivers everything and drains
# at the stop. On sshfs the queue stays where it was.

DRAIN_STEP = f"{COLLECTOR_SERVICE_NAME}_drain"
MOVED = "nemo-gym-otel: the backend's queue is node-local on "


@pytest.fixture
def node_local() -> Iterator[list[Path]]:
    """The node-local queue folders a test's jobs made (the cluster's one node is this host)."""
    made: list[Path] = []
    yield made
    for folder in made:
        shutil.rmtree(folder, ignore_errors=True)


def run_on(
    file_system: str,
    tmp_path: Path,
    backend: OtlpBackend,
    proxy: RoutingProxy,
    token: str,
    line: str,
) -> SlurmRun:
    """The whole life of a default job whose job directory is on ``file_system``."""
    job_parent = job_fs.fresh_folder(file_system)
    name = f"{file_system}-{line}"
    job = scenario(name, token, line)
    slurm = run_slurm_job(
        tmp_path / name, job_parent, job, backend, proxy, three_nodes=on_three_nodes(proxy)
    )
    result = check_started_and_stopped(slurm)
    assert DRAIN_STEP in slurm.steps_seen, f"the stop ran no drain: {sorted(slurm.steps_seen)}"
    check_run(result)
    check_job_end(result, destinations(result))
    check_token_hidden(slurm)
    return slurm


def queue_files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.is_file() and p.stat().st_size > 0)


@pytest.mark.parametrize("line", ("current", "legacy"))
def test_no_flock_job_dir_queues_node_locally(
    tmp_path: Path,
    backend: OtlpBackend,
    proxy: RoutingProxy,
    token: str,
    line: str,
    node_local: list[Path],
) -> None:
    """flock fails in the job directory: the queue goes node-local, the job delivers all, the
    stop's drain reaches the queue, the log and the report say where it was."""
    slurm = run_on("noflock", tmp_path, backend, proxy, token, line)
    otel = slurm.job_dir / "otel"
    queue = otel / "queue"
    places = (otel / "queue-node-local").read_text("utf-8").splitlines()
    assert len(places) == 1, places
    node, _, folder = places[0].partition(" ")
    node_local.append(Path(folder))
    assert queue.is_symlink(), "otel/queue is no link: the queue stayed in the job directory"
    assert queue.readlink() == Path(folder), (queue.readlink(), folder)
    assert Path(folder).name.startswith(f"nemo-gym-otel-{slurm.job_id}-"), folder
    # The queue's databases are there (the collector and the drain opened them), and the
    # token is not.
    assert queue_files(Path(folder)), f"no queue database in {folder}"
    for path in Path(folder).iterdir():
        assert token.encode() not in path.read_bytes(), f"the token is in {path}"
    log = (otel / "collector.log").read_text("utf-8")
    (said,) = [x for x in log.splitlines() if x.startswith(MOVED)]
    assert f"on {node} in {folder}" in said and "Function not implemented" in said, said
    text = helpers.run_cli("report", slurm.job_dir, cwd=tmp_path).stdout
    (where,) = [x for x in text.splitlines() if x.startswith("backend queue:")]
    assert f"node-local on {node} in {folder}" in where, where
    assert f"drained only on {node}" in where, where
    print(f"[{line}] job {slurm.job_id}: {said}")


IN_MEMORY = "nemo-gym-otel: the backend's queue is in memory on "


def run_in_memory(
    tmp_path: Path,
    backend: OtlpBackend,
    proxy: RoutingProxy,
    job: Scenario,
) -> tuple[SlurmRun, Path]:
    """A default job whose job directory and TMPDIR are both on the noflock bed (no folder
    locks: the queue in memory); the run and its TMPDIR, left empty."""
    job_parent = job_fs.fresh_folder("noflock")
    tmpdir = job_fs.fresh_folder("noflock")
    job.env["TMPDIR"] = str(tmpdir)
    slurm = run_slurm_job(
        tmp_path / job.name, job_parent, job, backend, proxy, three_nodes=on_three_nodes(proxy)
    )
    assert DRAIN_STEP not in slurm.steps_seen, f"the stop ran a drain: {sorted(slurm.steps_seen)}"
    assert list(tmpdir.iterdir()) == [], "a node-local folder was left in TMPDIR"
    return slurm, tmpdir


@pytest.mark.parametrize("line", ("current", "legacy"))
def test_no_flock_anywhere_keeps_the_queue_in_memory(
    tmp_path: Path,
    backend: OtlpBackend,
    proxy: RoutingProxy,
    token: str,
    line: str,
) -> None:
    """flock fails in the job directory and in the node's TMPDIR (both on the noflock mount):
    the start keeps the queue in memory, the job delivers everything at both destinations, the
    stop runs no drain, and the log, the report and ``drain`` say the queue was in memory."""
    slurm, tmpdir = run_in_memory(tmp_path, backend, proxy, scenario(f"memory-{line}", token, line))
    result = check_started_and_stopped(slurm)
    check_run(result)
    check_job_end(result, destinations(result))
    check_token_hidden(slurm)
    otel = slurm.job_dir / "otel"
    (place,) = (otel / "queue-node-local").read_text("utf-8").splitlines()
    node, _, where = place.partition(" ")
    assert where == "memory", place
    queue = otel / "queue"  # the storage extension made its folder, and opened nothing there
    assert not queue.exists() or (queue.is_dir() and list(queue.iterdir()) == []), queue
    config = (otel / "queue-budget.yaml").read_text("utf-8")
    assert "storage: null" in config and token not in config, config
    log = (otel / "collector.log").read_text("utf-8").splitlines()
    (said,) = [x for x in log if x.startswith(IN_MEMORY)]
    assert f"{IN_MEMORY}{node}: " in said, said
    assert f"nor does the node-local folder {tmpdir}/" in said, said
    assert (
        "nemo-gym-otel: no drain at the stop: the backend's queue was in memory, nothing of it "
        "is on disk"
    ) in log
    report = helpers.run_cli("report", slurm.job_dir, cwd=tmp_path)
    (said_there,) = [x for x in report.stdout.splitlines() if x.startswith("backend queue:")]
    assert said_there.startswith(f"backend queue: in memory on {node} "), said_there
    drained = helpers.run_cli(
        "drain", slurm.job_dir, "--collector", collector_binary(line), cwd=tmp_path
    )
    assert (drained.returncode, drained.stderr) == (0, ""), drained.stderr
    (outcome,) = drained.stdout.splitlines()
    assert "nothing queued on disk: the job step kept the backend's queue in memory" in outcome
    print(f"[{line}] job {slurm.job_id}: {said}")


@ON_THREE_NODES
@pytest.mark.parametrize("line", ("current", "legacy"))
def test_a_queue_in_memory_is_judged_by_the_report(
    tmp_path: Path,
    backend: OtlpBackend,
    proxy: RoutingProxy,
    token: str,
    line: str,
) -> None:
    """The same with the delivery report on: ``report`` finds traces and logs complete, equal
    at the files and the backend (no drain: what reached the files after the collector's last
    reading is judged by its log), and names the node the queue was in memory on."""
    job = scenario(f"memory-report-{line}", token, line, otel={"delivery_report": True})
    slurm, _ = run_in_memory(tmp_path, backend, proxy, job)
    assert slurm.status.get("start") == "0", f"start failed: {slurm.start_error.strip()}"
    assert slurm.status.get("stop") == "0", slurm.stop_error
    # The stop's one note with the delivery report: its own last reading (upstream issue 12944).
    assert all("12944" in note for note in slurm.stop_error.splitlines()), slurm.stop_error
    assert slurm.job_state == "COMPLETED", slurm.job_state
    assert SENDER_STEP not in slurm.steps_after_stop, slurm.steps_after_stop
    result = slurm.result
    assert result is not None
    document = helpers.run_cli("report", slurm.job_dir, "--format", "json", cwd=tmp_path)
    assert document.returncode in (0, 1), document.stderr
    judged = json.loads(document.stdout)
    (place,) = (slurm.job_dir / "otel" / "queue-node-local").read_text("utf-8").splitlines()
    assert judged["backend_queue_in_memory"] == [place.removesuffix(" memory")], place
    signals = {s["signal"]: s for s in judged["signals"]}
    _judged_complete(signals, result)
    check_token_hidden(slurm)


def test_a_queue_in_memory_does_not_hold_the_stop_past_its_bound(
    tmp_path: Path, backend: OtlpBackend, proxy: RoutingProxy, token: str
) -> None:
    """The queue in memory, and a backend that takes requests and never answers from the moment
    the stop begins: the stop TERMs the collector first and its sender once that had its
    seconds, so the collector still exits 0 within the bound and the files hold everything."""
    job = scenario("memory-black-hole", token, black_hole_at_stop=True)
    slurm, _ = run_in_memory(tmp_path, backend, proxy, job)
    result = check_started_and_stopped(slurm)
    assert proxy.held.total() > 0, "nothing reached the black hole: the scenario proved nothing"
    check_files(result)
    check_job_end(result, {"files": destinations(result)["files"]})
    check_token_hidden(slurm)
    print_stop(slurm, f"; requests the black hole held unanswered: {dict(proxy.held)}")


@ON_THREE_NODES
def test_sshfs_job_dir_keeps_the_queue(
    tmp_path: Path, backend: OtlpBackend, proxy: RoutingProxy, token: str
) -> None:
    """flock works (node-locally) on sshfs: the queue stays in the job directory."""
    slurm = run_on("sshfs", tmp_path, backend, proxy, token, "current")
    otel = slurm.job_dir / "otel"
    queue = otel / "queue"
    assert queue.is_dir() and not queue.is_symlink(), "the queue left the job directory"
    assert queue_files(queue), "no queue database in otel/queue"
    assert not (otel / "queue-node-local").exists()
    assert MOVED not in (otel / "collector.log").read_text("utf-8")
    text = helpers.run_cli("report", slurm.job_dir, cwd=tmp_path).stdout
    assert "backend queue:" not in text, text


DRAIN_JOB = """#!/bin/bash
#SBATCH --job-name=drain-elsewhere
#SBATCH --nodes=1 --ntasks=1 --nodelist={node} --time=3
#SBATCH --output={work}/drain-job.out --chdir={work}
echo "$SLURMD_NODENAME" >node
{cli} drain {job_dir} --collector {collector} --format json --timeout 120 >drain.json 2>drain.err
echo $? >status
"""


@ON_THREE_NODES
def test_sshfs_queue_left_by_an_outage_drains_from_another_node(
    tmp_path: Path, backend: OtlpBackend, proxy: RoutingProxy, token: str
) -> None:
    """A job on one node of the three-node cluster, its job directory on sshfs, meets a backend
    that answers 503 from start to end: its stop (and the stop's drain) leave the queue in the
    job directory (flock works on sshfs). ``nemo-gym-otel drain``, run as a job on another node
    of the cluster once the backend is back, sends it: the backend then holds every item the
    producers saw accepted exactly once, as the files do, all with the job's attributes."""
    proxy.start_outage()
    name = "sshfs-outage"
    job_parent = job_fs.fresh_folder("sshfs")
    slurm = run_slurm_job(
        tmp_path / name, job_parent, scenario(name, token), backend, proxy, three_nodes=True
    )
    result = check_started_and_stopped(slurm)
    assert DRAIN_STEP in slurm.steps_seen, f"the stop ran no drain: {sorted(slurm.steps_seen)}"
    want = sent([result])
    files = found({s: result.file_items(s) for s in SIGNALS})
    assert_holds_exactly(files, want, "files")
    before = found({s: result.backend_items(s) for s in SIGNALS})
    assert all(want[s] - before[s] for s in SIGNALS), "the outage cost the backend nothing"
    queue = slurm.job_dir / "otel" / "queue"
    assert queue.is_dir() and not queue.is_symlink() and queue_files(queue), "no queue left"
    # scontrol's view while the job ran names its node (and "(null)" while it was pending).
    views = (
        w.split("=", 1)[1] for t in slurm.scontrol for w in t.split() if w.startswith("NodeList=")
    )
    (ran_on,) = {node for node in views if node in NODES}
    elsewhere = next(node for node in NODES if node != ran_on)
    proxy.end_outage()
    work = tmp_path / "drain"
    work.mkdir()
    script = work / "drain.sh"
    script.write_text(
        DRAIN_JOB.format(
            node=elsewhere,
            work=work,
            cli=helpers.CLI,
            job_dir=slurm.job_dir,
            collector=collector_binary("current"),
        ),
        "utf-8",
    )
    drain_job = submit(script, helpers.cli_env(**{TOKEN_ENV: token}))
    wait_gone(drain_job, 180)
    said = (work / "drain.err").read_text("utf-8") + (work / "drain-job.out").read_text("utf-8")
    assert (work / "node").read_text("utf-8").strip() == elsewhere, said
    assert (work / "status").read_text("utf-8").strip() == "0", said
    outcome = json.loads((work / "drain.json").read_text("utf-8"))
    assert outcome["empty"] and sum(outcome["sent"].values()) > 0, outcome
    at_backend = {s: result.backend_items(s) for s in SIGNALS}
    assert_holds_exactly(found(at_backend), want, "backend after the drain from another node")
    missing = unattributed(at_backend)
    assert not missing, f"{sum(missing.values())} items at the backend lack the job's attributes"
    check_token_hidden(slurm)
    print(
        f"[{name}] job on {ran_on}, drained on {elsewhere}: sent {outcome['sent']}, "
        f"producers' spans/points/logs {count(want)}"
    )


# What the chatty job's file system keeps free for it: a share of about 1.1 MiB per file, so
# that a debug exporter's log passes its bound many times over in seconds.
CHATTY_FREE_BYTES = 16 * 1024 * 1024
# Beyond the log's bound: the tails' two notes and the step's own lines appended after the start.
LOG_SLACK_BYTES = 8 * 1024


def _with_debug_exporter(text: str) -> str:
    """The config the step runs, with a debug exporter that logs every item the files get (as
    a platform team adds one while it looks for a fault): the log grows with the job's data."""
    mark = text.rstrip("\n").rsplit("\n", 1)[1]
    config = yaml.safe_load(text)
    config["exporters"]["debug"] = {"verbosity": "detailed"}
    for name, pipeline in config["service"]["pipelines"].items():
        if name.endswith("/files"):
            pipeline["exporters"].append("debug")
    return yaml.safe_dump(config, sort_keys=False) + mark + "\n"


def test_a_chatty_collector_keeps_its_log_within_its_bound(
    tmp_path: Path, backend: OtlpBackend, proxy: RoutingProxy, token: str
) -> None:
    """Issue 37, "Room for the job", for ``collector.log``: a collector that logs every item
    (a debug exporter) with servers pushing until the job ends and the delivery report on, its
    job directory on a size-limited file system. The log with its tails stays within its bound
    (the disk budget's share per file); its first part holds the start's lines, its newest the
    three clean stops (collector, sender, the stop's drain); the stop still tells the delivery
    report's lost last reading from a failure by the log's last line, now in a tail; ``report``
    reads all three files and says how much was dropped."""
    with job_fs.small_file_system() as mount:
        fd = os.open(mount / "job-results", os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            os.posix_fallocate(fd, 0, shutil.disk_usage(mount).free - CHATTY_FREE_BYTES)
        finally:
            os.close(fd)
        name = "chatty-log"
        job = scenario(
            name,
            token,
            break_config=_with_debug_exporter,
            pushers=PUSHERS,
            otel={"delivery_report": True},
        )
        slurm = run_slurm_job(tmp_path / name, mount / "runs", job, backend, proxy)
        assert slurm.status.get("start") == "0", f"start failed: {slurm.start_error.strip()}"
        assert slurm.status.get("stop") == "0", slurm.stop_error
        # The stop's one note with the delivery report: its own last reading (upstream 12944).
        (note,) = slurm.stop_error.splitlines()
        assert "only the delivery report's own last reading" in note, note
        assert slurm.job_state == "COMPLETED", slurm.job_state
        budget = read_disk_budget(slurm.job_dir)
        assert budget is not None
        bound = min(budget.file_bytes, LOG_MAX_BYTES)
        head, older, tail = log_parts(slurm.job_dir / "otel" / "collector.log")
        sizes = [part.stat().st_size for part in (head, older, tail)]
        log = read_collector_log(head)
        assert log is not None
        assert sum(sizes) <= bound + LOG_SLACK_BYTES, (sizes, bound)
        assert log.dropped_bytes > bound, f"the log grew by {log.dropped_bytes} bytes only"
        assert "nemo-gym-otel: disk budget: " in head.read_text("utf-8")
        newest = older.read_text("utf-8") + tail.read_text("utf-8")
        assert newest.count(CLEAN_STOP) == log.clean_stops == 3, newest[-2000:]
        report = helpers.run_cli("report", slurm.job_dir, "--format", "json", cwd=tmp_path)
        assert report.returncode in (0, 1, 3), report.stderr
        assert json.loads(report.stdout)["log_dropped_bytes"] == log.dropped_bytes
        check_token_hidden(slurm)
    print(
        f"[{name}] job {slurm.job_id}: the log {sum(sizes)} bytes on disk ({sizes}) within "
        f"{bound}; {log.dropped_bytes} dropped"
    )
