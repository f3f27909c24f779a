"""The job step's writer of ``collector.log`` (``_step/bounded_log.py``), run in real bash with
the node's coreutils: the functions of the rendered fragment, fed by real processes through its
pipe. The whole step, with the real collector on Slurm, is in ``tests/slurm/test_slurm_job.py``
(``test_a_chatty_collector_keeps_its_log_within_its_bound``).
"""

from __future__ import annotations

import random
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from support import helpers

from nemo_gym.orchestration.executors.otel import SubmitConfig, collector_step_script
from nemo_gym.orchestration.executors.otel._job_dir.collector_log import read_collector_log
from nemo_gym.orchestration.executors.otel._step.bounded_log import (
    TAIL_NOTE_PREFIX,
    dropped_bytes,
    log_parts,
)

HEAD = 1000
CHUNK = 4000
# A producer that writes its lines one write each, as the collector logs: ``argv[1]`` lines of
# random lengths from the seed ``argv[2]``.
PRODUCER = """
import os, random, sys
rng = random.Random(int(sys.argv[2]))
for number in range(int(sys.argv[1])):
    os.write(1, f"{number:06d} {'x' * rng.randrange(0, 120)}\\n".encode())
"""


def _stream(lines: int, seed: int) -> bytes:
    rng = random.Random(seed)
    return b"".join(f"{n:06d} {'x' * rng.randrange(0, 120)}\n".encode() for n in range(lines))


def _run(example_mapping: dict, job_dir: Path, body: str) -> subprocess.CompletedProcess[str]:
    """``body`` after the rendered fragment, with the log's bound set to HEAD and CHUNK."""
    fragment = collector_step_script(SubmitConfig.from_dict(example_mapping), "aime25", job_dir)
    (job_dir / "otel").mkdir(parents=True, exist_ok=True)
    script = (
        f"{fragment}\n_otel_collector_log_head={HEAD} _otel_collector_log_chunk={CHUNK}\n{body}"
    )
    return subprocess.run(
        ["bash", "-c", script],
        cwd=job_dir,
        env=helpers.cli_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )


def _produce(lines: int, seed: int) -> str:
    """Bash: the producer, launched as the step launches its processes, waited for, and the
    writer's end."""
    return f"""
_otel_collector_log_open
{sys.executable} -c {shlex.quote(PRODUCER)} {lines} {seed} >&"$_otel_collector_log_fd" 2>&1 &
producer=$!
_otel_collector_log_close
wait "$producer" || exit 3
writer=$_otel_collector_log_writer_pid
_otel_collector_log_end
if kill -0 "$writer" 2>/dev/null; then exit 4; fi  # the end waited for the writer to exit
"""


def _payload(path: Path) -> bytes:
    """A tail file's bytes of the log: without its note."""
    data = path.read_bytes()
    first, _, rest = data.partition(b"\n")
    assert first.startswith(TAIL_NOTE_PREFIX.encode()), first
    return rest


@pytest.mark.parametrize("lines", [10, 2000])
def test_the_log_keeps_its_first_bytes_and_its_newest(
    example_mapping: dict, tmp_path: Path, lines: int
) -> None:
    """The first HEAD bytes in collector.log, then the newest in the two tails, the older
    holding CHUNK; what the older tail's note says was dropped is exactly the gap."""
    job_dir = tmp_path / "aime25"
    stream = _stream(lines, seed=lines)
    result = _run(example_mapping, job_dir, _produce(lines, seed=lines))
    assert result.returncode == 0, result.stderr
    head, older, tail = log_parts(job_dir / "otel" / "collector.log")
    if len(stream) <= HEAD:
        assert head.read_bytes() == stream
        assert not older.exists() and not tail.exists()
        log = read_collector_log(head)
        assert log is not None and log.dropped_bytes == 0 and log.cited() == "collector.log"
        return
    assert head.read_bytes() == stream[:HEAD]
    kept = _payload(older) + _payload(tail)
    assert len(_payload(older)) == CHUNK and 0 < len(_payload(tail)) <= CHUNK
    assert stream.endswith(kept)
    gap = len(stream) - HEAD - len(kept)
    assert gap > 0
    assert dropped_bytes(older.read_text("utf-8").splitlines()[0]) == gap
    log = read_collector_log(head)
    assert log is not None and log.dropped_bytes == gap
    assert f"dropped {gap} bytes" in log.cited()
    last = _run(example_mapping, job_dir, "_otel_collector_last_log_line")
    assert last.stdout == stream.decode().splitlines()[-1]


def test_a_second_start_goes_on_in_the_first_ones_tail(
    example_mapping: dict, tmp_path: Path
) -> None:
    """A requeue's writer finds the earlier attempt's tail: it fills it up to CHUNK before it
    turns, and the dropped figure counts both attempts' bytes."""
    job_dir = tmp_path / "aime25"
    first, second = _stream(400, seed=1), _stream(300, seed=2)
    for lines, seed in ((400, 1), (300, 2)):
        result = _run(example_mapping, job_dir, _produce(lines, seed))
        assert result.returncode == 0, result.stderr
    stream = first + second
    head, older, tail = log_parts(job_dir / "otel" / "collector.log")
    assert head.read_bytes() == stream[:HEAD]
    kept = _payload(older) + _payload(tail)
    assert stream.endswith(kept)
    log = read_collector_log(head)
    assert log is not None and log.dropped_bytes == len(stream) - HEAD - len(kept)


def test_the_writer_outlasts_a_term_and_never_holds_its_producer(
    example_mapping: dict, tmp_path: Path
) -> None:
    """A TERM to the writer (a job's scancel signals every process of the batch step) does not
    end it, and where nothing can be written (the job directory gone) it still reads all its
    producer writes: 256 KiB, 4 times what a pipe holds, so a reader that stopped would hold
    the producer (and the test's timeout would end it)."""
    job_dir = tmp_path / "aime25"
    body = f"""
_otel_collector_log_open
ignores_term() {{ local mask; mask=$(awk '/^SigIgn:/ {{ print $2 }}' "/proc/$1/status"); (( 16#$mask & 16#4000 )); }}
until ignores_term "$_otel_collector_log_writer_pid"; do sleep 0.01; done  # the writer runs
kill -TERM "$_otel_collector_log_writer_pid"
rm -rf -- {shlex.quote(str(job_dir / "otel"))}
head -c {256 * 1024} /dev/zero >&"$_otel_collector_log_fd" &
producer=$!
_otel_collector_log_close
wait "$producer" || exit 3
writer=$_otel_collector_log_writer_pid
_otel_collector_log_end
if kill -0 "$writer" 2>/dev/null; then exit 4; fi
echo ended
"""
    result = _run(example_mapping, job_dir, body)
    assert (result.returncode, result.stdout) == (0, "ended\n"), result.stderr
    assert not (job_dir / "otel").exists()


def test_the_steps_own_lines_keep_their_place(example_mapping: dict, tmp_path: Path) -> None:
    """While the shell holds the pipe its lines go through it, after what the processes printed
    before them; after, they go to the newest part of the log. The last line before the start's
    own line about an exit is what the stop quotes, whatever followed it."""
    job_dir = tmp_path / "aime25"
    body = f"""
_otel_collector_log_open
printf 'Error: the collector says why\\n' >&"$_otel_collector_log_fd"
_otel_collector_log_line "the collector exited (status 1) before it was healthy"
printf 'sender: Shutdown complete.\\n' >&"$_otel_collector_log_fd"
{sys.executable} -c {shlex.quote(PRODUCER)} 300 7 >&"$_otel_collector_log_fd"
_otel_collector_log_end
_otel_collector_log_line "after the end"
printf '%s\\n' "$(_otel_collector_last_log_line)"
_otel_collector_last_log_line "nemo-gym-otel: the collector exited (status 1) before it was healthy"
"""
    result = _run(example_mapping, job_dir, body)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "nemo-gym-otel: after the end",
        "Error: the collector says why",
    ]
    head, _, tail = log_parts(job_dir / "otel" / "collector.log")
    assert head.read_text("utf-8").startswith(
        "Error: the collector says why\n"
        "nemo-gym-otel: the collector exited (status 1) before it was healthy\n"
        "sender: Shutdown complete.\n000000 "
    )
    assert tail.read_text("utf-8").endswith("\nnemo-gym-otel: after the end\n")


def test_without_a_log_the_last_line_says_so(example_mapping: dict, tmp_path: Path) -> None:
    job_dir = tmp_path / "aime25"
    result = _run(example_mapping, job_dir, "_otel_collector_last_log_line")
    assert (result.returncode, result.stdout) == (0, "(no log)"), result.stderr


def test_a_signal_to_the_writer_is_ignored_by_its_copies(
    example_mapping: dict, tmp_path: Path
) -> None:
    """The writer's own processes (head, tee, wc) inherit its ignored TERM: a TERM to each of
    them and to the writer while a producer writes loses nothing."""
    job_dir = tmp_path / "aime25"
    stream = _stream(3000, seed=3)
    body = f"""
_otel_collector_log_open
{sys.executable} -c {shlex.quote(PRODUCER)} 3000 3 >&"$_otel_collector_log_fd" 2>&1 &
producer=$!
_otel_collector_log_close
until [[ -s {shlex.quote(str(job_dir / "otel" / "collector.log"))} ]]; do sleep 0.01; done  # copying
term_all() {{ local child; for child in $(pgrep -P "$1"); do term_all "$child"; done; kill -TERM "$1"; }}
term_all "$_otel_collector_log_writer_pid" 2>/dev/null || :
wait "$producer" || exit 3
_otel_collector_log_end
"""
    result = _run(example_mapping, job_dir, body)
    assert result.returncode == 0, result.stderr
    head, older, tail = log_parts(job_dir / "otel" / "collector.log")
    assert head.read_bytes() == stream[:HEAD]
    assert stream.endswith(_payload(older) + _payload(tail))
