"""One function per command: call the stages with the parsed arguments, print what they return,
give the exit code. No judgement is made here; each lives in its stage."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shlex
import shutil
import sys
from collections.abc import Iterator, Mapping, Sequence
from importlib import resources
from pathlib import Path

from .._checks.binary import collector_release
from .._checks.collector_config import check_for_graph, load_collector_config
from .._checks.tenant import TenantPolicy
from .._common.constants import COLLECTOR_DIR
from .._common.errors import (
    JobDirError,
    OtelConfigError,
    SubmitConfigError,
    TemplateError,
    Violation,
)
from .._render.job_files import marked
from .._render.rendering import (
    checked_rendering,
    render_job_files,
    render_unchecked,
    write_rendered,
)
from .._render.verdicts import (
    caught_warnings,
    example_job_dir,
    judge_file,
    judge_renderings,
    read_collector_yaml,
)
from .._step.collector_step import collector_step, collector_step_script
from .._step.drain import DrainState, append_record
from .._step.drain import drain as run_drain
from .._step.queue_place import QueueOnAnotherNode
from .._submit.config import SubmitConfig
from .._submit.driver_env import merged_driver_env
from .._submit.rules import validate_gym_telemetry
from .._submit.token import resolve_token
from .._templating.catalogue import format_version, search_path, template_set
from .._views.drain import outcome_json, outcome_text, progress_line
from .._views.mermaid import pipeline_mermaid
from .._views.report import show_report
from .._views.verdicts import origin_text, show_verdicts, warning_lines

EXIT_OK, EXIT_INVALID, EXIT_USAGE, EXIT_CANNOT_TELL, EXIT_STILL_QUEUED = 0, 1, 2, 3, 4
EXIT_OTHER_NODE = 5  # drain: the queue is in a node-local folder of another node
_REPORT_EXIT = {"complete": EXIT_OK, "incomplete": EXIT_INVALID, "cannot be told": EXIT_CANNOT_TELL}
PROG = "nemo-gym-otel"
_BUNDLED_EXAMPLE = "submit.yaml"
_JOB_FLAGS = {"benchmark_name": "--benchmark", "remote_bench_dir": "--job-dir"}
_VERSION_FLAG = {"otel.collector_version": "--collector-version"}


def report_error(error: OtelConfigError, prefix: str = "") -> None:
    for violation in error.violations:
        print(f"{PROG}: error: {prefix}{violation}", file=sys.stderr)


def usage_error(message: str) -> int:
    print(f"{PROG}: error: {message}", file=sys.stderr)
    return EXIT_USAGE


@contextlib.contextmanager
def _named_as_flags(flags: Mapping[str, str]) -> Iterator[None]:
    """An error about an API parameter names the command-line flag the user typed instead."""
    try:
        yield
    except (SubmitConfigError, TemplateError) as exc:
        if exc.path not in flags:
            raise
        raise type(exc)(flags[exc.path], exc.message) from None


def _warn(found: Sequence[Violation], flags: Mapping[str, str] = _JOB_FLAGS) -> None:
    """Warnings as the errors are printed, an API parameter named by its flag."""
    named = [Violation(flags.get(v.path, v.path), v.message) for v in found]
    for message in warning_lines(PROG, named):
        print(message, file=sys.stderr)


def render(args: argparse.Namespace) -> int:
    config = SubmitConfig.from_yaml(args.config)
    validate_gym_telemetry(config)  # rendering checks the destination and the arguments
    caught: list[Violation] = []
    with _named_as_flags(_JOB_FLAGS), caught_warnings(caught):
        text, drain, found = render_job_files(
            config, args.benchmark, args.job_dir, template_dirs=args.template_dir
        )
        # --stdout prints collector.yaml as it would be written, its last line included.
        result = (
            marked(text, drain)[0] if args.stdout else write_rendered(text, args.job_dir, drain)
        )
    _warn([*found, *caught])
    # Rendering never reads the token (the files name ${env:<token_env>}), and an unset one is
    # normal where configs are rendered: the submitting side's resolve_token and the job's
    # step require it. One that is set but would reach the backend changed is worth saying.
    if "otlp_http" in config.otel.exporters and os.environ.get(config.otel.token_env):
        try:
            resolve_token(config)
        except SubmitConfigError as exc:
            print(f"{PROG}: warning: {exc} (rendering does not need it)", file=sys.stderr)
    if args.stdout:
        sys.stdout.write(str(result))
    else:
        print(result)
    return EXIT_OK


def validate(args: argparse.Namespace) -> int:
    version = args.collector_version
    if version is None and args.collector:
        version = collector_release(args.collector)  # judge it by the binary's own line
    policy = TenantPolicy(args.token_env, args.listen_host, args.endpoint, args.allow_plain_http)
    verdicts = []
    for name in args.file:
        with _named_as_flags(_VERSION_FLAG):
            verdicts.append(
                judge_file(
                    Path(name),
                    version,
                    policy,
                    template_dirs=args.template_dir,
                    collector=args.collector,
                )
            )
    show_verdicts(verdicts, args.format, "{label}: valid", PROG, sys.stdout, sys.stderr)
    return EXIT_OK if all(verdict.valid for verdict in verdicts) else EXIT_INVALID


def graph(args: argparse.Namespace) -> int:
    """The pipeline graph as Mermaid, of a collector YAML file or of a rendering; a file whose
    token goes astray is drawn all the same (its breaches of the tenant rules are warnings),
    since the graph shows where."""
    if (args.file is None) == (args.config is None):
        return usage_error("give a collector YAML FILE or --config CONFIG, not both")
    if args.config is not None:
        if args.benchmark is None:
            return usage_error("--config needs --benchmark")
        config = SubmitConfig.from_yaml(args.config)
        job_dir = example_job_dir(config, "nemo-gym-otel-graph", args.benchmark)
        caught: list[Violation] = []
        with _named_as_flags({"benchmark_name": "--benchmark"}), caught_warnings(caught):
            rendering = render_unchecked(
                config, args.benchmark, job_dir, template_dirs=args.template_dir
            )
            parsed, found = checked_rendering(rendering)
        token_env = config.otel.token_env
    else:
        source, token_env = args.file, args.token_env
        text = read_collector_yaml(Path(args.file))
        with _named_as_flags(_VERSION_FLAG):
            parsed, line = load_collector_config(
                text, args.collector_version, source, args.template_dir
            )
        caught = []
        with caught_warnings(caught):
            breaches, found = check_for_graph(parsed, line, source, TenantPolicy(token_env))
        found = [*found, *breaches]
    _warn([*caught, *found])
    sys.stdout.write(pipeline_mermaid(parsed, token_env))
    return EXIT_OK


def templates(args: argparse.Namespace) -> int:
    lines = template_set(search_path(args.template_dir)).lines.values()
    rows = [
        {
            "line": line.name,
            "min_collector": format_version(line.collector_min),
            "max_collector": format_version(line.collector_max) if line.collector_max else None,
            "combinations": sorted(line.templates),
            "origins": {name: info.origin for name, info in sorted(line.templates.items())},
        }
        for line in lines
    ]
    if args.format == "json":
        print(json.dumps(rows, indent=2))
        return EXIT_OK
    for row in rows:
        upper = f"<{row['max_collector']}" if row["max_collector"] else "open"
        combinations = ", ".join(
            f"{name} ({origin_text(origin)})" for name, origin in row["origins"].items()
        )
        print(f"{row['line']:<10} collector >={row['min_collector']}, {upper:<10} {combinations}")
    return EXIT_OK


def env(args: argparse.Namespace) -> int:
    variables = merged_driver_env(SubmitConfig.from_yaml(args.config), args.gym_job_id)
    if args.format == "json":
        print(json.dumps(variables, indent=2, sort_keys=True))
    else:
        for name, value in variables.items():
            print(f"{name}={shlex.quote(value)}")
    return EXIT_OK


def step(args: argparse.Namespace) -> int:
    config = SubmitConfig.from_yaml(args.config)
    validate_gym_telemetry(config)
    with _named_as_flags(_JOB_FLAGS):
        if args.format == "json":
            print(
                json.dumps(collector_step(config, args.benchmark, args.job_dir).as_json(), indent=2)
            )
        else:
            sys.stdout.write(collector_step_script(config, args.benchmark, args.job_dir))
    return EXIT_OK


def _bundled_example() -> Path:
    package = __name__.rpartition(".")[0].rpartition(".")[0]
    return Path(str(resources.files(package) / "examples" / _BUNDLED_EXAMPLE))


def check(args: argparse.Namespace) -> int:
    """Every line x combination x config, rendered and checked (and put before a collector's
    own validate with --collector): a platform team's CI gate."""
    template_set_ = template_set(search_path(args.template_dir))
    lines = list(template_set_.lines.values())
    if args.collector:  # only the line of the binary's release can run on it
        with _named_as_flags({"otel.collector_version": "--collector"}):
            lines = [template_set_.line_for(collector_release(args.collector))]
    configs = [("bundled example", _bundled_example()), *((c, Path(c)) for c in args.config)]
    verdicts = [
        verdict
        for name, path in configs
        for verdict in judge_renderings(
            name, path, lines, template_dirs=args.template_dir, collector=args.collector
        )
    ]
    show_verdicts(verdicts, args.format, "ok {label}", PROG, sys.stdout, sys.stderr)
    problems = sum(not verdict.valid for verdict in verdicts)
    if problems and args.format == "text":
        print(f"{PROG}: {problems} problem(s) found", file=sys.stderr)
    return EXIT_INVALID if problems else EXIT_OK


def _no_otel_folder(job_dir: Path) -> int | None:
    """The usage error of a JOB_DIR (``report``, ``drain``) that holds no otel/ folder."""
    if (job_dir / COLLECTOR_DIR).is_dir():
        return None
    return usage_error(
        f"JOB_DIR: {job_dir} has no otel/ folder; "
        "pass the benchmark's job directory, <output_path>/<gym_job_id>/<benchmark>"
    )


def report(args: argparse.Namespace) -> int:
    job_dir = Path(args.job_dir)
    if (refused := _no_otel_folder(job_dir)) is not None:
        return refused
    log = Path(args.log) if args.log else None
    try:
        return _REPORT_EXIT[show_report(job_dir, args.format, log)]
    except JobDirError as exc:  # not 1, the verdict incomplete: no file was judged
        report_error(exc)
        return EXIT_USAGE


def drain(args: argparse.Namespace) -> int:
    job_dir = Path(args.job_dir)
    if (refused := _no_otel_folder(job_dir)) is not None:
        return refused
    terminal = sys.stderr.isatty()

    def collector() -> str:
        binary = shutil.which(args.collector)
        if binary is None:
            raise SubmitConfigError(
                "--collector",
                f"collector binary not found: {args.collector}; pass the path of a collector "
                "of the job's template line",
            )
        return binary

    def progress(state: DrainState) -> None:
        print(f"\r{progress_line(state)}\033[K", end="", file=sys.stderr, flush=True)

    try:
        result = run_drain(
            job_dir,
            collector,
            timeout_seconds=args.timeout,
            progress=progress if terminal else None,
        )
    except QueueOnAnotherNode as elsewhere:
        print(f"{PROG}: {elsewhere}", file=sys.stderr)
        return EXIT_OTHER_NODE
    ran = result.ran  # no queue folder, or the queue in memory: nothing ran, nothing to record
    if ran:
        if terminal:
            print(file=sys.stderr)
        append_record(job_dir, result)
    if args.format == "json":
        print(json.dumps(outcome_json(str(job_dir), result), indent=2))
    else:
        print(outcome_text(str(job_dir), result))
    if ran and not result.state.read:
        print(
            f"{PROG}: error: the drain's collector never reported its queue (exit status "
            f"{result.exit_status}); its log ends: {result.log_tail}",
            file=sys.stderr,
        )
    return EXIT_OK if result.empty else EXIT_STILL_QUEUED
