"""Where the benchmarked collector delivers: a counting backend and the job directory's files.

The backend is the routing proxy's contract at the cost of a counter: it answers 200 to every
decodable request, and counts a payload's items as delivered only when the ``Authorization`` header is the
token's and every resource carries the ``Authorization`` attribute equal to the token (what the
proxy in front of the real backend forwards); anything else is lost, as it would be there. Items
are counted from the protobuf messages' repeated fields, never flattened or kept, so the backend
stays cheap next to the collector on a small machine. Both destinations count only the items of
the load generator's scope: the collector adds its own (span metrics, scrapes).
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

from support.e2e_backend import OtlpBackend, carries_tenant
from support.e2e_otlp import ZstdFrames, resource_groups

from nemo_gym.orchestration.executors.otel._templating.file_compression import rotated_file_glob

from ._otlp_load import SCOPE

SIGNALS = ("traces", "logs", "metrics")
OUTAGE_MODES = ("up", "503", "black_hole")
BLACK_HOLE_HOLD_SECONDS = 900  # longer than any outage run: the exporter's timeout ends it first
_SCOPE_BYTES = json.dumps(SCOPE).encode()  # as the file exporter writes the scope's name
_SCOPES = {"traces": "scope_spans", "logs": "scope_logs", "metrics": "scope_metrics"}


def message_items(signal: str, message: Any) -> int:
    """The spans, log records or data points of the generator's scope in one OTLP message."""
    count = 0
    for group in resource_groups(signal, message):
        for scope in getattr(group, _SCOPES[signal]):
            if scope.scope.name != SCOPE:
                continue
            if signal == "traces":
                count += len(scope.spans)
            elif signal == "logs":
                count += len(scope.log_records)
            else:
                for metric in scope.metrics:
                    kind = metric.WhichOneof("data")
                    count += len(getattr(metric, kind).data_points) if kind else 0
    return count


class CountingBackend(OtlpBackend):
    """An OTLP/HTTP endpoint on 127.0.0.1 that counts delivered and lost items per signal.

    An undecodable body is answered 400 (the collector drops it: lost, like any item that never
    counts as delivered)."""

    def __init__(self, token: str) -> None:
        # Set before the server starts answering in OtlpBackend.__init__.
        self._token = token
        self.mode = "up"  # OUTAGE_MODES: answers, answers 503, or holds requests unanswered
        self._recovered = threading.Event()
        self._recovered.set()
        self.delivered: Counter[str] = Counter()
        self.lost: Counter[str] = Counter()  # no tenant attribute, or the wrong header
        self.last_arrival = 0.0  # time.monotonic() of the last payload with items of ours
        super().__init__()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def set_mode(self, mode: str) -> None:
        """``up``, ``503`` (an outage the exporter retries) or ``black_hole`` (accepts requests
        and never answers until the outage ends, then drops them unanswered)."""
        if mode not in OUTAGE_MODES:
            raise ValueError(f"mode must be one of {OUTAGE_MODES}")
        self.mode = mode
        if mode == "up":
            self._recovered.set()
        else:
            self._recovered.clear()

    def _serve(self, handler: Any, path: str, body: bytes) -> Any:
        if self.mode == "503":
            return 503, "text/plain", b"outage"
        if self.mode == "black_hole":
            self._recovered.wait(BLACK_HOLE_HOLD_SECONDS)
            return None
        return super()._serve(handler, path, body)

    def receive(self, signal: str, message: Any, headers: Any) -> None:
        items = message_items(signal, message)
        delivered = headers.get("Authorization") == f"Bearer {self._token}" and carries_tenant(
            signal, message, self._token
        )
        with self._lock:
            (self.delivered if delivered else self.lost)[signal] += items
            if items:
                self.last_arrival = time.monotonic()

    def counts(self) -> tuple[dict[str, int], dict[str, int]]:
        with self._lock:
            return dict(self.delivered), dict(self.lost)


def _json_items(signal: str, line: bytes) -> int:
    """The generator's items in one OTLP-JSON line of the file exporter."""
    resource_key, scope_key = {
        "traces": ("resourceSpans", "scopeSpans"),
        "logs": ("resourceLogs", "scopeLogs"),
        "metrics": ("resourceMetrics", "scopeMetrics"),
    }[signal]
    count = 0
    for group in json.loads(line).get(resource_key, ()):
        for scope in group.get(scope_key, ()):
            if scope.get("scope", {}).get("name") != SCOPE:
                continue
            if signal == "traces":
                count += len(scope.get("spans", ()))
            elif signal == "logs":
                count += len(scope.get("logRecords", ()))
            else:
                for metric in scope.get("metrics", ()):
                    for kind in ("sum", "gauge", "histogram", "exponentialHistogram", "summary"):
                        if kind in metric:
                            count += len(metric[kind].get("dataPoints", ()))
    return count


class _Tail:
    """The whole lines appended to one signal file since the last look, decompressed where the
    collector writes zstd (a stream of frames, the last one growing until its flush).

    It follows the file exporter's rotation, which renames the file ``<stem>-<UTC
    time><suffix>`` and begins a new one under the old name, as often as it did since the last
    look (a 10-minute step rotates many times before the next): the open handle reads the file it
    holds to its end, then every file finished after it, oldest first, then the new live file
    from its start. A finished file removed before the look (the job step compresses the legacy
    line's) is not found; the benchmarks count before that."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._open(path)

    def _open(self, path: Path) -> None:
        self._handle = path.open("rb")
        self._pending = b""  # the start of a line still being written
        self._zstd = ZstdFrames() if path.suffix == ".zst" else None

    def _appended(self) -> bytes:
        data = self._handle.read()
        if self._zstd is not None:
            data = self._zstd.decompress(data)
        data = self._pending + data
        cut = data.rfind(b"\n") + 1
        self._pending = data[cut:]
        return data[:cut]

    def _inode(self) -> int:
        return os.fstat(self._handle.fileno()).st_ino

    def _rotated(self) -> bool:
        try:
            return self.path.stat().st_ino != self._inode()
        except FileNotFoundError:  # between the rename and the new file
            return False

    def _finished_after(self, inode: int) -> list[Path]:
        """The files the rotation finished after the one ``inode`` names, oldest first (the time
        in their names sorts as text)."""
        finished = sorted(self.path.parent.glob(rotated_file_glob(self.path.name)))
        inodes = [path.stat().st_ino for path in finished]
        return finished[inodes.index(inode) + 1 :] if inode in inodes else []

    def read(self) -> bytes:
        data = self._appended()
        if not self._rotated():
            return data
        data += self._appended()  # what the writer added before it closed the file
        for path in [*self._finished_after(self._inode()), self.path]:
            self._handle.close()
            self._open(path)
            data += self._appended()
        return data

    def close(self) -> None:
        self._handle.close()


class FileCounter:
    """The items in ``<otel dir>/<signal>.jsonl`` (or ``.jsonl.zst``), from what was appended
    since the last look, the files its rotation renamed included.

    ``poll`` is cheap enough to run every 100 ms while the collector writes: it reads the whole
    lines appended since, keeps those that hold the generator's scope (a byte search) and notes
    when the last of them was seen. ``count`` parses what was kept, after the collector is done.
    """

    def __init__(self, otel_dir: Path) -> None:
        self._otel_dir = otel_dir
        self._tails: dict[str, _Tail] = {}
        self._lines: dict[str, list[bytes]] = {signal: [] for signal in SIGNALS}
        self.items: Counter[str] = Counter()
        self.last_arrival = 0.0  # time.monotonic() of the last poll that found items of ours

    def poll(self) -> None:
        for signal in SIGNALS:
            if signal not in self._tails:
                names = (f"{signal}.jsonl.zst", f"{signal}.jsonl")
                found = next((p for p in map(self._otel_dir.joinpath, names) if p.exists()), None)
                if found is None:
                    continue
                self._tails[signal] = _Tail(found)
            complete = self._tails[signal].read()
            ours = [line for line in complete.splitlines() if _SCOPE_BYTES in line]
            if ours:
                self._lines[signal] += ours
                self.last_arrival = time.monotonic()

    def count(self) -> dict[str, int]:
        self.poll()
        for signal, lines in self._lines.items():
            self.items[signal] += sum(_json_items(signal, line) for line in lines)
            lines.clear()
        return dict(self.items)

    def close(self) -> None:
        for tail in self._tails.values():
            tail.close()
