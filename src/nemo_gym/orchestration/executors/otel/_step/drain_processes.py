"""The two collector processes of ``nemo-gym-otel drain``: started, watched for being up, and
stopped in the job step's order (see :mod:`.drain` for why there are two).

The sender (the backend path) starts first and is up once each of its receivers answers HTTP
(any status: it has no health check, as in the step); then the queue's collector. The stop
TERMs the sender and kills it after its ``stop_seconds`` (``SENDER_STOP_SECONDS``: a sender
waiting out a backend's ``Retry-After`` holds its TERM; what it had not delivered was not
acknowledged, so the disk queue still holds it), then TERMs the queue's collector, killed after
its own (``SHUTDOWN_WAIT_SECONDS``).
"""

from __future__ import annotations

import signal
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._render.drain_config import feature_gate_arguments

_UP_POLL_SECONDS = 0.2


@dataclass
class DrainProcess:
    """One collector the drain runs, from a config in the drain's temporary folder
    (:func:`write_config`), logging beside it."""

    process: subprocess.Popen[bytes]
    log_path: Path
    stop_seconds: float  # how long its stop waits after TERM before it kills it
    exited_early: bool = False  # it exited before the stop asked it to

    @classmethod
    def start(
        cls, binary: str, config_path: Path, document: Mapping[str, Any], stop_seconds: float
    ) -> DrainProcess:
        """The collector ``binary`` run on ``config_path`` (``document``, written there)."""
        log_path = config_path.with_suffix(".log")
        with log_path.open("wb") as log:
            process = subprocess.Popen(
                [binary, f"--config=file:{config_path}", *feature_gate_arguments(document)],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        return cls(process, log_path, stop_seconds)

    def running(self) -> bool:
        return self.process.poll() is None

    def end(self) -> int:
        """TERM, then at most ``stop_seconds`` before a kill (at once, should the wait be
        interrupted); its exit status."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=self.stop_seconds)
            except subprocess.TimeoutExpired:
                pass
            finally:
                if self.process.poll() is None:
                    self.process.kill()
                    self.process.wait()
        else:
            self.exited_early = True
        return int(self.process.returncode)

    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")


def write_config(folder: Path, file_name: str, document: Mapping[str, Any]) -> Path:
    """``document`` written to ``folder/file_name``. Both run configs are written before either
    process starts: the run's folder shows what each was given from the start."""
    import yaml

    path = folder / file_name
    path.write_text(yaml.safe_dump(dict(document), sort_keys=False), encoding="utf-8")
    return path


def answers(address: str) -> bool:
    """Whether an HTTP server answers on ``address`` (host:port), whatever its status."""
    try:
        with urllib.request.urlopen(f"http://{address}/", timeout=2):
            return True
    except urllib.error.HTTPError:
        return True
    except OSError:
        return False


def wait_up(process: DrainProcess, addresses: Iterable[str], timeout_seconds: float) -> bool:
    """Whether every one of ``addresses`` answers before ``process`` exits or the time is up."""
    deadline = time.monotonic() + timeout_seconds
    waiting = list(addresses)
    while process.running() and time.monotonic() < deadline:
        waiting = [address for address in waiting if not answers(address)]
        if not waiting:
            return True
        time.sleep(_UP_POLL_SECONDS)
    return False


def end_in_order(processes: list[DrainProcess]) -> list[int]:
    """Their exit statuses, each ended in turn, every one even when ending one before it was
    interrupted (a second SIGTERM of the CLI): none is left running."""
    if not processes:
        return []
    first, *rest = processes
    try:
        status = first.end()
    finally:
        statuses = end_in_order(rest)
    return [status, *statuses]
