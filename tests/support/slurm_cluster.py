"""The local Slurm cluster as the tests see it: whether it takes jobs, submitting, watching.

The ``Watcher`` looks at a running job from outside, as an attacker on the node or a curious
user of the cluster could: the names of its steps (``squeue -s``), ``scontrol show job -d`` and
every process's command line (the token must be in none of them). It also runs a callback the
moment the batch script marks the start of the stop (the black-holed backend's cue).

Every function takes the environment of the Slurm commands (``env``; this process's when None),
so ``support/slurm_multi.py`` points them at the three-node cluster through ``SLURM_CONF``.
"""

from __future__ import annotations

import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from support import helpers

# squeue's and scontrol's view of the job while it runs, and every process's command line.
WATCH_INTERVAL_SECONDS = 0.5
# Node states in which a node runs a job submitted now, at once or after the jobs before it:
# "planned" (the backfill scheduler holds it for a pending job) and "completing" (a job's end
# is being cleaned up) pass within seconds.
TAKES_JOBS = {"idle", "mixed", "allocated", "planned", "completing"}


def cluster_problem(env: dict[str, str] | None = None) -> str | None:
    """Why no job can run on the local Slurm cluster, or None when it takes jobs."""
    try:
        result = subprocess.run(
            ["sinfo", "-h", "-o", "%T"],
            env=env,
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"sinfo failed: {exc}"
    states = {state.rstrip("*~#") for state in result.stdout.split()}
    if result.returncode != 0 or not TAKES_JOBS & states:
        return f"no Slurm node takes jobs (sinfo: {result.stdout.strip() or result.stderr.strip()})"
    return None


def require_cluster() -> None:
    require(cluster_problem(), "As root, run .ci/slurm-up to bring up a single-node cluster.")


def require(problem: str | None, remedy: str) -> None:
    """Skips the test over a problem with the cluster (fails it under ``CI=true``)."""
    if problem is None:
        return
    helpers.unavailable(f"{problem}\n{remedy}")


def submit(script: Path, env: dict[str, str]) -> str:
    result = subprocess.run(
        ["sbatch", "--parsable", str(script)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    if result.returncode != 0:
        pytest.fail(f"sbatch failed: {result.stderr.strip()}")
    return result.stdout.strip().split(";")[0]


class Watcher:
    """Watches the running job from outside: its steps, command lines, scontrol's view."""

    def __init__(
        self,
        job_id: str,
        token: str,
        stopping: Path,
        on_stop: Callable[[], None],
        env: dict[str, str] | None = None,
    ):
        self.job_id = job_id
        self._env = env
        self._token = token.encode()
        self._stopping = stopping
        self._on_stop = on_stop
        self.steps_seen: set[str] = set()
        self.scontrol: list[str] = []
        self.cmdline_leaks: list[str] = []
        self.state = ""
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        stop_seen = False
        while not self._done.is_set():
            self._scan_cmdlines()
            self.steps_seen.update(
                command_words(["squeue", "-s", "-h", "-j", self.job_id, "-o", "%j"], self._env)
            )
            self.scontrol.append(
                command_output(["scontrol", "show", "job", "-d", self.job_id], self._env)
            )
            if not stop_seen and self._stopping.exists():
                stop_seen = True
                self._on_stop()
            time.sleep(WATCH_INTERVAL_SECONDS)

    def _scan_cmdlines(self) -> None:
        for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
            try:
                text = cmdline.read_bytes()
            except OSError:
                continue
            if self._token in text:
                shown = text.replace(self._token, b"<TOKEN>").replace(b"\0", b" ")
                self.cmdline_leaks.append(shown.decode(errors="replace")[:300])

    def wait_finished(self, timeout: float) -> None:
        wait_gone(self.job_id, timeout, self._env, before_fail=self.close)
        self.close()
        final = command_output(["scontrol", "show", "job", "-d", self.job_id], self._env)
        self.scontrol.append(final)
        self.state = next(
            (w.split("=", 1)[1] for w in final.split() if w.startswith("JobState=")), ""
        )

    def close(self) -> None:
        self._done.set()
        self._thread.join(timeout=30)


def wait_gone(
    job_id: str,
    timeout: float,
    env: dict[str, str] | None = None,
    before_fail: Callable[[], None] | None = None,
) -> None:
    """Waits until squeue no longer lists the job as pending or running; cancels it and fails
    the test after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while command_words(["squeue", "-h", "-j", job_id, "-o", "%T"], env):
        if time.monotonic() > deadline:
            subprocess.run(["scancel", job_id], env=env, check=False, timeout=30)
            if before_fail is not None:
                before_fail()
            pytest.fail(f"job {job_id} still running after {timeout:.0f}s; cancelled it")
        time.sleep(0.5)


def command_output(command: list[str], env: dict[str, str] | None = None) -> str:
    """What a Slurm command prints on stdout (nothing of its failure)."""
    return subprocess.run(
        command, env=env, capture_output=True, text=True, timeout=30, check=False
    ).stdout


def command_words(command: list[str], env: dict[str, str] | None = None) -> list[str]:
    """The words a Slurm command prints on stdout."""
    return command_output(command, env).split()
