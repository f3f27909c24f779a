"""Network namespaces held open by a descriptor and entered per thread.

``unshare(CLONE_NEWNET)`` and ``setns`` act on the calling thread only, and whatever that thread
starts afterwards (a thread, a process) inherits its namespace. So one thread can make a
namespace, start a process in it, and come back; other threads never notice. A namespace lives
as long as a descriptor or a process holds it: one that only this process's descriptors hold
goes away with the process, however it ends, and takes its links (a veth's end) with it.
Entering or making one needs root (CAP_SYS_ADMIN).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import subprocess
from collections.abc import Iterator

CLONE_NEWNET = 0x40000000
_libc = ctypes.CDLL(None, use_errno=True)


def can_isolate() -> bool:
    """Whether this process may make network namespaces (root, and the calls exist)."""
    return os.geteuid() == 0 and hasattr(_libc, "unshare") and hasattr(_libc, "setns")


def current() -> int:
    """A descriptor of the calling thread's network namespace."""
    return os.open("/proc/thread-self/ns/net", os.O_RDONLY | os.O_CLOEXEC)


def create() -> int:
    """Move the calling thread into a new network namespace with its loopback up; its
    descriptor. The thread stays there (``enter`` another to leave)."""
    check(_libc.unshare(CLONE_NEWNET), "unshare(CLONE_NEWNET)")
    descriptor = current()
    # A new namespace's loopback is down: nothing could listen on 127.0.0.1.
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    return descriptor


def enter(descriptor: int) -> None:
    """Move the calling thread into the namespace ``descriptor`` holds."""
    check(_libc.setns(descriptor, CLONE_NEWNET), "setns")


@contextlib.contextmanager
def entered(descriptor: int) -> Iterator[None]:
    """Run the body with the calling thread in the namespace ``descriptor`` holds, then come
    back to the one it was in."""
    before = current()
    try:
        enter(descriptor)
        try:
            yield
        finally:
            enter(before)
    finally:
        os.close(before)


def path(descriptor: int) -> str:
    """A path naming the namespace ``descriptor`` holds, for ``ip ... netns`` and ``nsenter``
    (readable by other processes of the same user)."""
    return f"/proc/{os.getpid()}/fd/{descriptor}"


def check(result: int, call: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{call}: {os.strerror(errno)}")
