"""The job directory: ``<job.output_path>/<gym_job_id>/<benchmark>``, nothing else.

The executor builds it so (the seed's construction), and two of the job's resource attributes
are read back from it: ``benchmark`` must be its last part, and ``run_id`` is its parent's name
(the gym job id). A directory of another shape would stamp the wrong benchmark's data with this
benchmark's name, or every series with an empty ``run_id``, and nothing downstream could tell.
A directory outside ``job.output_path`` works, but is not where the job's other output is: a
warning. The collector reads its config through ``--config=file:<job dir>/otel/collector.yaml``
and the step's shell runs that command line: a character either cannot carry is refused here,
with the reason.
"""

from __future__ import annotations

from pathlib import PurePosixPath

from .._common.characters import invalid_character, prometheus_unreadable
from .._common.errors import SubmitConfigError, Violation
from .config import SubmitConfig
from .rules import benchmark_folder

JOB_DIR_KEY = "remote_bench_dir"  # the API parameter; the CLI names it --job-dir


def _refuse(reason: str) -> SubmitConfigError:
    return SubmitConfigError(
        JOB_DIR_KEY, f"{reason}; pass <job.output_path>/<gym_job_id>/<benchmark>"
    )


def _unusable_character(path: str) -> str | None:
    """Why the collector's config URI or the step's shell cannot take ``path``, or None.

    Control characters and lone surrogates (a line break, tab, DEL, C1) end a command line or a
    YAML value; Unicode's line and paragraph separators and its noncharacters U+FFFE and U+FFFF
    break the Prometheus receiver's YAML. The config URI takes anything else after ``file:`` (the
    provider reads the rest as a path, ``:`` included: tests/test_job_dir.py starts the binary on
    such folders), and the step quotes every word for the shell."""
    bad = invalid_character(path)
    if bad is not None:
        return (
            f"contains the control character U+{ord(bad):04X}, which neither the step's command "
            "line nor the collector's config can carry"
        )
    bad = prometheus_unreadable(path)
    if bad is not None:
        return (
            f"contains U+{ord(bad):04X}, which the collector's Prometheus receiver cannot read back "
            "(it rewrites its scrape config, which names files in the job directory, as YAML, "
            "where this is a line break or not allowed)"
        )
    return None


def check_job_dir(
    config: SubmitConfig, benchmark_name: str, remote_bench_dir: str
) -> PurePosixPath:
    """``remote_bench_dir`` as a path, or an error naming it and what is wrong (never its text:
    a path can hold anything the user typed)."""
    bench_dir = PurePosixPath(remote_bench_dir)
    if not bench_dir.is_absolute():
        raise SubmitConfigError(
            JOB_DIR_KEY,
            "must be an absolute path: the collector runs in the job's working directory, not the submitter's",
        )
    if {".", ".."} & set(remote_bench_dir.split("/")):
        # PurePosixPath drops "." and keeps "..", so the parent would not be the run's folder.
        raise _refuse(
            "must not contain '.' or '..' segments: run_id is the name of the job directory's parent"
        )
    unusable = _unusable_character(remote_bench_dir)
    if unusable is not None:
        raise _refuse(unusable)
    if config.otel.container is not None and {",", ":"} & set(remote_bench_dir):
        raise _refuse(
            "contains ',' or ':', which Pyxis's --container-mounts reads as separators (of mounts, "
            "and of source and target), so the collector's container would not see its job "
            "directory; pick a job.output_path and run id without them, or set otel.container: null"
        )
    if bench_dir.name != benchmark_folder(benchmark_name):
        raise _refuse(
            "must end in the benchmark being rendered (--benchmark; a '/' in its name written "
            "'_'): the collector would stamp this benchmark's name on the data of another "
            "benchmark's folder"
        )
    if not bench_dir.parent.name:
        raise _refuse(
            "has no gym job id before the benchmark, so the run_id attribute (the name of the "
            "job directory's parent) would be empty"
        )
    return bench_dir


def job_dir_warnings(config: SubmitConfig, bench_dir: PurePosixPath) -> list[Violation]:
    """A job directory outside ``job.output_path`` works, but is not where the executor puts the
    job's output; it is said, not refused (a test run, a scratch copy)."""
    output_path = PurePosixPath(config.job.output_path)
    if bench_dir.parent.parent == output_path:
        return []
    return [
        Violation(
            JOB_DIR_KEY,
            "is not <job.output_path>/<gym_job_id>/<benchmark>: the collector's files land "
            "outside job.output_path, away from the job's other output",
        )
    ]
