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
from collections.abc import Mapping

from .._common.constants import DRAIN_CONFIG_NAME, INGEST_CONFIG_NAME, SENDER_CONFIG_NAME

FILES_MARK = "# nemo-gym-otel files "
WITH_DRAIN = " with drain.yaml"
WITHOUT_DRAIN = " without drain.yaml"
# "with drain.yaml" stands for all of them: a rendering with a disk queue writes each, one
# without writes none (the job step runs ingest.yaml and sender.yaml then, see _render/sender_config.py).
COMPANION_NAMES = (DRAIN_CONFIG_NAME, INGEST_CONFIG_NAME, SENDER_CONFIG_NAME)


def marked(text: str, companions: Mapping[str, str] | None) -> tuple[str, dict[str, str] | None]:
    """``collector.yaml``'s text and its companions' (name -> text; None: none), each ending in
    the mark."""
    parts = [text, *(companions[name] for name in sorted(companions))] if companions else [text]
    files = FILES_MARK + hashlib.sha256("\0".join(parts).encode("utf-8")).hexdigest()[:16]
    if companions is None:
        return f"{text}{files}{WITHOUT_DRAIN}\n", None
    mark = f"{files}{WITH_DRAIN}\n"
    return text + mark, {name: body + mark for name, body in companions.items()}
