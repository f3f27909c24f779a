"""The collector's life in a job, made safe by the templates, on the real collector of each line.

Three lives per line run side by side (``support/e2e_life.py``), all while another process holds
the collector's default port for its own metrics (8888):

- ``stop_sequence``: a healthy backend; the driver ends spans of new series just after a
  span-metrics flush and exits, the collector outlives it by ``FINAL_SCRAPE_GRACE_SECONDS``, a
  late batch arrives in the last moment, then TERM;
- ``black_hole``: the backend starts accepting requests and never answering while the last
  batches are on their way, then the late batch and TERM;
- ``requeue``: with the backend's queue in memory (``otel.backend_queue_megabytes: null``), the
  backend answers 503 at the stop; the job is requeued and a second collector starts in the
  same job directory, and there the backend refuses connections at the stop;
- ``disk_queue``: the same first start with the queue on disk (the default): what the backend
  refused stays queued in the job directory through the stop and its drain, and the requeued
  collector, with the backend back, sends it.

Every stop is followed by the stop's drain when the job directory holds a ``drain.yaml``, as
the job step does it.

Outside CI they skip unless a collector can be built (``tools/build-otelcol LINE``); with
``CI=true`` a missing collector fails them.
"""

from __future__ import annotations

import secrets
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import pytest
from support import helpers
from support.e2e_checks import span_counts
from support.e2e_job import PRODUCERS
from support.e2e_life import (
    FAULTS,
    LATE_PRODUCER,
    OWN_METRICS_DEFAULT,
    SPAN_METRICS_CALLS,
    SPAN_METRICS_DURATION,
    Life,
    Run,
    port_taken,
    someone_listens,
)
from support.e2e_tally import (
    assert_holds_exactly,
    at_backend,
    count,
    found,
    in_files,
    sent,
)
from support.otelcol import collector_binary

from nemo_gym.orchestration.executors.otel import (
    COLLECTOR_HEALTH_PORT,
    OTLP_GRPC_PORT,
    OTLP_HTTP_PORT,
    QUEUE_HOP_PORT,
    SHUTDOWN_WAIT_SECONDS,
)

pytestmark = pytest.mark.collector

LINES = tuple(helpers.line_metadata())
DRIVER = {p.service_name for p in PRODUCERS}


def scenarios() -> dict[str, Callable[[Life], None]]:
    def requeue(life: Life) -> None:
        life.start(FAULTS["503"])
        life.proxy.end_outage()
        life.start(FAULTS["refused"])

    def disk_queue(life: Life) -> None:
        life.start(FAULTS["503"])
        life.proxy.end_outage()
        life.start()

    return {
        "stop_sequence": lambda life: life.start(),
        "black_hole": lambda life: life.start(FAULTS["black_hole"]),
        "requeue": requeue,
        "disk_queue": disk_queue,
    }


# Keys added to a scenario's otel section.
SCENARIO_OTEL: dict[str, dict[str, Any]] = {"requeue": {"backend_queue_megabytes": None}}


@pytest.fixture(scope="module", params=LINES)
def lives(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Future[Life]]]:
    """Every scenario of one line, run in parallel, each on its own loopback address."""
    line = request.param
    binary = collector_binary(line)
    started: list[Life] = []

    # Made here, one after another: mktemp is not safe to call from the pool's threads at once.
    tmp_dirs = {name: tmp_path_factory.mktemp(f"{line}-{name}") for name in scenarios()}

    def live(index: int, name: str, scenario: Callable[[Life], None]) -> Life:
        host = f"127.0.0.{10 * (LINES.index(line) + 1) + index}"
        life = Life(
            line,
            host,
            tmp_dirs[name],
            binary,
            token(),
            otel=SCENARIO_OTEL.get(name),
        )
        started.append(life)
        scenario(life)
        return life

    with port_taken(OWN_METRICS_DEFAULT), ThreadPoolExecutor(max_workers=4) as pool:
        assert someone_listens(OWN_METRICS_DEFAULT), f"could not take {OWN_METRICS_DEFAULT}"
        futures = {
            name: pool.submit(live, index, name, scenario)
            for index, (name, scenario) in enumerate(scenarios().items(), start=1)
        }
        for future in futures.values():
            future.exception()  # wait, with 8888 held, until every scenario has ended
    yield futures
    for life in started:
        life.close()


def token() -> str:
    return secrets.token_urlsafe(48)


# --- what was sent and what arrived -----------------------------------------------------------


def report(life: Life, scenario: str) -> None:
    files = found(in_files(life))
    backend = found(at_backend(life))
    for number, run in enumerate(life.runs, start=1):
        print(
            f"[{life.line} {scenario} run {number}] TERM to exit {run.exit_seconds:.1f}s, "
            f"exit code {run.exit_code}; sent spans/points/logs {count(sent([run]))}"
        )
    print(
        f"[{life.line} {scenario}] found spans/points/logs: files {count(files)}, backend {count(backend)}"
    )


def assert_stopped_in_time(run: Run, what: str) -> None:
    assert run.exit_code == 0, (
        f"{what}: the collector exited with {run.exit_code}:\n{run.log[-3000:]}"
    )
    # Collector.stop fails the run past SHUTDOWN_WAIT_SECONDS; this states the bound here.
    assert run.exit_seconds is not None and run.exit_seconds <= SHUTDOWN_WAIT_SECONDS, what


# --- the tests ------------------------------------------------------------------------------


def test_binds_only_its_own_ports_while_8888_is_taken(lives: dict[str, Future[Life]]) -> None:
    """Every life started while 8888 was taken (the fixture checks it); the collector listens
    on the SPEC's three ports on ``otel.listen_host`` and nowhere else; with a disk queue its
    sender listens on the hop's port (a loopback listen host's own) and nowhere else."""
    for name, future in lives.items():
        life = future.result()
        in_memory = SCENARIO_OTEL.get(name, {}).get("backend_queue_megabytes", 1) is None
        hop = set() if in_memory else {(life.host, QUEUE_HOP_PORT)}
        for run in life.runs:
            assert run.listening == {
                (life.host, OTLP_GRPC_PORT),
                (life.host, OTLP_HTTP_PORT),
                (life.host, COLLECTOR_HEALTH_PORT),
            }, f"{name}: the collector listens on {sorted(run.listening)}"
            assert run.sender_listening == hop, f"{name}: the sender listens on {sorted(hop)}"


def test_stop_sequence_delivers_everything_to_both_destinations(
    lives: dict[str, Future[Life]],
) -> None:
    """Every item the receivers accepted, the late batch just before TERM included, at both."""
    life = lives["stop_sequence"].result()
    report(life, "stop_sequence")
    (run,) = life.runs
    assert_stopped_in_time(run, "a healthy backend")
    want = sent(life.runs)
    assert LATE_PRODUCER.service_name in run.sent, "no late batch was sent"
    assert_holds_exactly(found(in_files(life)), want, "files")
    assert_holds_exactly(found(at_backend(life)), want, "backend")


def test_span_metrics_count_every_span_of_the_driver(lives: dict[str, Future[Life]]) -> None:
    """Spans of series first seen just after a flush, as the driver exits, are counted in full
    at both destinations before TERM (the connector does not flush at shutdown)."""
    life = lives["stop_sequence"].result()
    (run,) = life.runs
    want: Counter[tuple[str, str]] = Counter(
        (name, s["name"]) for name, r in run.sent.items() if name in DRIVER for s in r["spans"]
    )
    assert any(name == "rollout last" for _, name in want), "the driver sent no last spans"
    for where, items in (("files", in_files(life)), ("backend", at_backend(life))):
        for metric in (SPAN_METRICS_CALLS, SPAN_METRICS_DURATION):
            got = span_counts(items["metrics"], metric)
            wrong = {k: (got.get(k), n) for k, n in want.items() if got.get(k) != n}
            assert not wrong, f"{where} {metric}: (counted, sent) per series {wrong}"


@pytest.mark.parametrize(
    ("scenario", "run_index", "fault"),
    [("black_hole", 0, "black_hole"), ("requeue", 0, "503"), ("requeue", 1, "refused")],
)
def test_exits_in_time_and_files_hold_everything_whatever_the_backend_does(
    lives: dict[str, Future[Life]], scenario: str, run_index: int, fault: str
) -> None:
    life = lives[scenario].result()
    run = life.runs[run_index]
    assert_stopped_in_time(run, f"a backend that {FAULTS[fault].name}")
    # What this run was sent, and what the runs before it in the same job directory were.
    assert_holds_exactly(found(run.files), sent(life.runs[: run_index + 1]), "files")
    if scenario == "black_hole":
        report(life, scenario)


def test_requeued_job_keeps_what_the_first_collector_wrote(lives: dict[str, Future[Life]]) -> None:
    life = lives["requeue"].result()
    report(life, "requeue")
    first, second = life.runs
    assert first.sent and second.sent
    assert_holds_exactly(
        found(in_files(life)), sent([first, second]), "files after the second start"
    )


def test_token_stays_out_of_the_job_directory_and_the_logs(lives: dict[str, Future[Life]]) -> None:
    """Failing exports log their errors: none of them, nor any file the job keeps, holds the token."""
    for name, future in lives.items():
        life = future.result()
        token = life.token.encode()
        leaks = [p.name for p in life.job_dir.rglob("*") if p.is_file() and token in p.read_bytes()]
        assert not leaks, f"{name}: the token is written in {leaks}"
        for number, run in enumerate(life.runs, start=1):
            # Not an assert on the text: its report would print the token.
            if life.token in run.log:
                pytest.fail(f"{name}: the token is in the log of collector run {number}")


def test_disk_queue_keeps_what_the_backend_refused_through_the_stop_and_sends_it_once(
    lives: dict[str, Future[Life]],
) -> None:
    """The first run's stop meets a backend answering 503: its last items stay queued on disk
    through the stop and its drain (the in-memory queue would have given them up), and the
    requeued collector sends them; the second run's stop and drain send the rest. Every item
    reaches the backend, none more often than it was sent."""
    life = lives["disk_queue"].result()
    report(life, "disk_queue")
    first, _ = life.runs
    assert first.sent, "the first run sent nothing"
    for number, run in enumerate(life.runs, start=1):
        assert_stopped_in_time(run, f"run {number} with the disk queue")
    assert (life.otel_dir / "queue").is_dir(), "no queue in the job directory"
    assert first.drain_exit_code == 0, "the first stop's drain failed"
    # Counted with multiplicity: the two runs send log bodies of the same text.
    assert_holds_exactly(found(at_backend(life)), sent(life.runs), "backend")
    assert_holds_exactly(found(in_files(life)), sent(life.runs), "files")
