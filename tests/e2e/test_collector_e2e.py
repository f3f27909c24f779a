"""End to end, as on a compute node: a rendered config on the real collector, real producers,
a backend behind the tenant-routing proxy, and the job directory's files.

Every run renders ``<job dir>/otel/collector.yaml`` with the package, starts the collector of the
config's own template line from it, and checks what reached each destination against what was
sent (see ``support/e2e_job.py`` for the run itself). The collector's ports are fixed by the
templates, so these tests run one after another, never in parallel.

Outside CI they skip unless a collector can be built (``tools/build-otelcol LINE``); with
``CI=true`` a missing collector fails them.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from support import helpers
from support.e2e_checks import (
    OVERRIDE,
    check_run,
    numeric_token,
    random_token,
    sent_logs,
    sent_spans,
)
from support.e2e_job import Job, Result, run_job, wait_for
from support.e2e_otlp import SIGNALS
from support.otelcol import collector_binary

pytestmark = pytest.mark.collector

LINES = tuple(helpers.line_metadata())
COMBINATIONS = {
    "otlp_http+file": ("otlp_http", "file"),
    "otlp_http": ("otlp_http",),
    "file": ("file",),
}

# Names that break a config pasted together as text: quotes, colons, a bare $VAR, collector
# expansions (one of them of the token's own variable), a regex group, and non-ASCII text.
HOSTILE_JOB_ID = 'run "7": $HOME ${env:HOME} ${SLURM_JOB_ID} ü-日本'
HOSTILE_BENCHMARK = 'aime\'25: "hard" $x ${env:HOME} $${1} ✓'
HOSTILE_MODEL = 'qwen "3": $HOME ${env:HOME} ${env:E2E_INGEST_TOKEN} 模型 — ß'


# --- the tests --------------------------------------------------------------------------------


@pytest.mark.parametrize("combination", COMBINATIONS)
@pytest.mark.parametrize("line", LINES)
def test_job_delivers_everything(tmp_path: Path, line: str, combination: str) -> None:
    """Each template line on its own binary, each exporter combination, all checks."""
    binary = collector_binary(line)
    exporters = COMBINATIONS[combination]
    token = numeric_token() if combination == "otlp_http" else random_token()
    check_run(run_job(tmp_path, binary, Job(line, exporters, token)))


@pytest.mark.parametrize("line", LINES)
def test_hostile_names_arrive_as_written(tmp_path: Path, line: str) -> None:
    """Quotes, colons, $, ${env:...} and unicode in the model, benchmark and job directory."""
    binary = collector_binary(line)
    job = Job(
        line,
        COMBINATIONS["otlp_http+file"],
        random_token(),
        gym_job_id=HOSTILE_JOB_ID,
        benchmark=HOSTILE_BENCHMARK,
        model_name=HOSTILE_MODEL,
    )
    result = run_job(tmp_path, binary, job)
    assert result.job_dir == tmp_path / "runs" / HOSTILE_JOB_ID / HOSTILE_BENCHMARK
    files = helpers.FILE_SUFFIXES[line]
    assert sorted(p.name for p in result.otel_dir.iterdir()) == [
        "collector.log",  # the step's start's own lines (the collector's output is elsewhere here)
        "collector.yaml",
        "disk-budget",  # the start's disk budget, and the queue's size within it
        "drain.yaml",
        "ingest.yaml",  # what the collector runs beside the sender
        f"logs{files}",
        f"metrics{files}",
        "queue",  # the backend's disk queue, under a hostile job directory too
        "queue-budget.yaml",
        "sender.yaml",
        "targets",
        f"traces{files}",
    ]
    check_run(result)


def test_backend_outage_loses_nothing(tmp_path: Path) -> None:
    """The proxy answers 503 for a while, then recovers: the backend ends up with everything,
    and the files held everything already while the backend was down."""
    line = "current"
    binary = collector_binary(line)
    during: dict[str, Any] = {}

    def outage(result: Result) -> None:
        assert result.proxy is not None
        # The files fill while the backend is down...
        wait_for(
            lambda: files_hold_sent(result),
            30,
            "the files to hold everything sent during the outage",
        )
        # ...and the collector has met the outage on every signal.
        wait_for(
            lambda: all(result.proxy.refused[s] for s in SIGNALS),
            30,
            "a refused export of every signal",
        )
        during["kept"] = sum(result.proxy.kept.values())
        during["refused"] = dict(result.proxy.refused)

    result = run_job(
        tmp_path,
        binary,
        Job(line, COMBINATIONS["otlp_http+file"], random_token()),
        during_outage=outage,
    )
    assert during["kept"] == 0, "the backend received data during the outage"
    summary = check_run(result)
    print(f"{summary}; refused during the outage: {during['refused']}")


def files_hold_sent(result: Result) -> bool:
    spans = Counter((s.resource.get(OVERRIDE), s.span_id) for s in result.file_items("traces"))
    logs = Counter((r.resource.get(OVERRIDE), r.body) for r in result.file_items("logs"))
    return not (sent_spans(result) - spans) and not (sent_logs(result) - logs)


def test_the_readmes_file_example_reads_what_the_collector_wrote(tmp_path: Path) -> None:
    """README "The job's files": its ``zstdcat | jq`` example, run as written on a current-line
    job's files, counts the same spans as the test's own reader."""
    result = run_job(
        tmp_path, collector_binary("current"), Job("current", ("file",), random_token())
    )
    shown = helpers.run_readme_files_example(0, result.job_dir)
    counted = Counter(
        {name: int(count) for count, name in (row.split(None, 1) for row in shown.splitlines())}
    )
    spans = Counter(span.name for span in result.file_items("traces"))
    assert spans and counted == spans, (counted, spans)
