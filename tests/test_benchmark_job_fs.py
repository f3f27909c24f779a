"""The job-directory benchmark's pure parts: where it measures, and how it lays figures out.

The local disk and sshfs must come out side by side in every row, each figure named by its
file system; a machine without sshfs must be told so rather than shown half a table unnamed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchmarks._stats import Sample
from benchmarks.job_fs import (
    FSYNC_NAMES,
    LOCAL,
    NOT_MOUNTED,
    SSHFS,
    cost_figures,
    places,
    rows,
    side_by_side,
)
from benchmarks.long_jobs import QUEUE_VARIANTS


def test_sshfs_is_measured_only_where_it_is_mounted() -> None:
    temporary = Path("/tmp")
    assert places({}, temporary) == {LOCAL: temporary}
    assert places({"noflock": Path("/mnt/n")}, temporary) == {LOCAL: temporary}
    assert places({"sshfs": Path("/mnt/s")}, temporary) == {LOCAL: temporary, SSHFS: Path("/mnt/s")}


def test_side_by_side_names_each_file_system_in_order() -> None:
    assert side_by_side({LOCAL: "1 s", SSHFS: "9 s"}) == f"{LOCAL}: 1 s   {SSHFS}: 9 s"


def _cost(first: float, second: float, held: bool = True) -> dict[str, Any]:
    return {"cores": {"a": first, "b": second}, "held": {"a": held, "b": True}}


def test_cost_is_the_first_variants_cores_less_the_seconds() -> None:
    figures = cost_figures({"1x": _cost(0.25, 0.125), "10x": _cost(1.0, 1.5, held=False)}, "a", "b")
    assert figures["1x"] == "+0.125 cores (0.250 vs 0.125)"
    assert figures["10x"] == "-0.500 cores (1.000 vs 1.500) NOT HELD"


def test_the_file_systems_client_is_shown_beside_the_collector_where_measured() -> None:
    cost = _cost(0.25, 0.125)
    cost["helper_cores"] = {"a": 0.5, "b": 0.125}
    assert cost_figures({"1x": cost}, "a", "b")["1x"] == (
        "+0.125 cores (0.250 vs 0.125), its client +0.375 cores (0.500 vs 0.125)"
    )


def _place(queue: float, fsync: float, backlog: float, write: float) -> dict[str, Any]:
    disk, memory = QUEUE_VARIANTS
    synced, default = FSYNC_NAMES
    return {
        "queue_cost": {"1x": {"cores": {disk: queue, memory: 0.0}, "held": {disk: True}}},
        "fsync_cost": {"1x": {"cores": {synced: fsync, default: 0.0}, "held": {synced: True}}},
        "backlogs": {"current": {"drained_seconds": backlog}},
        "write": {"total": Sample("500 jobs written", "s", (write, write, write))},
    }


def test_every_row_holds_both_file_systems() -> None:
    table = rows(
        {
            "places": {LOCAL: "/tmp", SSHFS: "/mnt/s"},
            "by_place": {LOCAL: _place(0.01, 0.02, 3.0, 1.5), SSHFS: _place(0.03, 0.05, 7.5, 20.0)},
        }
    )
    assert table[0] == ("job directory on", f"{LOCAL}: /tmp   {SSHFS}: /mnt/s")
    figures = dict(table[1:])
    assert len(figures) == 4, table
    queue = next(v for k, v in figures.items() if k.startswith("disk queue's CPU, 1x"))
    assert (
        queue == f"{LOCAL}: +0.010 cores (0.010 vs 0.000)   {SSHFS}: +0.030 cores (0.030 vs 0.000)"
    )
    fsync = next(v for k, v in figures.items() if k.startswith("fsync's CPU, 1x"))
    assert f"{SSHFS}: +0.050 cores" in fsync and f"{LOCAL}: +0.020 cores" in fsync
    backlog = figures["10-s backlog at the backend after it came back (current)"]
    assert backlog == f"{LOCAL}: 3.0 s   {SSHFS}: 7.5 s"
    written = figures["500 jobs written (goal < 2 s)"]
    assert written.startswith(f"{LOCAL}: 1.500 s") and f"{SSHFS}: 20.000 s" in written


def test_a_run_without_sshfs_says_so() -> None:
    table = rows({"places": {LOCAL: "/tmp"}, "by_place": {LOCAL: _place(0.01, 0.02, 3.0, 1.5)}})
    assert table[0] == ("job directory on", f"{LOCAL}: /tmp   ({NOT_MOUNTED})")
    assert all(SSHFS not in value for _, value in table[1:])
