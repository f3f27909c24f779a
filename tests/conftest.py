"""pytest's hooks and fixtures; what the tests share lives in ``support/`` (``support.helpers``
first), imported as modules."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator

import pytest

# The suite's own modules (tests/, support/, benchmarks/) are compiled once and kept in their
# __pycache__, whatever PYTHONDONTWRITEBYTECODE says (container images often set it): otherwise
# every xdist worker rewrites and compiles all of them again at collection (5 s of CPU each on
# the 2-core machine: 7.7 s to collect instead of 2.9 s), and so does every Python process a test
# starts from them (the Slurm jobs' drivers, producers and pushers).
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

from support import helpers, netns, worker_network  # noqa: E402  (compiled once, as above)

# Parallel workers for `-n auto` (the README's command, through addopts): the suite mostly waits
# on collectors, so more workers than the machine's 2 cores keep both busy. Two of them run the
# two Slurm clusters' tests; measured on the 2-core machine (2026-12-07): 749 s on 4 workers,
# 611 s on 6.
AUTO_WORKERS = 6


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden",
        action="store_true",
        help="rewrite tests/golden/ from the current templates (review the diff by eye)",
    )


# The `user` attribute comes from the login name; pin it (before any module renders at
# collection time) so renders are reproducible.
os.environ["LOGNAME"] = "gym-user"


@pytest.fixture(autouse=True)
def _no_ambient_overrides(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NEMO_GYM_OTEL_TEMPLATE_PATH", raising=False)


@pytest.fixture
def example_mapping() -> dict:
    return helpers.load_mapping(helpers.EXAMPLE)


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """Parallel only where each worker can have a network namespace of its own (root): the
    collector's fixed ports would collide otherwise; 0 runs the suite in this process."""
    return AUTO_WORKERS if netns.can_isolate() else 0


def pytest_configure(config: pytest.Config) -> None:
    if hasattr(config, "workerinput"):  # a pytest-xdist worker, before any of its tests
        config.stash[_NETWORK] = worker_network.WorkerNetwork()


_NETWORK = pytest.StashKey[worker_network.WorkerNetwork]()


def pytest_itemcollected(item: pytest.Item) -> None:
    """Groups for ``--dist loadgroup``: the Slurm tests of each cluster on one worker (a cluster's
    jobs share its nodes and ports, so they run one after the other as before; the three-node
    cluster's modules name their group ``slurm-three-nodes`` themselves, its nodes are namespaces
    of their own), and the tests of a
    module that share a module-scoped fixture on one worker (the fixture, often minutes of
    collector runs, is set up once). Marked as each item is collected, before pytest-xdist's
    ``pytest_collection_modifyitems`` reads the groups into the node ids."""
    if item.get_closest_marker("xdist_group"):
        return
    if item.get_closest_marker("slurm"):
        item.add_marker(pytest.mark.xdist_group("slurm"))
    elif _shares_module_fixture(item):
        item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::")[0]))


def pytest_collection_finish(session: pytest.Session) -> None:
    """Grouping that silently stopped working would run Slurm jobs side by side on one node,
    where their collectors' fixed ports collide: refuse to run instead (pytest-xdist puts the
    group into the node id; pytest 9.2 took away the attribute it sets)."""
    if not getattr(session.config.option, "loadgroup", False):
        return
    lost = [
        i.nodeid for i in session.items if i.get_closest_marker("slurm") and "@" not in i.nodeid
    ]
    if lost:
        raise pytest.UsageError(
            f"--dist loadgroup did not group {len(lost)} Slurm tests ({lost[0]}); "
            "pytest-xdist and pytest disagree on node ids (see pyproject.toml's pytest bound)"
        )


def _shares_module_fixture(item: pytest.Item) -> bool:
    info = getattr(item, "_fixtureinfo", None)
    return info is not None and any(
        definition.scope in ("module", "class")  # not the session's: tmp_path_factory is one
        for definitions in info.name2fixturedefs.values()
        for definition in definitions
    )


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[None]:
    """A Slurm test (its fixtures too) runs in the machine's network namespace, where the
    clusters' daemons and jobs are, and so does a slow one, which installs packages from the
    registry that a worker's own namespace cannot reach (see support/worker_network.py)."""
    network = item.config.stash.get(_NETWORK, None)
    if network is None or not (item.get_closest_marker("slurm") or item.get_closest_marker("slow")):
        return (yield)
    with network.host():
        return (yield)
