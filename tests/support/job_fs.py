"""Job directories on the file systems of ``.ci/job-fs-up``: sshfs over loopback (a network file
system) and a FUSE file system whose flock fails with ENOSYS (a Lustre client without flock).

``.ci/job-fs-up`` writes ``<name> <mount point>`` lines into its state file; this module is the
tests' only reader of it. A test that needs a mount that is not up skips, and fails under
``CI=true`` (``helpers.unavailable``).
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

from support import helpers

MOUNTS_FILE = Path("/run/nemo-gym-otel-job-fs/mounts")
FILE_SYSTEMS = ("sshfs", "noflock")


def mounted() -> dict[str, Path]:
    """The mounted test file systems by name (empty when .ci/job-fs-up did not run)."""
    try:
        text = MOUNTS_FILE.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    found = {}
    for line in text.splitlines():
        name, _, path = line.partition(" ")
        if name in FILE_SYSTEMS and os.path.ismount(path):
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
