"""A load generator run as a child process that speaks one JSON document per line, both ways.

The benchmarks' generators (``_otlp_load``, ``_fleet_load``) take commands on stdin and answer on
stdout; a thread reads the answers so that a wait for one is bounded, and a generator that dies
or falls silent ends the benchmark with one line that says so instead of hanging it.
"""

from __future__ import annotations

import json
import queue
import subprocess
import threading
from typing import Any

from support import helpers


class JsonLinesChild:
    """The child's answers arrive through :meth:`take` (override it to keep some aside);
    :meth:`receive` waits for the next one it queued."""

    def __init__(self, command: list[str], pass_fds: tuple[int, ...] = ()) -> None:
        self.process = subprocess.Popen(
            command,
            cwd=helpers.REPO,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            pass_fds=pass_fds,
        )
        self._lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            record = json.loads(line)
            if not self.take(record):
                self._lines.put(line)
        self._lines.put("")

    def take(self, record: dict[str, Any]) -> bool:
        """Whether the reader keeps ``record`` itself (not queued for :meth:`receive`)."""
        return False

    def receive(self, timeout: float) -> dict[str, Any]:
        try:
            line = self._lines.get(timeout=timeout)
        except queue.Empty:
            raise RuntimeError(f"the load generator said nothing for {timeout:.0f}s") from None
        if not line:
            raise RuntimeError(f"the load generator exited with {self.process.wait(timeout=10)}")
        return json.loads(line)

    def send(self, command: dict[str, Any] | str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(
            (command if isinstance(command, str) else json.dumps(command)) + "\n"
        )
        self.process.stdin.flush()

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)
