"""``nemo-gym-otel``: render, validate and check collector configs from the shell.

Exit codes: 0 success, 1 invalid input (submit config, template or collector YAML), 2 usage.
Messages go to stderr, one per problem, never as a traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import re
import shlex
import signal
import sys
import threading
import warnings
from collections.abc import Iterator, Mapping, Sequence
from importlib import resources
from pathlib import Path

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
from ._pipeline import (
    check_rendering,
    render_collector_config,
    render_unchecked,
    write_collector_config,
)
from ._report_view import run_report
from ._step import collector_step, collector_step_script
from ._submit.config import SubmitConfig
from ._submit.driver_env import merged_driver_env
from ._submit.rules import validate_gym_telemetry
from ._submit.token import resolve_token
from ._templating.catalogue import format_version, search_path, template_set

EXIT_OK, EXIT_INVALID, EXIT_USAGE = 0, 1, 2
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


def _cmd_render(args: argparse.Namespace) -> int:
    config = SubmitConfig.from_yaml(args.config)
    validate_gym_telemetry(config)  # rendering checks the destination and the arguments
    output = render_collector_config if args.stdout else write_collector_config
    with _named_as_flags({"benchmark_name": "--benchmark", "remote_bench_dir": "--job-dir"}):
        result = output(config, args.benchmark, args.job_dir, template_dirs=args.template_dir)
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

    subject: dict[str, str]  # {"file": ...} or {"config": ..., "line": ..., "combination": ...}
    violations: tuple[Violation, ...]
    collector: CollectorVerdict | None

    @property
    def label(self) -> str:
        s = self.subject
        if "file" in s:
            return s["file"]
        if "line" not in s:  # a submit config that did not load
            return s["config"]
        return f"{s['config']}: {s['line']}/{s['combination']}"

    @property
    def error_prefix(self) -> str:
        """A file's violations name their own paths in it; a rendering's say which it is."""
        return "" if "file" in self.subject else f"{self.label}: "

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
            "collector": collector,
        }


def _emit(results: list[_Judged], output: str, ok_line: str) -> int:
    """Print the results (text: errors on stderr, ``ok_line`` per valid one; json: one list on
    stdout) and return the exit code."""
    if output == "json":
        print(json.dumps([result.as_json() for result in results], indent=2))
    else:
        for result in results:
            for violation in result.violations:
                print(f"{PROG}: error: {result.error_prefix}{violation}", file=sys.stderr)
            verdict = result.collector
            if verdict is not None and not verdict.valid:
                print(
                    f"{PROG}: error: {result.label}: collector {verdict.binary}: {verdict.message}",
                    file=sys.stderr,
                )
            if result.valid:
                suffix = "" if verdict is None else f" (collector {verdict.binary}: valid)"
                print(ok_line.format(label=result.label) + suffix)
    return EXIT_OK if all(result.valid for result in results) else EXIT_INVALID


def _read_text(path: Path) -> str:
    return read_text_file(
        str(path), lambda where, message: CollectorConfigError([Violation(where, message)])
    )


@contextlib.contextmanager
def _printed_warnings(path: Path) -> Iterator[None]:
    """Print each :class:`CollectorConfigWarning` (a deprecated name) as one line naming the file;
    the verdict and the exit code stay those of the errors."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", CollectorConfigWarning)
        try:
            yield
        finally:
            for item in caught:
                if isinstance(item.message, CollectorConfigWarning):
                    print(f"{PROG}: warning: {path}: {item.message}", file=sys.stderr)
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
        text = None
        try:
            text = _read_text(path)
            with (
                _named_as_flags({"otel.collector_version": "--collector-version"}),
                _printed_warnings(path),
            ):
                validate_collector_config(
                    text,
                    version,
                    source=str(path),
                    template_dirs=args.template_dir,
                    token_env=args.token_env,
                    listen_host=args.listen_host,
                    endpoint=args.endpoint,
                )
        except CollectorConfigError as exc:
            violations = tuple(exc.violations)
        verdict = None
        if args.collector and text is not None:
            verdict = collector_verdict(args.collector, text)
        results.append(_Judged({"file": str(path)}, violations, verdict))
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
        job_dir = f"/nemo-gym-otel-graph/{args.benchmark}"
        with _named_as_flags({"benchmark_name": "--benchmark"}):
            text = render_collector_config(
                config, args.benchmark, job_dir, template_dirs=args.template_dir
            )
        source = f"rendered {args.config}"
    else:
        source = args.file
        text = _read_text(Path(args.file))
        with _named_as_flags({"otel.collector_version": "--collector-version"}):
            validate_collector_config(
                text,
                args.collector_version,
                source=source,
                template_dirs=args.template_dir,
                tenant_rules=False,
            )
        try:  # drawn all the same: the graph shows where the token goes astray
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
        }
        for line in lines
    ]
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        for row in rows:
            upper = f"<{row['max_collector']}" if row["max_collector"] else "open"
            print(
                f"{row['line']:<10} collector >={row['min_collector']}, {upper:<10} {', '.join(row['combinations'])}"
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
    violations: tuple[Violation, ...] = ()
    try:
        check_rendering(rendering)
    except OtelConfigError as exc:
        violations = tuple(exc.violations)
    verdict = collector_verdict(args.collector, rendering.text) if args.collector else None
    return _Judged(subject, violations, verdict)


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
        job_dir = f"/nemo-gym-otel-check/{config_path.stem}/{benchmark}"
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
    return EXIT_OK if run_report(job_dir, args.json) else EXIT_INVALID


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
    report.set_defaults(run=_cmd_report)
    return parser


class _Terminated(BaseException):
    """SIGTERM as an exception, so a write in progress removes its temporary file."""


def _terminate(signum: int, frame: object) -> None:
    raise _Terminated


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    in_main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _terminate) if in_main_thread else None
    try:
        return int(args.run(args))
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
