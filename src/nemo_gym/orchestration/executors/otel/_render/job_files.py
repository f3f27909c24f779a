"""The mark that ties a job's ``collector.yaml`` to its ``drain.yaml``.

Both files are written with one folder fsync (see :mod:`.._common.atomic_file`), so a crash
before it returns may keep one file's rename and lose the other's: a new ``collector.yaml``
beside an earlier rendering's ``drain.yaml``, an earlier ``collector.yaml`` beside the new
``drain.yaml``, or a ``drain.yaml`` that should have been removed. The stop would then drain
with a config that does not belong to the collector it followed, or skip a drain it needs. So
the last line of ``collector.yaml`` says which ``drain.yaml`` belongs to it::

    # nemo-gym-otel files 3f9a0c1e2b4d5a6f with drain.yaml      (drain.yaml ends in this line)
    # nemo-gym-otel files 3f9a0c1e2b4d5a6f without drain.yaml   (there must be no drain.yaml)

The id is the first 16 hex digits of the SHA-256 of both texts, so two renderings that differ
in either file differ in it (and an unchanged rendering writes unchanged files). The step's
start checks the pair before it starts the collector (``CollectorStep.files_mark``). A last
line also shows that a file is whole: a crash cannot cut one (its data is fsynced before its
rename), but a file copied or edited by hand that lost its end is refused too.
"""

from __future__ import annotations

import hashlib

FILES_MARK = "# nemo-gym-otel files "
WITH_DRAIN = " with drain.yaml"
WITHOUT_DRAIN = " without drain.yaml"


def marked(text: str, drain: str | None) -> tuple[str, str | None]:
    """``collector.yaml``'s text and ``drain.yaml``'s (None: none), each ending in the mark."""
    both = f"{text}\0{drain}" if drain is not None else text
    files = FILES_MARK + hashlib.sha256(both.encode("utf-8")).hexdigest()[:16]
    if drain is None:
        return f"{text}{files}{WITHOUT_DRAIN}\n", None
    mark = f"{files}{WITH_DRAIN}\n"
    return text + mark, drain + mark
