"""Writing a file so that it appears whole or not at all.

A temporary file in the destination folder is written, fsynced and renamed over the target. The
folders it had to create are removed again when anything fails, so a failure leaves nothing
behind; a folder someone else made meanwhile is not ours to remove.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


def write_atomically(target: Path, text: str) -> None:
    missing = []  # deepest first, up to the first folder that exists
    folder = target.parent
    while not folder.exists():
        missing.append(folder)
        folder = folder.parent
    created: list[Path] = []
    temporary = None
    try:
        for folder in reversed(missing):
            try:
                folder.mkdir()
            except FileExistsError:
                if not folder.is_dir():
                    raise
                continue  # made meanwhile by someone else: not ours to remove
            created.append(folder)
        fd, temporary = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, target)
    except BaseException:
        if temporary is not None:
            Path(temporary).unlink(missing_ok=True)
        for folder in reversed(created):
            _remove_if_empty(folder)
        raise


def _remove_if_empty(folder: Path) -> None:
    with contextlib.suppress(OSError):
        folder.rmdir()
