"""The fleet's network: one namespace per job, like one node each, and a hub they all reach.

Every job's collector binds the same fixed ports (4317, 4318, 4319, 13133, ...), as on its own
node; so each job gets a network namespace of its own (its loopback up), joined by a veth pair
to a bridge in a hub namespace, where the backend listens (SPEC section 8 wires Slurm's nodes
the same way). The hub is a new namespace too: the bridge and its addresses never reach the
machine's own network, and the run can share the machine with anything.

The namespaces are held only by this process's descriptors (``support/netns.py``): once the
processes started in them are gone and ``close`` ran, or the process ended however it did, they
and their links are gone too. The calling thread stays in the hub between ``__enter__`` and
``close``, so what it starts there (the backend) listens on the bridge.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator

from support import netns

BRIDGE = "fleet0"
HUB_ADDRESS = "10.77.0.1"
PREFIX = 16


def job_address(index: int) -> str:
    """Job ``index``'s address on the bridge (the hub has 10.77.0.1)."""
    if not 0 <= index < 250 * 250:
        raise ValueError(f"job index {index} out of range")
    return f"10.77.{1 + index // 250}.{1 + index % 250}"


def _ip(commands: list[str]) -> None:
    subprocess.run(["ip", "-batch", "-"], input="\n".join(commands) + "\n", text=True, check=True)


class FleetNetwork:
    """``jobs`` namespaces on one bridge; ``inside(i)`` runs code (starts processes) in job
    ``i``'s."""

    def __init__(self, jobs: int) -> None:
        self.size = jobs
        self.hub_address = HUB_ADDRESS
        self.descriptors: list[int] = []
        self._outer: int | None = None
        self._hub: int | None = None

    def __enter__(self) -> FleetNetwork:
        self._outer = netns.current()
        try:
            self._build()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _build(self) -> None:
        self._hub = netns.create()
        links = [
            f"link add {BRIDGE} type bridge",
            f"addr add {HUB_ADDRESS}/{PREFIX} dev {BRIDGE}",
            f"link set {BRIDGE} up",
        ]
        for index in range(self.size):
            self.descriptors.append(netns.create())
            netns.enter(self._hub)
            links += [
                f"link add fv{index} type veth peer name eth0 netns {netns.path(self.descriptors[-1])}",
                f"link set fv{index} master {BRIDGE} up",
            ]
        _ip(links)
        for index, descriptor in enumerate(self.descriptors):
            with netns.entered(descriptor):
                _ip([f"addr add {job_address(index)}/{PREFIX} dev eth0", "link set eth0 up"])

    @contextlib.contextmanager
    def inside(self, index: int) -> Iterator[None]:
        with netns.entered(self.descriptors[index]):
            yield

    def close(self) -> None:
        """Back to the namespace the caller was in; let go of the fleet's."""
        if self._outer is not None:
            netns.enter(self._outer)
            os.close(self._outer)
            self._outer = None
        for descriptor in [*self.descriptors, *([self._hub] if self._hub is not None else [])]:
            os.close(descriptor)
        self.descriptors, self._hub = [], None
