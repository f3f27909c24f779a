"""``nemo-gym-otel report`` on job directories written by the real collector of each line.

Three jobs per line, with ``otel.delivery_report: true``, behind the routing-proxy backend:

- ``clean``: the producers send their rounds and exit; the collector runs until it has taken a
  reading after their last item, then TERM and the stop's drain (``drain.yaml``, as the job step
  runs it). Traces and logs must report complete, with the files and the backend holding
  exactly what the producers sent; metrics complete too: up to the last reading by the
  counters, and the span-metrics points flushed after it by the drain's readings, taken after
  the collector's and showing the disk queue empty, the backend holding them all.
- ``disk outage``: the backend answers 503 from before the producers' last batches until after
  the stop and its drain: the report says incomplete, naming the bytes still queued on disk;
  after ``nemo-gym-otel drain`` with the backend back it says complete.
- ``outage`` (the queue in memory, ``otel.backend_queue_megabytes: null``): the backend answers
  503 until after the retry window, shortened to 4 s by a test-local override template (the
  built-in 300 s would make the test minutes long). The report must say incomplete, naming the
  items lost at the backend, and the files complete. Without a drain's reading, what reached
  the files after the collector's last reading is judged by its log.

- ``late answers``: the backend takes a request of each signal and answers it only after the
  backend exporter's attempt bound (10 s), so the disk queue sends it again (OTLP is
  at-least-once): the backend holds those items twice and every other item once, and the
  report counts each such retry, in JSON and in its table.

And the log itself: a burst of requests that the backend exporter gives up on within seconds
must each leave its line, with its count, in ``collector.log`` (the templates turn the
collector's log sampling off; sampled, the report would count only some of them).

The collector exits with status 1 under the delivery report: its push of a last reading at
shutdown finds its own receiver closed (upstream collector issue 12944). The tests assert that
this is the only error it reports.
"""

from __future__ import annotations

import json
import secrets
import time
from pathlib import Path
from typing import Any

import pytest
from support import helpers
from support.e2e_job import (
    PRODUCERS,
    TOKEN_ENV,
    Producers,
    StepCollector,
    running,
    wait_for,
)
from support.e2e_life import EXPORTED_WITHIN_NS, GYM_JOB_ID, Life, Run
from support.e2e_otlp import SIGNALS, items_of, post_json, resource_groups
from support.e2e_tally import at_backend, count, found, sent
from support.otelcol import collector_binary

from nemo_gym.orchestration.executors.otel._job_dir.collector_log import read_collector_log

pytestmark = pytest.mark.collector

LINES = ("legacy", "current")
RETRY_WINDOW_SECONDS = 4
# A burst of requests the backend exporter gives up on within seconds: more than the 10 lines per
# message and 10 s the collector's log sampling would keep.
BURST_REQUESTS = 16
BURST_SPANS = 8192  # the override's batch max_size: each request is a batch of its own
SAMPLED_LINES = 10
# Longer than one attempt's bound at the backend (the backend exporter's `timeout`, 10 s).
LATE_SECONDS = 12
SHUTDOWN_ERROR = "failed to shutdown meter provider"
# The span-metrics connector flushes every 5 s (metrics_flush_interval); a span's count is out at
# the second flush after it ended.
SPAN_METRICS_TWO_FLUSHES_NS = 2 * 5 * 1_000_000_000
OVERRIDE = """{{#- nemo-gym-otel
template_version: test-short-retry
requires_package: 0.1.0
-#}}
{{% extends "builtin/{line}/otlp_http+file.yaml.j2" %}}
{{% block backend_exporter %}}
  {{{{ names.otlp_http }}}}/backend:
    endpoint: {{{{ backend.endpoint | scalar }}}}
    headers:
      Authorization: {{{{ joined("Bearer ", backend.token) | scalar }}}}
    timeout: 3s
    retry_on_failure:
      enabled: true
      initial_interval: 1s
      max_interval: 1s
      max_elapsed_time: {retry}s
    sending_queue:
      enabled: true
      sizer: items
      queue_size: 25000
      num_consumers: 100
      block_on_overflow: false
      batch:
        flush_timeout: 1s
        min_size: 2048
        max_size: 8192
{{% endblock %}}
"""


def _override_dir(tmp_path: Path, line: str) -> Path:
    folder = tmp_path / "override"
    (folder / line).mkdir(parents=True)
    text = OVERRIDE.format(line=line, retry=RETRY_WINDOW_SECONDS)
    (folder / line / "otlp_http+file.yaml.j2").write_text(text)
    return folder


def _sent(reports: dict[str, dict[str, Any]]) -> dict[str, int]:
    return {
        "traces": sum(len(r["spans"]) for r in reports.values()),
        "logs": sum(len(r["logs"]) for r in reports.values()),
        "metrics": sum(len(r["points"]) for r in reports.values()),
    }


def run_job(life: Life, outage: bool, retry_window: bool = True) -> tuple[int, str, dict[str, int]]:
    """One collector life: a round, the last batches (into an outage, waited out for the retry
    window), readings after the last item, TERM, the stop's drain. Returns the exit code, the
    collector's log and what the producers sent."""
    env = life.collector_env(life.tmp_path)
    log_path = life.tmp_path / "collector.log"
    collector = StepCollector(life.binary, life.config_path, env, life.job_dir, log_path, life.host)
    with running(collector):
        collector.wait_healthy()
        driver = Producers(GYM_JOB_ID, life.tmp_path, PRODUCERS, 1, life.host)
        with running(driver):
            driver.wait_ready()
            if outage:
                life.proxy.start_outage()
            sent = driver.finish()
        if outage:
            wait_for(
                lambda: all(life.proxy.refused[s] for s in SIGNALS),
                30,
                "every signal's exporter to meet the outage",
            )
            if retry_window:
                time.sleep(RETRY_WINDOW_SECONDS + 2)  # the retry window runs out
        # A reading after the last item reached both exporters, and after the span metrics'
        # last new series were flushed twice.
        life.wait_for_reading(time.time_ns() + EXPORTED_WITHIN_NS + SPAN_METRICS_TWO_FLUSHES_NS)
        exit_code = collector.stop()
    drained = life.stop_drain(env, life.tmp_path / "drain.log")
    assert drained in (None, 0, 1), "the stop's drain failed"
    return exit_code, log_path.read_text(errors="replace"), _sent(sent)


def report(life: Life, *extra: str | Path) -> tuple[int, dict[str, Any]]:
    result = helpers.run_cli("report", life.job_dir, "--format", "json", *extra, cwd=life.tmp_path)
    assert result.stderr == "", result.stderr
    return result.returncode, json.loads(result.stdout)


@pytest.fixture(params=LINES)
def line(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _life(line: str, tmp_path: Path, host: str, in_memory_outage: bool) -> Life:
    dirs = [_override_dir(tmp_path, line)] if in_memory_outage else None
    otel: dict[str, Any] = {"delivery_report": True}
    if in_memory_outage:
        otel["backend_queue_megabytes"] = None
    return Life(
        line,
        host,
        tmp_path,
        collector_binary(line),
        secrets.token_hex(8),
        otel=otel,
        template_dirs=dirs,
    )


def _exited_as_expected(exit_code: int, log: str) -> None:
    errors = [line for line in log.splitlines() if line.startswith("Error:")]
    assert exit_code in (0, 1), log[-3000:]
    if exit_code == 1:
        assert errors and all(SHUTDOWN_ERROR in e for e in errors), log[-3000:]


def test_clean_job_reports_complete_with_the_producers_counts(line: str, tmp_path: Path) -> None:
    life = _life(line, tmp_path, "127.0.0.41" if line == "legacy" else "127.0.0.42", False)
    try:
        exit_code, log, sent = run_job(life, outage=False)
    finally:
        life.close()
    _exited_as_expected(exit_code, log)
    code, document = report(life)
    signals = {s["signal"]: s for s in document["signals"]}
    for name in ("traces", "logs"):
        entry = signals[name]
        assert entry["verdict"] == "complete", json.dumps(document, indent=2)
        assert entry["received"] == sent[name], entry
        assert entry["files"]["items"] == sent[name], entry
        assert entry["backend"]["sent"] == sent[name], entry
        assert entry["backend"]["failed_or_dropped"] == 0, entry
    assert len(life.backend.items("traces")) == sent["traces"]
    # Metrics: the producers' points plus span metrics, all written and all sent. The
    # span-metrics connector flushes every 5 s until the stop, so points reach the files after
    # the collector's last reading; the stop's drain read the disk queue after that and found
    # it empty, so their fate is known without the collector's log.
    metrics = signals["metrics"]
    assert metrics["files"]["complete"], metrics
    assert metrics["files"]["items"] >= sent["metrics"] > 0, metrics
    assert metrics["backend"]["sent"] >= metrics["files"]["written"], metrics
    assert metrics["backend"]["queued_on_disk_bytes"] == 0, metrics
    assert metrics["backend"]["reasons"] == [], metrics
    assert code == 0, json.dumps(document, indent=2)
    judged, with_log = report(life, "--log", life.tmp_path / "collector.log")
    assert judged == 0, json.dumps(with_log, indent=2)
    assert with_log["verdict"] == "complete"
    at_backend = len(life.backend.items("metrics"))
    assert at_backend >= metrics["files"]["items"], (at_backend, metrics)


def test_outage_beyond_the_retry_window_reports_the_loss(line: str, tmp_path: Path) -> None:
    life = _life(line, tmp_path, "127.0.0.43" if line == "legacy" else "127.0.0.44", True)
    try:
        exit_code, log, sent = run_job(life, outage=True)
        at_backend = {s: len(life.backend.items(s)) for s in ("traces", "logs")}
    finally:
        life.close()
    _exited_as_expected(exit_code, log)
    code, document = report(life)
    signals = {s["signal"]: s for s in document["signals"]}
    assert code == 1 and not document["complete"], json.dumps(document, indent=2)
    for name in ("traces", "logs"):
        entry = signals[name]
        lost = sent[name] - at_backend[name]
        assert lost > 0, (name, sent, at_backend)
        assert entry["files"]["complete"] and entry["files"]["items"] == sent[name], entry
        assert entry["backend"]["failed_or_dropped"] == lost, entry
        assert f"{lost} lost at the backend" in " ".join(entry["backend"]["reasons"]), entry
        assert entry["verdict"] == "incomplete"
    human = helpers.run_cli("report", life.job_dir, cwd=life.tmp_path)
    assert human.returncode == 1 and "lost at the backend" in human.stdout, human.stdout


def test_outage_through_the_stop_reports_the_disk_queue_until_drained(
    line: str, tmp_path: Path
) -> None:
    life = _life(line, tmp_path, "127.0.0.45" if line == "legacy" else "127.0.0.46", False)
    try:
        exit_code, log, sent = run_job(life, outage=True, retry_window=False)
        code, document = report(life)
        signals = {s["signal"]: s for s in document["signals"]}
        assert code == 1 and not document["complete"], json.dumps(document, indent=2)
        for name in ("traces", "logs"):
            entry = signals[name]
            assert entry["files"]["complete"] and entry["files"]["items"] == sent[name], entry
            assert entry["backend"]["queued_on_disk_bytes"] > 0, entry
            assert entry["backend"]["failed_or_dropped"] == 0, entry  # queued, not lost
            assert "bytes still queued on disk" in " ".join(entry["backend"]["reasons"]), entry
        life.proxy.end_outage()
        drained = helpers.run_cli(
            "drain",
            life.job_dir,
            "--collector",
            life.binary,
            cwd=life.tmp_path,
            env=helpers.cli_env(**{TOKEN_ENV: life.token}),
        )
        assert drained.returncode == 0, drained.stdout + drained.stderr
        assert "the disk queue is empty" in drained.stdout, drained.stdout
        code, document = report(life)
        at_backend = {s: len(life.backend.items(s)) for s in ("traces", "logs")}
    finally:
        life.close()
    _exited_as_expected(exit_code, log)
    signals = {s["signal"]: s for s in document["signals"]}
    for name in ("traces", "logs"):
        entry = signals[name]
        assert entry["verdict"] == "complete", json.dumps(document, indent=2)
        assert entry["backend"]["queued_on_disk_bytes"] == 0, entry
        assert entry["backend"]["sent"] == sent[name] == at_backend[name], entry
    assert code == 0, json.dumps(document, indent=2)


def _post_spans(host: str, request: int) -> None:
    """One OTLP/JSON request of ``BURST_SPANS`` spans: a full batch, so the backend exporter
    neither merges it with another nor splits it."""
    spans = [
        {
            "traceId": f"{request:016x}{i:016x}",
            "spanId": f"{i + 1:016x}",
            "name": "burst",
            "startTimeUnixNano": "1",
            "endTimeUnixNano": "2",
        }
        for i in range(BURST_SPANS)
    ]
    body = {"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}
    post_json(host, "traces", body)


def test_every_request_given_up_on_is_a_line_of_the_log(line: str, tmp_path: Path) -> None:
    """The report adds up what the backend exporter gave up on after the last reading from
    collector.log, one line per request: the templates turn off the collector's sampling of its
    own log, which keeps 10 lines of a message per 10 s and then 1 in 100."""
    life = _life(line, tmp_path, "127.0.0.47" if line == "legacy" else "127.0.0.48", True)
    log_path = tmp_path / "collector.log"
    total = BURST_REQUESTS * BURST_SPANS
    try:
        collector = StepCollector(
            life.binary,
            life.config_path,
            life.collector_env(life.tmp_path),
            life.job_dir,
            log_path,
            life.host,
        )
        with running(collector):
            collector.wait_healthy()
            life.proxy.start_outage()
            for request in range(BURST_REQUESTS):
                _post_spans(life.host, request)
            deadline = time.monotonic() + RETRY_WINDOW_SECONDS + 30
            while _given_up(log_path)[1] < total and time.monotonic() < deadline:
                time.sleep(0.5)
            exit_code = collector.stop()
    finally:
        life.close()
    lines, items = _given_up(log_path)
    assert exit_code in (0, 1), log_path.read_text(errors="replace")[-3000:]
    # More lines than the default sampling keeps: otherwise this would prove nothing.
    assert lines > SAMPLED_LINES, (lines, items)
    assert items == total, f"the log names {items} of the {total} spans given up on ({lines} lines)"
    assert life.backend.items("traces") == [], "the outage let spans through"


def _given_up(log_path: Path) -> tuple[int, int]:
    """Lines and items the backend's traces exporter gave up on, as ``report`` reads them."""
    log = read_collector_log(log_path)
    losses = [
        loss
        for loss in (log.losses if log else [])
        if loss.signal == "traces" and loss.exporter.endswith("/backend")
    ]
    return len(losses), sum(loss.items for loss in losses)


def test_a_request_answered_after_the_attempts_bound_is_sent_again_and_counted(
    line: str, tmp_path: Path
) -> None:
    life = _life(line, tmp_path, "127.0.0.49" if line == "legacy" else "127.0.0.50", False)
    env = life.collector_env(life.tmp_path)
    log_path = life.tmp_path / "collector.log"
    collector = StepCollector(life.binary, life.config_path, env, life.job_dir, log_path, life.host)
    try:
        with running(collector):
            collector.wait_healthy()
            driver = Producers(GYM_JOB_ID, life.tmp_path, PRODUCERS, 1, life.host)
            with running(driver):
                driver.wait_ready()
                life.proxy.answer_late(LATE_SECONDS, SIGNALS)
                want = sent([Run(sent=driver.finish())])
            wait_for(
                lambda: all(life.proxy.answered_late[s] for s in SIGNALS),
                3 * LATE_SECONDS,
                "a late answer on every signal",
            )
            wait_for(
                lambda: not any(want[s] - found(at_backend(life))[s] for s in SIGNALS),
                30,
                "the backend to hold every item",
            )
            life.wait_for_reading(time.time_ns() + EXPORTED_WITHIN_NS)
            exit_code = collector.stop()
        assert life.stop_drain(env, life.tmp_path / "drain.log") in (0, 1)
        late = found(
            {
                s: items_of(s, [g for m in life.proxy.late[s] for g in resource_groups(s, m)])
                for s in SIGNALS
            }
        )
        backend = found(at_backend(life))
    finally:
        life.close()
    _exited_as_expected(exit_code, log_path.read_text(errors="replace"))
    assert late["traces"] and late["logs"], f"no producer's item was answered late: {count(late)}"
    for s in SIGNALS:
        # Every item once, and the late requests' items once more: nothing lost, nothing else twice.
        assert backend[s] == want[s] + late[s], (s, count(backend), count(want), count(late))
    code, document = report(life, "--log", log_path)  # the step writes it in the job directory
    signals = {entry["signal"]: entry for entry in document["signals"]}
    for s in SIGNALS:
        backend_entry = signals[s]["backend"]
        assert backend_entry["retried_after_timeout"] == len(life.proxy.late[s]), backend_entry
        assert backend_entry["failed_or_dropped"] == 0, backend_entry
    assert code == 0 and document["complete"], json.dumps(document, indent=2)
    table = helpers.run_cli("report", life.job_dir, "--log", log_path, cwd=life.tmp_path).stdout
    retried = sum(len(life.proxy.late[s]) for s in SIGNALS)
    assert f"{retried} request(s) retried after the backend did not answer in time" in table, table
