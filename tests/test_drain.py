"""The drain config and ``nemo-gym-otel drain`` without a collector: the cut, the local run's
rewrite, the reading of the collector's exposition, and the refusals (issue 19). Its runs on the
real collectors are in ``tests/e2e/test_outages.py``."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from support import helpers

from nemo_gym.orchestration.executors.otel import CollectorConfigError, validate_collector_config
from nemo_gym.orchestration.executors.otel._common.constants import (
    DRAIN_HOP_TIMEOUT_SECONDS,
    DRAIN_METRICS_PORT,
    DRAIN_RECEIVER_PORT,
)
from nemo_gym.orchestration.executors.otel._render.drain_config import (
    DRAIN_FILES_PIPELINE,
    DRAIN_RECEIVER,
    drain_document,
)
from nemo_gym.orchestration.executors.otel._step.drain import (
    QueueStorage,
    health_url,
    local_drain_document,
    local_drain_processes,
    queue_storages,
    read_state,
    relocated,
    retried_after_timeout,
    token_variable,
)

GOLDEN = helpers.REPO / "tests" / "golden" / "long-job"


def _golden(line: str = "current", combination: str = "otlp_http+file") -> dict[str, Any]:
    return yaml.safe_load((GOLDEN / line / f"{combination}.yaml").read_text(encoding="utf-8"))


def test_the_cut_keeps_the_backend_path_and_binds_none_of_the_jobs_ports() -> None:
    """The drain takes nothing from the job's processes (they may still push while it runs):
    its only receivers are the hop's and its own on the hop's loopback host, and what its own
    receives (its delivery report) is stamped as the job's collector stamps it."""
    for line in ("current", "legacy"):
        job = _golden(line)
        drain = drain_document(job)
        assert drain is not None
        pipelines = drain["service"]["pipelines"]
        ingest = job["service"]["pipelines"]["metrics/ingest"]["processors"]
        for signal in ("traces", "metrics", "logs"):
            assert (
                pipelines[f"{signal}/backend"] == job["service"]["pipelines"][f"{signal}/backend"]
            )
            assert pipelines[f"{signal}/queue"]["receivers"] == [DRAIN_RECEIVER]
            assert "resource/job" in pipelines[f"{signal}/queue"]["processors"]
            assert f"{signal}/ingest" not in pipelines and f"{signal}/files" not in pipelines
        assert pipelines["metrics/queue"]["processors"] == ingest
        backend = next(e for e in drain["exporters"] if e.endswith("/backend"))
        assert drain["exporters"][backend] == job["exporters"][backend]
        assert drain["processors"]["resource/job"] == job["processors"]["resource/job"]
        assert drain["connectors"] == {}
        assert set(drain["receivers"]) == {"otlp/queue", DRAIN_RECEIVER}
        assert drain["receivers"][DRAIN_RECEIVER] == {
            "protocols": {"http": {"endpoint": f"localhost:{DRAIN_RECEIVER_PORT}"}}
        }
        # The job pushes its delivery report: the drain's own readings reach the files,
        # through its own receiver, stamped.
        assert pipelines[DRAIN_FILES_PIPELINE] == {
            "receivers": [DRAIN_RECEIVER],
            "processors": ingest,
            "exporters": ["file/metrics"],
        }
        # It pushes its delivery report to its own receiver, and serves its queue sizes on the
        # hop's loopback host for the stop, which ends it once they are empty.
        pushed, served = drain["service"]["telemetry"]["metrics"]["readers"]
        assert pushed["periodic"]["exporter"]["otlp"]["endpoint"] == (
            f"http://localhost:{DRAIN_RECEIVER_PORT}/v1/metrics"
        )
        assert served == {
            "pull": {"exporter": {"prometheus": {"host": "localhost", "port": DRAIN_METRICS_PORT}}}
        }


def test_the_drain_serves_its_queue_sizes_even_where_the_job_keeps_its_metrics_off() -> None:
    """Without the delivery report the job's telemetry is level none: the drain's is basic, with
    only the reader the stop polls, and the package's own checks take it (a pull reader binds a
    port, which they refuse anywhere else)."""
    job = _golden("current")
    job["service"]["telemetry"]["metrics"] = {"level": "none"}
    drain = drain_document(job)
    assert drain is not None
    assert drain["service"]["telemetry"]["metrics"] == {
        "level": "basic",
        "readers": [
            {
                "pull": {
                    "exporter": {"prometheus": {"host": "localhost", "port": DRAIN_METRICS_PORT}}
                }
            }
        ],
    }
    version = helpers.line_versions()["current"]
    validate_collector_config(yaml.safe_dump(drain), version, allow_plain_http=True)
    elsewhere = copy.deepcopy(drain)
    elsewhere["service"]["telemetry"]["metrics"]["readers"][0]["pull"]["exporter"]["prometheus"][
        "port"
    ] = DRAIN_METRICS_PORT + 1
    with pytest.raises(CollectorConfigError, match=r"readers\[0\]\.pull: serves the metrics"):
        validate_collector_config(yaml.safe_dump(elsewhere), version, allow_plain_http=True)


def test_no_disk_queue_no_drain_config() -> None:
    assert drain_document(_golden("current", "file")) is None
    in_memory = helpers.REPO / "tests" / "golden" / "example" / "current" / "otlp_http+file.yaml"
    example = yaml.safe_load(in_memory.read_text(encoding="utf-8"))
    example["exporters"]["otlp_http/queue"]["sending_queue"].pop("storage")
    assert drain_document(example) is None


def test_the_local_run_moves_every_listener_and_what_points_at_it() -> None:
    drain = drain_document(_golden())
    assert drain is not None
    local = local_drain_document(drain, 40000)
    hop = local["receivers"]["otlp/queue"]["protocols"]["http"]["endpoint"]
    assert hop.startswith("127.0.0.1:") and hop != "localhost:4319"
    assert local["exporters"]["otlp_http/queue"]["endpoint"] == f"http://{hop}"
    assert local["extensions"]["health_check"]["endpoint"].startswith("127.0.0.1:")
    assert local["service"]["telemetry"]["metrics"]["readers"] == [
        {"pull": {"exporter": {"prometheus": {"host": "127.0.0.1", "port": 40000}}}}
    ]
    assert DRAIN_FILES_PIPELINE not in local["service"]["pipelines"]
    assert "file/metrics" not in local["exporters"]
    # Nothing arrives at the drain's own receiver, so nothing stamps there: the job's stamp
    # reads SLURM_JOB_ID, which a later drain's environment lacks.
    assert local["receivers"][DRAIN_RECEIVER]["protocols"]["http"]["endpoint"].startswith(
        "127.0.0.1:"
    )
    for signal in ("traces", "metrics", "logs"):
        assert "processors" not in local["service"]["pipelines"][f"{signal}/queue"]
    assert set(local["processors"]) == {"resource/tenant"}
    # The backend and the token are untouched.
    assert local["exporters"]["otlp_http/backend"] == drain["exporters"]["otlp_http/backend"]
    assert token_variable(local) == "OTEL_TOKEN"


def test_the_stop_drains_hop_bound_sits_between_what_it_must_outlast_and_the_kill() -> None:
    """The stop's drain's hop gives up after ``DRAIN_HOP_TIMEOUT_SECONDS`` (see
    ``_hop_wait_bounded``): after one attempt at the backend, after the drain's run and the
    queue's first back-off (so the TERM closes the hop before the queue could ask again inside
    a longer Retry-After), and before the step kills the drain."""
    from nemo_gym.orchestration.executors.otel._common.constants import (
        DRAIN_SECONDS,
        SHUTDOWN_WAIT_SECONDS,
    )
    from nemo_gym.orchestration.executors.otel._templating import context

    attempt = float(context._BACKEND_TIMEOUT.removesuffix("s"))
    first_back_off = 1.0  # the queue exporter's retry_on_failure.initial_interval
    assert attempt < DRAIN_HOP_TIMEOUT_SECONDS < SHUTDOWN_WAIT_SECONDS
    assert DRAIN_SECONDS + first_back_off < DRAIN_HOP_TIMEOUT_SECONDS


def _pulled_at(document: dict[str, Any]) -> list[Any]:
    return [
        reader["pull"]["exporter"]["prometheus"]["port"]
        for reader in document["service"]["telemetry"]["metrics"]["readers"]
    ]


def test_the_local_run_is_the_sender_and_the_queue_whose_hop_waits_without_a_bound() -> None:
    """Cut as the job step cuts the job's config: the sender holds the backend path (and the
    token's reference) and serves its own metrics; the queue's collector holds the disk queue,
    whose hop waits for the sender as long as a backend's Retry-After lasts (the stop's drain,
    one process, bounds it)."""
    for line in ("current", "legacy"):
        drain = drain_document(_golden(line))
        assert drain is not None
        queue, sender = local_drain_processes(drain, 40000, 40001)
        local = local_drain_document(drain, 40000)
        hop = {e: b for e, b in drain["exporters"].items() if e.endswith("/queue")}
        assert [b["timeout"] for b in hop.values()] == [f"{DRAIN_HOP_TIMEOUT_SECONDS}s"]
        assert set(queue["exporters"]) == set(hop)
        assert [queue["exporters"][e]["timeout"] for e in hop] == ["0s"]
        assert set(sender["exporters"]) == set(local["exporters"]) - set(hop)
        assert set(sender["receivers"]) == {"otlp/queue"}
        address = sender["receivers"]["otlp/queue"]["protocols"]["http"]["endpoint"]
        assert [queue["exporters"][e]["endpoint"] for e in hop] == [f"http://{address}"]
        assert token_variable(queue) is None and token_variable(sender) == "OTEL_TOKEN"
        assert _pulled_at(queue) == [40000] and _pulled_at(sender) == [40001]
        assert "extensions" not in sender and health_url(queue) is not None
        pipelines = {**queue["service"]["pipelines"], **sender["service"]["pipelines"]}
        assert pipelines == local["service"]["pipelines"]


EXPOSITION = """\
# HELP otelcol_exporter_queue_size Current size of the retry queue
otelcol_exporter_queue_size{data_type="logs",exporter="otlp_http/queue"} 0
otelcol_exporter_queue_size{data_type="traces",exporter="otlp_http/queue"} 1.2345e+06
otelcol_exporter_queue_size{data_type="metrics",exporter="otlp_http/queue"} 0
otelcol_exporter_sent_spans_total{exporter="otlp_http/backend"} 8192
otelcol_exporter_sent_spans_total{exporter="otlp_http/queue"} 9999
otelcol_exporter_sent_log_records_total{exporter="otlp_http/backend"} 17
"""


def test_the_exposition_is_read_per_signal_and_exporter() -> None:
    state = read_state(EXPOSITION, {"otlp_http/queue"}, {"otlp_http/backend"})
    assert state.queued_bytes == {"logs": 0, "traces": 1234500, "metrics": 0}
    assert state.sent == {"traces": 8192, "logs": 17}
    assert state.read and not state.empty
    empty = read_state(EXPOSITION.replace("1.2345e+06", "0"), {"otlp_http/queue"}, set())
    assert empty.empty
    assert not read_state("", {"otlp_http/queue"}, set()).empty  # nothing read is not empty


def test_retries_after_a_timeout_are_counted_for_the_queue_only() -> None:
    line = (
        "2026-12-04T10:00:00.000Z\tinfo\tinternal/retry_sender.go:133\tExporting failed. Will "
        'retry the request after interval.\t{"otelcol.component.id": "%s", "otelcol.signal": '
        '"%s", "error": "failed to make an HTTP request: context deadline exceeded"}'
    )
    log = "\n".join(
        [
            line % ("otlp_http/queue", "traces"),
            line % ("otlp_http/queue", "traces"),
            line % ("otlp_http/backend", "logs"),  # the backend's own: the queue retries
            line.replace("deadline", "x") % ("otlp_http/queue", "logs"),  # no timeout
        ]
    )
    assert retried_after_timeout(log, {"otlp_http/queue"}) == {"traces": 2}


def _job_dir(tmp_path: Path, example_otel: dict[str, Any] | None = None) -> Path:
    mapping = yaml.safe_load(helpers.EXAMPLE.read_text(encoding="utf-8"))
    mapping["otel"].update(example_otel or {})
    tmp_path.mkdir(parents=True, exist_ok=True)
    config = tmp_path / "submit.yaml"
    config.write_text(yaml.safe_dump(mapping), encoding="utf-8")
    job_dir = tmp_path / "runs" / "gym-demo" / "aime25"
    result = helpers.run_cli(
        "render", config, "--benchmark", "aime25", "--job-dir", job_dir, cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    return job_dir


def test_drain_refuses_clearly_and_writes_nothing(tmp_path: Path) -> None:
    in_memory = _job_dir(tmp_path / "a", {"backend_queue_megabytes": None})
    assert not (in_memory / "otel" / "drain.yaml").exists()
    refused = helpers.run_cli("drain", in_memory, "--collector", "true", cwd=tmp_path)
    assert refused.returncode == 1 and "holds no otel/drain.yaml" in refused.stderr
    assert "Traceback" not in refused.stderr

    job_dir = _job_dir(tmp_path / "b")
    (job_dir / "otel" / "queue").mkdir()  # a queue to send: a collector and the token are needed
    no_binary = helpers.run_cli("drain", job_dir, "--collector", "no-such-otelcol", cwd=tmp_path)
    assert no_binary.returncode == 1 and "--collector" in no_binary.stderr
    no_token = helpers.run_cli(
        "drain", job_dir, "--collector", "true", cwd=tmp_path, env=helpers.cli_env(OTEL_TOKEN=None)
    )
    assert no_token.returncode == 1 and "OTEL_TOKEN is not set" in no_token.stderr
    not_a_job = helpers.run_cli("drain", tmp_path, cwd=tmp_path)
    assert not_a_job.returncode == 2 and "no otel/ folder" in not_a_job.stderr
    assert not (job_dir / "otel" / "drain.jsonl").exists()


def test_the_outcome_says_what_was_sent_and_what_is_left() -> None:
    from nemo_gym.orchestration.executors.otel._step.drain import DrainResult, DrainState
    from nemo_gym.orchestration.executors.otel._views.drain import outcome_text, progress_line

    left = DrainState({"traces": 3 * 1024**2, "metrics": 0, "logs": 0}, {"traces": 8192}, True)
    result = DrainResult(left, 12.34, {"traces": 2}, 0, "")
    text = outcome_text("/runs/j", result)
    assert "8,192 spans" in text and "12.3s" in text
    assert "still queued on disk: traces 3.0 MiB" in text and "run drain again" in text
    assert "2 request(s) retried" in text and "twice" in text
    assert progress_line(left).startswith("drain: traces 8,192 sent, 3.0 MiB queued;")
    done = DrainResult(DrainState({"traces": 0}, {}, True, 96 * 1024), 1.0, {}, 0, "")
    assert outcome_text("/runs/j", done).endswith(
        "the disk queue is empty (96.0 KiB of files left)"
    )
    assert progress_line(done.state).endswith("; queue files 96.0 KiB")
    assert done.record()["empty"] is True and result.record()["empty"] is False
    unread = DrainResult(DrainState({}, {}, False, 4096), 0.5, {}, 1, "Error: ...")
    assert outcome_text("/runs/j", unread).endswith(
        "the disk queue was not read (4.0 KiB of files on disk)"
    )
    assert done.record()["queue_files_bytes"] == 96 * 1024


def test_a_job_directory_seen_elsewhere_drains_its_own_queue(tmp_path: Path) -> None:
    """drain.yaml names the queue's folder where the job was rendered; a node that sees the job
    directory under another path (another mount point, a copy) must read the queue there, not
    create an empty one at the old path."""
    drain = drain_document(_golden())
    assert drain is not None
    rendered = drain["extensions"]["file_storage/queue"]["directory"]
    assert not rendered.startswith(str(tmp_path))
    elsewhere = tmp_path / "copy" / "aime25"
    moved = relocated(drain, elsewhere)
    storage = moved["extensions"]["file_storage/queue"]
    assert storage["directory"] == storage["compaction"]["directory"]
    assert storage["directory"] == str(elsewhere / "otel" / "queue")
    assert drain["extensions"]["file_storage/queue"]["directory"] == rendered  # a copy
    # A folder of an override's own choosing (not <job dir>/otel/queue) is left as written.
    drain["extensions"]["file_storage/queue"]["directory"] = "/var/spool/otel"
    assert relocated(drain, elsewhere)["extensions"]["file_storage/queue"]["directory"] == (
        "/var/spool/otel"
    )


def test_the_drain_waits_for_the_storages_rebound_compaction(tmp_path: Path) -> None:
    drain = drain_document(_golden())
    assert drain is not None
    (storage,) = queue_storages(relocated(drain, tmp_path))
    assert storage.directory == tmp_path / "otel" / "queue"
    assert storage.compacts_above_bytes == 100 * 1024**2  # the storage's default threshold
    compaction = drain["extensions"]["file_storage/queue"]["compaction"]
    compaction["rebound_needed_threshold_mib"] = 7
    assert queue_storages(drain)[0].compacts_above_bytes == 7 * 1024**2
    compaction["on_rebound"] = False  # nothing would shrink the files: nothing to wait for
    assert queue_storages(drain)[0].compacts_above_bytes is None

    folder = tmp_path / "queue"
    folder.mkdir()
    with (folder / "exporter_otlp_http_queue_traces").open("wb") as database:
        database.truncate(8 * 1024**2)
    (folder / "exporter_otlp_http_queue_logs").write_bytes(b"x" * 4096)
    waiting = QueueStorage(folder, 7 * 1024**2)
    assert waiting.files_bytes() == 8 * 1024**2 + 4096
    assert not waiting.compacted()
    assert QueueStorage(folder, 9 * 1024**2).compacted()
    assert QueueStorage(folder, None).compacted()
    assert QueueStorage(tmp_path / "missing", 1).files_bytes() == 0


def test_the_wait_for_health_lasts_while_the_queues_folder_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A storage compacting at start (on_start, as job directories rendered before template
    version 9 ask) is healthy only once it copied the whole queue: the drain waits as long as
    the queue's folder changes, and gives up once it stood still for the health timeout."""
    from nemo_gym.orchestration.executors.otel._step import drain as drain_module

    monkeypatch.setattr(drain_module, "_HEALTH_TIMEOUT_SECONDS", 1.0)
    monkeypatch.setattr(drain_module, "_POLL_SECONDS", 0.05)
    folder = tmp_path / "queue"
    folder.mkdir()
    reading = drain_module._Reading((1,), set(), set(), [QueueStorage(folder, None)])
    unhealthy = "http://127.0.0.1:1/"  # nothing answers there, nor the metrics on port 1

    def grow() -> None:  # a compaction's temporary file, written for 3 s
        with (folder / "tempdb123").open("ab") as temporary:
            for _ in range(30):
                temporary.write(b"x" * 4096)
                temporary.flush()
                time.sleep(0.1)

    with subprocess.Popen(["sleep", "30"]) as process:
        writer = threading.Thread(target=grow)
        started = time.monotonic()
        writer.start()
        state = drain_module._watch([process], reading, unhealthy, None, None)
        waited = time.monotonic() - started
        writer.join()
        process.kill()
    assert not state.read
    assert 3.0 < waited < 15.0, waited  # 3 s of writing, then the 1 s timeout (not the 30 s)


def test_a_drain_config_of_another_shape_is_left_for_the_collector_to_refuse() -> None:
    """An edited drain.yaml whose sections are not the collector's shapes: the drain reads what
    it can, writes its own telemetry readers, and starts the collector, whose own message names
    the key (the run on a real collector is below)."""
    from nemo_gym.orchestration.executors.otel._step.drain import backend_exporters

    drain = drain_document(_golden())
    assert drain is not None
    drain["extensions"] = ["health_check"]
    drain["service"]["telemetry"] = 5
    pipelines = drain["service"]["pipelines"]
    pipelines[DRAIN_FILES_PIPELINE] = "file/metrics"
    pipelines["traces/backend"]["receivers"] = [["otlp/queue"], "otlp/queue"]
    pipelines["logs/backend"] = ["otlp/queue"]
    local = local_drain_document(drain, 40000)
    assert local["service"]["telemetry"] == {
        "metrics": {
            "level": "basic",
            "readers": [
                {"pull": {"exporter": {"prometheus": {"host": "127.0.0.1", "port": 40000}}}}
            ],
        }
    }
    assert DRAIN_FILES_PIPELINE not in local["service"]["pipelines"]
    assert local["extensions"] == ["health_check"]  # as written: the collector's to refuse
    queue, _ = local_drain_processes(drain, 40000, 40001)  # and so the queue's collector's
    assert queue["extensions"] == ["health_check"]
    assert queue["service"]["pipelines"]["logs/backend"] == ["otlp/queue"]
    assert health_url(local) is None
    assert queue_storages(drain) == []
    assert relocated(drain, Path("/elsewhere"))["extensions"] == ["health_check"]
    assert backend_exporters(drain) == {"otlp_http/backend"}  # from the pipelines still readable


@pytest.mark.collector
def test_the_collector_refuses_an_edited_drain_config_in_its_own_words(tmp_path: Path) -> None:
    from support.otelcol import collector_binary

    job_dir = _job_dir(tmp_path)
    path = job_dir / "otel" / "drain.yaml"
    edited = yaml.safe_load(path.read_text(encoding="utf-8"))
    edited["extensions"] = ["health_check"]
    path.write_text(yaml.safe_dump(edited), encoding="utf-8")
    binary = collector_binary("current")
    result = helpers.run_cli(
        *("drain", job_dir, "--collector", binary, "--timeout", "60"),
        cwd=tmp_path,
        env=helpers.cli_env(OTEL_TOKEN="drain-test-token"),
    )
    assert result.returncode == 4, result.stderr
    assert "Traceback" not in result.stderr
    assert "never reported its queue" in result.stderr
    assert "'extensions' expected a map" in result.stderr
    assert "the disk queue was not read" in result.stdout


def _fake_collector(tmp_path: Path) -> tuple[Path, Path]:
    """A "collector" that leaves a mark when it runs and reports nothing."""
    mark = tmp_path / "collector-ran"
    script = tmp_path / "otelcol-fake"
    script.write_text(f"#!/bin/sh\ntouch {mark}\n", encoding="utf-8")
    script.chmod(0o755)
    return script, mark


def _listing(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


@pytest.mark.parametrize(("output", "token"), [("text", "drain-test-token"), ("json", None)])
def test_a_queue_never_created_is_nothing_to_drain(
    tmp_path: Path, output: str, token: str | None
) -> None:
    """drain.yaml but no otel/queue/ (the job never ran): nothing runs, nothing is written, 0,
    whether or not the token is exported (nothing would be sent with it)."""
    job_dir = _job_dir(tmp_path)
    collector, mark = _fake_collector(tmp_path)
    before = _listing(job_dir)
    result = helpers.run_cli(
        *("drain", job_dir, "--collector", collector, "--format", output),
        cwd=tmp_path,
        env=helpers.cli_env(OTEL_TOKEN=token),
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stderr == ""
    if output == "text":
        assert result.stdout == (
            f"{job_dir}: nothing queued: no otel/queue/ (the job's collector never ran); "
            "nothing sent, nothing written\n"
        )
    else:
        document = json.loads(result.stdout)
        assert document["nothing_queued"] is True and document["empty"] is True, document
    assert _listing(job_dir) == before and not mark.exists()


def test_a_queue_never_created_needs_no_collector(tmp_path: Path) -> None:
    """Nothing to drain is known before the collector is looked for: no binary on the machine
    (the login node that only checks) still gets 0, and a queue that exists still asks."""
    job_dir = _job_dir(tmp_path)
    args = ("drain", job_dir, "--collector", str(tmp_path / "no-such-collector"))
    env = helpers.cli_env(OTEL_TOKEN="drain-test-token")
    result = helpers.run_cli(*args, cwd=tmp_path, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "nothing queued" in result.stdout
    (job_dir / "otel" / "queue").mkdir()
    result = helpers.run_cli(*args, cwd=tmp_path, env=env)
    assert result.returncode != 0
    assert "--collector: collector binary not found" in result.stderr, result.stderr


def test_a_drain_record_it_could_not_append_is_refused_before_the_run(tmp_path: Path) -> None:
    job_dir = _job_dir(tmp_path)
    (job_dir / "otel" / "queue").mkdir()
    (job_dir / "otel" / "drain.jsonl").mkdir()
    collector, mark = _fake_collector(tmp_path)
    result = helpers.run_cli(
        *("drain", job_dir, "--collector", collector),
        cwd=tmp_path,
        env=helpers.cli_env(OTEL_TOKEN="drain-test-token"),
    )
    assert result.returncode == 1, result.stdout + result.stderr
    assert helpers.error_lines(result.stderr) == [
        f"{job_dir / 'otel' / 'drain.jsonl'}: is not a regular file (a directory); remove it: "
        "the drain appends one line per run there"
    ]
    assert not mark.exists() and result.stdout == ""
    assert not list((job_dir / "otel" / "queue").iterdir())


@pytest.mark.parametrize(
    ("make", "problem"),
    [
        (lambda p: p.mkdir(), "is not a regular file (a directory)"),
        (lambda p: os.mkfifo(p), "is not a regular file (a FIFO)"),
        (lambda p: p.symlink_to("/dev/zero"), "is not a regular file (a device)"),
        (
            lambda p: p.symlink_to(p.name),
            "cannot read the file (Too many levels of symbolic links)",
        ),
    ],
)
def test_a_drain_config_that_is_no_file_is_named_for_what_it_is(
    tmp_path: Path, make: Any, problem: str
) -> None:
    job_dir = _job_dir(tmp_path)
    path = job_dir / "otel" / "drain.yaml"
    path.unlink()
    make(path)
    result = helpers.run_cli("drain", job_dir, "--collector", "true", cwd=tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    fix = (
        ""
        if problem.startswith("cannot")
        else ("; remove it and render the job again to write the drain config")
    )
    assert helpers.error_lines(result.stderr) == [f"{path}: {problem}{fix}"]


def test_the_drains_processes_end_in_turn_and_none_is_left_running(tmp_path: Path) -> None:
    """The sender first (killed after its stop time when it holds its TERM, as a sender waiting
    out a Retry-After does), then the queue's collector; a second SIGTERM of the CLI interrupting
    the first's wait leaves neither running."""
    from nemo_gym.orchestration.executors.otel._step.drain_processes import (
        DrainProcess,
        end_in_order,
    )

    def started(term: str, stop_seconds: float) -> DrainProcess:
        """A process whose TERM disposition is ``term`` (a trap) before it is handed over: a
        TERM sent before the shell set it would end it at once."""
        script = f"trap {term} TERM; echo up; exec sleep 30"
        process = subprocess.Popen(["sh", "-c", script], stdout=subprocess.PIPE)
        assert process.stdout is not None and process.stdout.readline() == b"up\n"
        process.stdout.close()
        return DrainProcess(process, tmp_path / "unused.log", stop_seconds)

    holding = started("''", 0.5)  # ignored: it holds its TERM
    queue = started("-", 5)  # the default: TERM ends it
    began = time.monotonic()
    assert end_in_order([holding, queue]) == [-9, -15]
    assert time.monotonic() - began < 3

    holding, queue = started("''", 30), started("-", 5)

    def interrupted(timeout: float | None = None) -> int:
        holding.process.wait = original  # type: ignore[method-assign]
        raise KeyboardInterrupt  # what the CLI's handler raises on a second SIGTERM

    original = holding.process.wait
    holding.process.wait = interrupted  # type: ignore[method-assign]
    with pytest.raises(KeyboardInterrupt):
        end_in_order([holding, queue])
    assert holding.process.poll() == -9 and queue.process.poll() == -15
