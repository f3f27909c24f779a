"""``nemo-gym-otel``: render, validate and check collector configs from the shell.

Exit codes: 0 success, 1 invalid input (submit config, template or collector YAML), 2 usage;
``report``: 0 complete, 1 incomplete, 3 cannot be told. A reader that closes the pipe early
(``report --json | head -1``) ends the command quietly with 141, as SIGPIPE would. Messages go
to stderr, one per problem, never as a traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import re
import shlex
import signal
import sys
import threading
import warnings
from collections.abc import Iterator, Mapping, Sequence
from importlib import resources
from pathlib import Path, PurePosixPath

from ._checks.binary import CollectorVerdict, collector_release, collector_verdict
from ._checks.collector import validate_collector_config
from ._checks.mermaid import pipeline_mermaid
from ._common.constants import COLLECTOR_DIR
from ._common.errors import (
    CollectorConfigError,
    CollectorConfigWarning,
    OtelConfigError,
    SubmitConfigError,
    TemplateError,
    Violation,
)
from ._common.text_file import read_text_file
from ._pipeline import check_rendering, render_checked, render_unchecked, write_rendered
from ._report_view import run_report
from ._step import collector_step, collector_step_script
from ._submit.config import SubmitConfig
from ._submit.driver_env import merged_driver_env
from ._submit.rules import validate_gym_telemetry
from ._submit.token import resolve_token
from ._templating.catalogue import format_version, search_path, template_set

EXIT_OK, EXIT_INVALID, EXIT_USAGE, EXIT_CANNOT_TELL = 0, 1, 2, 3
EXIT_CLOSED_PIPE = 128 + 13  # SIGPIPE's status: the reader of stdout went away
_REPORT_EXIT = {"complete": EXIT_OK, "incomplete": EXIT_INVALID, "cannot be told": EXIT_CANNOT_TELL}
PROG = "nemo-gym-otel"
_BUNDLED_EXAMPLE = "submit.yaml"
_VARIABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _report(error: OtelConfigError, prefix: str = "") -> None:
    for violation in error.violations:
        print(f"{PROG}: error: {prefix}{violation}", file=sys.stderr)


@contextlib.contextmanager
def _named_as_flags(flags: Mapping[str, str]) -> Iterator[None]:
    """An error about an API parameter names the command-line flag the user typed instead."""
    try:
        yield
    except (SubmitConfigError, TemplateError) as exc:
        if exc.path not in flags:
            raise
        raise type(exc)(flags[exc.path], exc.message) from None


_JOB_FLAGS = {"benchmark_name": "--benchmark", "remote_bench_dir": "--job-dir"}


def _warn(
    found: Sequence[Violation], prefix: str = "", flags: Mapping[str, str] = _JOB_FLAGS
) -> None:
    """Warnings as the errors are printed, an API parameter named by its flag."""
    for violation in found:
        path = flags.get(violation.path, violation.path)
        print(f"{PROG}: warning: {prefix}{Violation(path, violation.message)}", file=sys.stderr)


def _cmd_render(args: argparse.Namespace) -> int:
    config = SubmitConfig.from_yaml(args.config)
    validate_gym_telemetry(config)  # rendering checks the destination and the arguments
    caught: list[Violation] = []
    with _named_as_flags(_JOB_FLAGS), _caught_warnings(caught):
        text, found = render_checked(
            config, args.benchmark, args.job_dir, template_dirs=args.template_dir
        )
        result = text if args.stdout else write_rendered(text, args.job_dir)
    _warn([*found, *caught])
    if "otlp_http" in config.otel.exporters:
        try:
            resolve_token(config)
        except SubmitConfigError as exc:
            print(f"{PROG}: warning: {exc} (rendering does not need it)", file=sys.stderr)
    if args.stdout:
        sys.stdout.write(str(result))
    else:
        print(result)
    return EXIT_OK


@dataclasses.dataclass(frozen=True)
class _Judged:
    """One config judged: what it is, the package's violations, the collector's verdict."""

    subject: dict[str, str]  # {"file": ...} or {"config": ..., "line": ..., "combination": ...,
    # "origin": "built-in" or the override folder the template came from}
    violations: tuple[Violation, ...]
    collector: CollectorVerdict | None
    warnings: tuple[Violation, ...] = ()

    @property
    def label(self) -> str:
        s = self.subject
        if "file" in s:
            return s["file"]
        if "line" not in s:  # a submit config that did not load
            return s["config"]
        return f"{s['config']}: {s['line']}/{s['combination']}"

    def prefix(self, several: bool) -> str:
        """A file's violations name their own paths in it, and the file when several are
        judged; a rendering's say which it is."""
        if "file" not in self.subject:
            return f"{self.label}: "
        return f"{self.label}: " if several else ""

    @property
    def valid(self) -> bool:
        return not self.violations and (self.collector is None or self.collector.valid)

    def as_json(self) -> dict[str, object]:
        collector = None
        if self.collector is not None:
            collector = dataclasses.asdict(self.collector)
        return {
            **self.subject,
            "valid": self.valid,
            "violations": [{"path": v.path, "message": v.message} for v in self.violations],
            "warnings": [{"path": v.path, "message": v.message} for v in self.warnings],
            "collector": collector,
        }


def _emit(results: list[_Judged], output: str, ok_line: str) -> int:
    """Print the results (text: errors on stderr, ``ok_line`` per valid one; json: one list on
    stdout) and return the exit code."""
    if output == "json":
        print(json.dumps([result.as_json() for result in results], indent=2))
    else:
        several = len(results) > 1
        for result in results:
            prefix = result.prefix(several)
            for violation in result.violations:
                # A YAML syntax error already names the file (``a.yaml:12``).
                shown = "" if violation.path.startswith(result.label) else prefix
                print(f"{PROG}: error: {shown}{violation}", file=sys.stderr)
            _warn(result.warnings, f"{result.label}: ")  # a warning always says where
            verdict = result.collector
            if verdict is not None and not verdict.valid:
                print(
                    f"{PROG}: error: {result.label}: collector {verdict.binary}: {verdict.message}",
                    file=sys.stderr,
                )
            if result.valid:
                suffix = "" if verdict is None else f" (collector {verdict.binary}: valid)"
                origin = result.subject.get("origin")
                suffix = f" ({_origin(origin)})" + suffix if origin else suffix
                print(ok_line.format(label=result.label) + suffix)
    return EXIT_OK if all(result.valid for result in results) else EXIT_INVALID


def _origin(origin: str) -> str:
    return origin if origin == "built-in" else f"override {origin}"


def _read_text(path: Path) -> str:
    return read_text_file(
        str(path), lambda where, message: CollectorConfigError([Violation(where, message)])
    )


@contextlib.contextmanager
def _caught_warnings(found: list[Violation]) -> Iterator[None]:
    """Collect each :class:`CollectorConfigWarning` raised meanwhile (a deprecated name) into
    ``found``, printed with the rest; the verdict and the exit code stay those of the errors."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", CollectorConfigWarning)
        try:
            yield
        finally:
            for item in caught:
                if isinstance(item.message, CollectorConfigWarning):
                    found.append(item.message.violation)
                else:
                    warnings.showwarning(item.message, item.category, item.filename, item.lineno)


def _cmd_validate(args: argparse.Namespace) -> int:
    version = args.collector_version
    if version is None and args.collector:
        version = collector_release(args.collector)  # judge it by the binary's own line
    results = []
    for name in args.file:
        path = Path(name)
        violations: tuple[Violation, ...] = ()
        found: list[Violation] = []
        text = None
        try:
            text = _read_text(path)
            with (
                _named_as_flags({"otel.collector_version": "--collector-version"}),
                _caught_warnings(found),
            ):
                validate_collector_config(
                    text,
                    version,
                    source=str(path),
                    template_dirs=args.template_dir,
                    token_env=args.token_env,
                    listen_host=args.listen_host,
                    endpoint=args.endpoint,
                    allow_plain_http=args.allow_plain_http,
                )
        except CollectorConfigError as exc:
            violations = tuple(exc.violations)
        verdict = None
        if args.collector and text is not None:
            verdict = collector_verdict(args.collector, text)
        results.append(_Judged({"file": str(path)}, violations, verdict, tuple(found)))
    return _emit(results, args.format, "{label}: valid")


def _cmd_graph(args: argparse.Namespace) -> int:
    """The pipeline graph as Mermaid, of a collector YAML file or of a rendering."""
    from ._common.yaml_loader import parse_yaml

    if (args.file is None) == (args.config is None):
        print(
            f"{PROG}: error: give a collector YAML FILE or --config CONFIG, not both",
            file=sys.stderr,
        )
        return EXIT_USAGE
    if args.config is not None:
        if args.benchmark is None:
            print(f"{PROG}: error: --config needs --benchmark", file=sys.stderr)
            return EXIT_USAGE
        config = SubmitConfig.from_yaml(args.config)
        job_dir = _example_job_dir(config, "nemo-gym-otel-graph", args.benchmark)
        caught: list[Violation] = []
        with _named_as_flags({"benchmark_name": "--benchmark"}), _caught_warnings(caught):
            text, found = render_checked(
                config, args.benchmark, job_dir, template_dirs=args.template_dir
            )
        _warn([*found, *caught])
        source = f"rendered {args.config}"
    else:
        source = args.file
        text = _read_text(Path(args.file))
        caught = []
        with (
            _named_as_flags({"otel.collector_version": "--collector-version"}),
            _caught_warnings(caught),
        ):
            validate_collector_config(
                text,
                args.collector_version,
                source=source,
                template_dirs=args.template_dir,
                tenant_rules=False,
            )
        _warn(caught)
        try:  # drawn all the same: the graph shows where the token goes astray
            with _caught_warnings([]):  # said once, above
                validate_collector_config(
                    text, args.collector_version, source=source, template_dirs=args.template_dir
                )
        except CollectorConfigError as exc:
            for violation in exc.violations:
                print(f"{PROG}: warning: {violation}", file=sys.stderr)
    parsed = parse_yaml(
        text, source, lambda path, message: CollectorConfigError([Violation(path, message)], source)
    )
    sys.stdout.write(pipeline_mermaid(parsed))
    return EXIT_OK


def _example_job_dir(config: SubmitConfig, gym_job_id: str, benchmark: object) -> str:
    """A job directory of the seed's shape for a rendering no job will use (graph, check)."""
    output_path = str(PurePosixPath(config.job.output_path))
    return f"{output_path.rstrip('/')}/{gym_job_id}/{benchmark}"


def _variable_name(text: str) -> str:
    if not _VARIABLE_NAME.fullmatch(text):
        raise argparse.ArgumentTypeError("must be an environment variable name, e.g. OTEL_TOKEN")
    return text


def _cmd_templates(args: argparse.Namespace) -> int:
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
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        for row in rows:
            upper = f"<{row['max_collector']}" if row["max_collector"] else "open"
            combinations = ", ".join(
                f"{name} ({_origin(origin)})" for name, origin in row["origins"].items()
            )
            print(
                f"{row['line']:<10} collector >={row['min_collector']}, {upper:<10} {combinations}"
            )
    return EXIT_OK


def _cmd_env(args: argparse.Namespace) -> int:
    env = merged_driver_env(SubmitConfig.from_yaml(args.config), args.gym_job_id)
    if args.json:
        print(json.dumps(env, indent=2, sort_keys=True))
    else:
        for name, value in env.items():
            print(f"{name}={shlex.quote(value)}")
    return EXIT_OK


def _cmd_step(args: argparse.Namespace) -> int:
    config = SubmitConfig.from_yaml(args.config)
    validate_gym_telemetry(config)
    with _named_as_flags({"benchmark_name": "--benchmark", "remote_bench_dir": "--job-dir"}):
        if args.json:
            step = collector_step(config, args.benchmark, args.job_dir)
            print(json.dumps(step.as_json(), indent=2))
        else:
            sys.stdout.write(collector_step_script(config, args.benchmark, args.job_dir))
    return EXIT_OK


def _bundled_example() -> Path:
    return Path(str(resources.files(__name__.rpartition(".")[0]) / "examples" / _BUNDLED_EXAMPLE))


def _judge_rendering(
    variant: SubmitConfig,
    benchmark: str,
    job_dir: str,
    subject: dict[str, str],
    args: argparse.Namespace,
) -> _Judged:
    try:
        rendering = render_unchecked(variant, benchmark, job_dir, template_dirs=args.template_dir)
    except OtelConfigError as exc:
        return _Judged(subject, tuple(exc.violations), None)
    subject = {**subject, "origin": rendering.origin}
    violations: tuple[Violation, ...] = ()
    found: list[Violation] = []
    try:
        with _caught_warnings(found):
            found += check_rendering(rendering)
    except OtelConfigError as exc:
        violations = tuple(exc.violations)
    verdict = collector_verdict(args.collector, rendering.text) if args.collector else None
    return _Judged(subject, violations, verdict, tuple(found))


def _cmd_check(args: argparse.Namespace) -> int:
    """Every line x combination x config, rendered and checked (and put before a collector's
    own validate with --collector): a platform team's CI gate."""
    templates = template_set(search_path(args.template_dir))
    lines = list(templates.lines.values())
    if args.collector:  # only the line of the binary's release can run on it
        with _named_as_flags({"otel.collector_version": "--collector"}):
            lines = [templates.line_for(collector_release(args.collector))]
    configs = [("bundled example", _bundled_example()), *((c, Path(c)) for c in args.config)]
    results: list[_Judged] = []
    for name, config_path in configs:
        try:
            config = SubmitConfig.from_yaml(config_path)
        except OtelConfigError as exc:
            results.append(_Judged({"config": name}, tuple(exc.violations), None))
            continue
        benchmark = next(iter(config.driver.benchmarks))
        job_dir = _example_job_dir(config, "nemo-gym-otel-check", benchmark)
        for line in lines:
            for combination in sorted(line.templates):
                otel = dataclasses.replace(
                    config.otel,
                    exporters=tuple(combination.split("+")),
                    collector_version=format_version(line.collector_min),
                )
                variant = dataclasses.replace(config, otel=otel)
                subject = {"config": name, "line": line.name, "combination": combination}
                results.append(_judge_rendering(variant, benchmark, job_dir, subject, args))
    code = _emit(results, args.format, "ok {label}")
    problems = sum(not result.valid for result in results)
    if problems and args.format == "text":
        print(f"{PROG}: {problems} problem(s) found", file=sys.stderr)
    return code


def _cmd_report(args: argparse.Namespace) -> int:
    job_dir = Path(args.job_dir)
    if not (job_dir / COLLECTOR_DIR).is_dir():
        print(
            f"{PROG}: error: JOB_DIR: {job_dir} has no otel/ folder; "
            "pass the benchmark's job directory, <output_path>/<gym_job_id>/<benchmark>",
            file=sys.stderr,
        )
        return EXIT_USAGE
    log = Path(args.log) if args.log else None
    return _REPORT_EXIT[run_report(job_dir, args.json, log)]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Render and check the OpenTelemetry Collector config of NeMo Gym jobs.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def template_dirs(sub: argparse.ArgumentParser) -> None:
        sub.add_argument(
            "--template-dir",
            action="append",
            metavar="DIR",
            help="override templates, searched before the built-in ones (repeatable)",
        )

    def judged_by_collector(sub: argparse.ArgumentParser) -> None:
        sub.add_argument(
            "--collector",
            metavar="BINARY",
            help="also run this collector's own validate on every config (placeholder values "
            "for the job's environment) and report its verdict",
        )
        sub.add_argument(
            "--format",
            choices=("text", "json"),
            default="text",
            help="json: one object per config with its violations and the collector's verdict",
        )

    def one_job(sub: argparse.ArgumentParser) -> None:
        """The submit config, benchmark and job directory that name one benchmark job."""
        sub.add_argument("config", help="submit config (YAML)")
        sub.add_argument("--benchmark", required=True, help="one of driver.benchmarks")
        sub.add_argument(
            "--job-dir",
            required=True,
            help="absolute job directory, <output_path>/<gym_job_id>/<benchmark>",
        )

    render = commands.add_parser(
        "render", help="write <job dir>/otel/collector.yaml for one benchmark"
    )
    one_job(render)
    render.add_argument(
        "--stdout", action="store_true", help="print the YAML instead of writing it"
    )
    template_dirs(render)
    render.set_defaults(run=_cmd_render)

    validate = commands.add_parser("validate", help="check collector YAML files")
    validate.add_argument("file", nargs="+")
    validate.add_argument(
        "--collector-version", metavar="V", help="release the file is for (default: newest line)"
    )
    template_dirs(validate)
    validate.add_argument(
        "--token-env",
        default="OTEL_TOKEN",
        type=_variable_name,
        metavar="NAME",
        help="variable holding the ingest token, for the token and tenant rules (default: OTEL_TOKEN)",
    )
    validate.add_argument(
        "--listen-host",
        default="localhost",
        metavar="HOST",
        help="the widest address a listener may bind (default: localhost)",
    )
    validate.add_argument(
        "--endpoint",
        metavar="URL",
        help="the backend's URL: OTLP/HTTP exporters may send the token only there",
    )
    validate.add_argument(
        "--allow-plain-http",
        action="store_true",
        help="let OTLP/HTTP exporters send the token over plain http:// off the node "
        "(otel.allow_plain_http: a proxy on the node's private network)",
    )
    judged_by_collector(validate)
    validate.set_defaults(run=_cmd_validate)

    graph = commands.add_parser(
        "graph", help="print the pipeline graph as Mermaid, the tenant path marked"
    )
    graph.add_argument("file", nargs="?", help="a collector YAML file")
    graph.add_argument("--config", help="a submit config to render instead (with --benchmark)")
    graph.add_argument("--benchmark", help="one of driver.benchmarks, with --config")
    graph.add_argument(
        "--collector-version", metavar="V", help="release the file is for (default: newest line)"
    )
    template_dirs(graph)
    graph.set_defaults(run=_cmd_graph)

    listing = commands.add_parser("templates", help="list template lines and combinations")
    listing.add_argument("--json", action="store_true")
    template_dirs(listing)
    listing.set_defaults(run=_cmd_templates)

    env = commands.add_parser("env", help="print the driver's environment")
    env.add_argument("config")
    env.add_argument("--gym-job-id", required=True)
    env.add_argument("--json", action="store_true")
    env.set_defaults(run=_cmd_env)

    step = commands.add_parser(
        "step", help="print the bash fragment that runs the collector as a Slurm job step"
    )
    one_job(step)
    step.add_argument("--json", action="store_true", help="print the step as JSON instead")
    step.set_defaults(run=_cmd_step)

    check = commands.add_parser("check", help="render and check every line and combination")
    check.add_argument(
        "config", nargs="*", help="submit configs to check besides the bundled example"
    )
    template_dirs(check)
    judged_by_collector(check)
    check.set_defaults(run=_cmd_check)

    report = commands.add_parser(
        "report", help="what the job's collector received and delivered (otel.delivery_report)"
    )
    report.add_argument("job_dir", metavar="JOB_DIR", help="the benchmark's job directory")
    report.add_argument("--json", action="store_true", help="a JSON document for scripts")
    report.add_argument(
        "--log",
        metavar="FILE",
        help="the collector's log (default: JOB_DIR/otel/collector.log, where the job step "
        "writes it), read for what happened after its last reading",
    )
    report.set_defaults(run=_cmd_report)
    return parser


class _Terminated(BaseException):
    """SIGTERM as an exception, so a write in progress removes its temporary file."""


def _terminate(signum: int, frame: object) -> None:
    raise _Terminated


def _quiet_stdout() -> None:
    """The reader is gone: send what is left of stdout nowhere, so the interpreter's own flush
    at exit does not complain about the closed pipe."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    in_main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _terminate) if in_main_thread else None
    try:
        code = int(args.run(args))
        sys.stdout.flush()  # a closed pipe shows here, while it can still be handled
        return code
    except BrokenPipeError:
        _quiet_stdout()
        return EXIT_CLOSED_PIPE
    except _Terminated:
        return 128 + signal.SIGTERM
    except OtelConfigError as exc:
        _report(exc)
        return EXIT_INVALID
    except OSError as exc:
        print(f"{PROG}: error: {exc.filename or ''}: {exc.strerror}", file=sys.stderr)
        return EXIT_INVALID
    except KeyboardInterrupt:
        return 130
    finally:
        if in_main_thread:
            signal.signal(signal.SIGTERM, previous)


if __name__ == "__main__":
    sys.exit(main())
