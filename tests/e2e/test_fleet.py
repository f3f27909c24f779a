"""A short fleet (issue 38): three jobs' collectors, each rendered for a job directory of its own
and run in a network namespace of its own, against one backend of bounded capacity, through
the benchmark's three scenarios in seconds: steady, an outage (503) and its recovery, a backend
at half the offered load (429 with ``Retry-After``), then every job's stop and its drain.

Counted per item number at the backend (``benchmarks/_fleet_items.py``): every item a collector
accepted arrives, none twice, none that a collector refused. The long run, with 32 jobs and a
10-minute outage, is ``python -m benchmarks --only fleet``.

It makes network namespaces (root); without root it skips, and with ``CI=true`` it fails.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from support import netns
from support.otelcol import collector_binary

from benchmarks.fleet import run_fleet

pytestmark = pytest.mark.collector

JOBS = 3
DURATIONS = {"steady": 2.0, "outage": 3.0, "half": 3.0}


def test_a_fleet_through_an_outage_and_an_overload_delivers_every_item_once(
    tmp_path: Path,
) -> None:
    if not netns.can_isolate():
        message = "making network namespaces needs root"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    result = run_fleet(JOBS, DURATIONS, tmp_path, collector_binary("current"))

    assert result["refused_by_collectors"] == 0, result["generator_errors"]
    assert result["accepted_items"] > 0
    assert result["exactness"] == {"lost": 0, "twice": 0, "unasked": 0}
    assert result["untenanted_items"] == 0
    scenarios = result["scenarios"]
    # The scenarios happened: the outage refused everything, the half-capacity backend refused
    # with 429, and both backlogs drained within their bound.
    assert set(scenarios["outage"]["statuses_in_outage"]) == {"503"}
    assert "503" not in scenarios["outage"]["statuses"]  # those are the recovery's
    assert scenarios["half"]["statuses"].get("429", 0) > 0, scenarios["half"]["statuses"]
    assert scenarios["outage"]["backlog_items"] > 0
    assert scenarios["outage"]["collectors_back"] == JOBS
    assert scenarios["outage"]["drain_s"] is not None
    assert scenarios["half"]["drain_s"] is not None
    assert all(exit == {"collector": 0, "drain": 0} for exit in result["exits"]), result["exits"]
