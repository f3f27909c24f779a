"""Reading a file the user named: a regular UTF-8 file, or one readable error naming it.

``/dev/zero``, a FIFO or a terminal would never end (or never answer): only regular files are
read, and the check is made on the opened file, so it cannot change in between.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable

from .errors import OtelConfigError


def read_text_file(path: str, error: Callable[[str, str], OtelConfigError]) -> str:
    """The text of ``path``; anything else raises ``error(path, message)``."""
    try:
        with open(path, "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                raise error(path, "is not a regular file; name a YAML file")
            data = handle.read()
    except OSError as exc:
        raise error(path, f"cannot read the file ({exc.strerror})") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise error(path, "is not UTF-8 text") from None
