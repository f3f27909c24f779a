"""A network namespace of its own for each parallel test worker, so fixed ports never collide.

The collector binds fixed ports (4317, 4318, 4319, 13133, its delivery report's), so two tests
that start one at the same time on the same loopback would fail each other. Each pytest-xdist
worker therefore moves, before it runs any test, into a new network namespace with only its
loopback up: every collector, backend and producer a test starts from that worker shares the
worker's loopback and no other worker's. The switch is per thread (``unshare`` and ``setns``
act on the calling thread), which is why it happens in the worker's main thread, the one that
runs the tests, before any test started a thread or a process: both inherit it.

Slurm tests cannot live there: their jobs run under the clusters' slurmd, in the machine's own
namespace (the single-node cluster) or in the nodes' namespaces on the host's bridge (the
three-node one), and reach the test's backend there. So a Slurm test runs in the machine's
namespace (:meth:`WorkerNetwork.host`), and each cluster's run on one worker (see
``conftest.py``), one after the other, as they did before the suite ran in parallel. The slow tests, which install packages from the
registry (a fresh clone's virtual environment, pre-commit's hook environments), run there too: a
worker's namespace has no route off the machine. They start no collector.

Entering a namespace needs root (CAP_SYS_ADMIN); without it the suite runs on one worker
(``conftest.pytest_xdist_auto_num_workers``), as it always could.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from . import netns


class WorkerNetwork:
    """The machine's network namespace and the worker's own, both held open by descriptor."""

    def __init__(self) -> None:
        self._host = netns.current()
        self._own = netns.create()

    @contextlib.contextmanager
    def host(self) -> Iterator[None]:
        """Run the body in the machine's namespace, then come back to the worker's own."""
        netns.enter(self._host)
        try:
            yield
        finally:
            netns.enter(self._own)
