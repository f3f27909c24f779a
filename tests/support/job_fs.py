"""Job directories on the file systems of ``.ci/job-fs-up``: sshfs over loopback (a network file
system), a FUSE file system whose flock fails with ENOSYS (a Lustre client without flock), and
size-limited ones (tmpfs, a quota that fills) that one test at a time holds whole.

``.ci/job-fs-up`` writes ``<name> <mount point>`` lines into its state file; this module is the
tests' only reader of it. A test that needs a mount that is not up skips, and fails under
``CI=true`` (``helpers.unavailable``).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

from support import helpers

MOUNTS_FILE = Path("/run/nemo-gym-otel-job-fs/mounts")
SMALL = ("small0", "small1", "small2", "small3")
SMALL_BYTES = 64 * 1024 * 1024
FILE_SYSTEMS = ("sshfs", "noflock")  # the beds a job directory is made on (fresh_folder)


def mounted() -> dict[str, Path]:
    """The mounted test file systems by name (empty when .ci/job-fs-up did not run)."""
    try:
        text = MOUNTS_FILE.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    found = {}
    for line in text.splitlines():
        name, _, path = line.partition(" ")
        if name in (*FILE_SYSTEMS, *SMALL) and os.path.ismount(path):
            found[name] = Path(path)
    return found


def fresh_folder(name: str) -> Path:
    """A new, empty folder on the file system ``name``, for one test's job directories."""
    mount = mounted().get(name)
    if mount is None:
        helpers.unavailable(f"no {name} file system for job directories; run .ci/job-fs-up as root")
    folder = mount / f"test-{uuid.uuid4().hex[:12]}"
    folder.mkdir(mode=0o777)
    return folder


def file_system_of(path: Path) -> str | None:
    """The name of the test file system ``path`` is on, or None (another one)."""
    return next((name for name, mount in mounted().items() if path.is_relative_to(mount)), None)


@contextlib.contextmanager
def small_file_system() -> Iterator[Path]:
    """A size-limited file system (``SMALL_BYTES``) to this test alone for the block: the first
    one whose lock (beside the mounts file) is free, emptied before and after, since its free
    space is what the test measures."""
    found = mounted()
    names = [name for name in SMALL if name in found]
    if not names:
        helpers.unavailable(
            "no size-limited file system for job directories; run .ci/job-fs-up as root"
        )
    for name in names:
        with (MOUNTS_FILE.parent / f"{name}.lock").open("a") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue
            _empty(found[name])
            try:
                yield found[name]
            finally:
                _empty(found[name])
            return
    helpers.unavailable(f"every size-limited file system ({', '.join(names)}) is in use")


def _empty(mount: Path) -> None:
    for entry in mount.iterdir():
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()
