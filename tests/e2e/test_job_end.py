"""The job's end with servers that push until the job ends (issue 37), on each line's collector.

Three servers (the real OpenTelemetry SDK, ``support/e2e_pusher.py``) push spans every 25 ms, log
records and a counter while the collector is TERMed and while the stop's drain runs after it
(``support/e2e_job_end.py``), with the backend's queue on disk (the default) and the delivery
report on (so the drain pushes its own readings too). Counted per item id:

- every item a server's SDK saw accepted is in the job's files exactly once, read with the
  tests' own zstd reader (the last second before TERM included);
- every such item is at the backend exactly once once the stop and its drain returned (none
  lost in the hop's requests that the stop interrupted);
- every resource at the backend carries the job's attributes: nothing the servers pushed after
  the stop reached a collector that does not stamp them.

Outside CI they skip unless a collector can be built (``tools/build-otelcol LINE``); with
``CI=true`` a missing collector fails them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support import helpers
from support.e2e_checks import random_token
from support.e2e_job_end import (
    JobEnd,
    count_differences,
    held,
    push_through_the_stop,
    unattributed,
)
from support.e2e_life import Life
from support.e2e_otlp import SIGNALS
from support.e2e_tally import at_backend, in_files
from support.otelcol import collector_binary

pytestmark = pytest.mark.collector

LINES = tuple(helpers.line_metadata())
# The stop races a steady stream only if items were accepted this close before TERM.
LAST_SECOND = 1.0


@pytest.fixture(scope="module", params=LINES)
def ended(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Life, JobEnd]]:
    line = request.param
    host = f"127.0.0.{80 + LINES.index(line)}"
    tmp_path: Path = tmp_path_factory.mktemp(f"job-end-{line}")
    life = Life(
        line, host, tmp_path, collector_binary(line), random_token(), {"delivery_report": True}
    )
    try:
        end = push_through_the_stop(life)
        yield life, end
    finally:
        life.close()


def _when(end: JobEnd, got: dict[str, Counter[Any]]) -> str:
    """When, from TERM, the missing items had been accepted."""
    ages = sorted(end.accepted_at[(s, key)] for s in SIGNALS for key in end.accepted[s] - got[s])
    return f"missing items accepted {ages[0]:+.2f}s to {ages[-1]:+.2f}s from TERM" if ages else ""


def test_the_stop_met_a_steady_stream(ended: tuple[Life, JobEnd]) -> None:
    """The scenario itself: every server had items accepted in the last second before TERM,
    and the stop and its drain ended as the job step's do."""
    _, end = ended
    for s in SIGNALS:
        last = [t for (signal, _), t in end.accepted_at.items() if signal == s and t <= 0]
        assert last and max(last) > -LAST_SECOND, f"{s}: nothing accepted in the last second"
    assert end.drain_exit_code is not None, "no drain config: the queue is not on disk"


def test_files_hold_every_accepted_item_once(ended: tuple[Life, JobEnd]) -> None:
    life, end = ended
    wrong = count_differences("files", held(in_files(life)), end.accepted)
    assert not wrong, f"{wrong}; {_when(end, held(in_files(life)))}"


def test_backend_holds_every_accepted_item_once_after_the_stop_and_its_drain(
    ended: tuple[Life, JobEnd],
) -> None:
    life, end = ended
    wrong = count_differences("backend", held(at_backend(life)), end.accepted)
    assert not wrong, f"{wrong}; {_when(end, held(at_backend(life)))}"


def test_nothing_reaches_the_backend_without_the_jobs_attributes(
    ended: tuple[Life, JobEnd],
) -> None:
    life, _ = ended
    found = unattributed(at_backend(life))
    assert not found, (
        f"{sum(found.values())} items at the backend lack the job's attributes, e.g. "
        f"{list(found)[:2]}"
    )
