"""The benchmarks count the items in the job's files across the file exporter's rotation.

Since the legacy line rotates by default (and the step compresses and removes what the rotation
finished), a counter that reread ``<signal>.jsonl`` by name would miss everything the rotation
took away and report it lost: the outage benchmark did, for 1.2 million spans. Here the
rotation as the exporter does it (rename, then a new file under the old name), once and then
twice between two looks (a 10-minute step rotates many times before the next).
"""

from __future__ import annotations

import json
from pathlib import Path

import zstandard

from benchmarks._otlp_load import SCOPE
from benchmarks._otlp_sink import FileCounter


def _line(spans: int, scope: str = SCOPE) -> str:
    batch = {"scope": {"name": scope}, "spans": [{"name": f"s{i}"} for i in range(spans)]}
    return json.dumps({"resourceSpans": [{"scopeSpans": [batch]}]}) + "\n"


def test_items_written_before_and_after_a_rotation_are_all_counted(tmp_path: Path) -> None:
    live = tmp_path / "traces.jsonl"
    live.write_text(_line(3))
    counter = FileCounter(tmp_path)
    counter.poll()
    with live.open("a") as handle:  # written after the first look, before the rotation
        handle.write(_line(4) + _line(100, scope="someone else"))
    finished = tmp_path / "traces-2026-12-05T02-00-00.000.jsonl"
    live.rename(finished)
    live.write_text(_line(5))
    counter.poll()
    finished.unlink()  # the step compressed it and removed the plain file
    with live.open("a") as handle:
        handle.write(_line(6))
    for minute in (1, 2):  # two rotations before the next look
        live.rename(tmp_path / f"traces-2026-12-05T02-0{minute}-00.000.jsonl")
        live.write_text(_line(10 * minute))
    try:
        assert counter.count()["traces"] == 3 + 4 + 5 + 6 + 10 + 20
    finally:
        counter.close()


def test_the_current_lines_rotated_zstd_streams_are_followed_too(tmp_path: Path) -> None:
    """``traces.jsonl.zst`` rotates into ``traces.jsonl-<UTC time>.zst``, each a stream."""
    live = tmp_path / "traces.jsonl.zst"
    live.write_bytes(zstandard.ZstdCompressor().compress(_line(2).encode()))
    counter = FileCounter(tmp_path)
    counter.poll()
    for minute, spans in ((1, 3), (2, 4)):
        live.rename(tmp_path / f"traces.jsonl-2026-12-05T02-0{minute}-00.000.zst")
        live.write_bytes(zstandard.ZstdCompressor().compress(_line(spans).encode()))
    try:
        assert counter.count()["traces"] == 2 + 3 + 4
    finally:
        counter.close()
