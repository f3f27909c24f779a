"""``nemo-gym-otel``: render, validate and check collector configs from the shell.

Exit codes: 0 success, 1 invalid input (submit config, template or collector YAML), 2 usage.
Messages go to stderr, one per problem, never as a traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import shlex
import sys
from collections.abc import Iterator, Mapping, Sequence
from importlib import resources
from pathlib import Path

from ._config import SubmitConfig
from ._constants import COLLECTOR_DIR
from ._env import merged_driver_env, resolve_token
from ._errors import (
    CollectorConfigError,
    OtelConfigError,
    SubmitConfigError,
    TemplateError,
    Violation,
)
from ._render import render_collector_config, write_collector_config
from ._report_view import run_report
from ._templates import format_version, search_path, template_set
from ._validate import validate_collector_config
from ._validation import validate_destination, validate_gym_telemetry

EXIT_OK, EXIT_INVALID, EXIT_USAGE = 0, 1, 2
PROG = "nemo-gym-otel"
_BUNDLED_EXAMPLE = "submit.yaml"


def _error_lines(error: OtelConfigError) -> list[str]:
    if isinstance(error, CollectorConfigError):
        return [str(v) for v in error.violations]
    extra = getattr(error, "violations", ())
    return [str(error), *(str(v) for v in extra[1:])]


def _report(error: OtelConfigError, prefix: str = "") -> None:
    for line in _error_lines(error):
        print(f"{PROG}: error: {prefix}{line}", file=sys.stderr)


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
    validate_gym_telemetry(config)
    validate_destination(config)
    if config.otel.enabled and "otlp_http" in config.otel.exporters:
        try:
            resolve_token(config)
        except SubmitConfigError as exc:
            print(f"{PROG}: warning: {exc} (rendering does not need it)", file=sys.stderr)
    output = render_collector_config if args.stdout else write_collector_config
    with _named_as_flags({"benchmark_name": "--benchmark", "remote_bench_dir": "--job-dir"}):
        result = output(config, args.benchmark, args.job_dir, template_dirs=args.template_dir)
    if args.stdout:
        sys.stdout.write(str(result))
    else:
        print(result)
    return EXIT_OK


def _cmd_validate(args: argparse.Namespace) -> int:
    path = Path(args.file)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise CollectorConfigError(
            [Violation(str(path), f"cannot read the file ({exc.strerror})")]
        ) from None
    except UnicodeDecodeError:
        raise CollectorConfigError([Violation(str(path), "is not UTF-8 text")]) from None
    with _named_as_flags({"otel.collector_version": "--collector-version"}):
        validate_collector_config(text, args.collector_version, source=str(path))
    print(f"{path}: valid")
    return EXIT_OK


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


def _bundled_example() -> Path:
    return Path(str(resources.files(__name__.rpartition(".")[0]) / "examples" / _BUNDLED_EXAMPLE))


def _cmd_check(args: argparse.Namespace) -> int:
    """Every line x combination x config, rendered and checked: a platform team's CI gate."""
    templates = template_set(search_path(args.template_dir))
    configs = [("bundled example", _bundled_example()), *((c, Path(c)) for c in args.config)]
    problems = 0
    for name, config_path in configs:
        try:
            config = SubmitConfig.from_yaml(config_path)
        except OtelConfigError as exc:
            _report(exc, f"{name}: ")
            problems += 1
            continue
        benchmark = next(iter(config.driver.benchmarks))
        job_dir = f"/nemo-gym-otel-check/{config_path.stem}/{benchmark}"
        for line in templates.lines.values():
            for combination in sorted(line.templates):
                otel = dataclasses.replace(
                    config.otel,
                    exporters=tuple(combination.split("+")),
                    collector_version=format_version(line.collector_min),
                )
                variant = dataclasses.replace(config, otel=otel)
                label = f"{name}: {line.name}/{combination}"
                try:
                    render_collector_config(
                        variant, benchmark, job_dir, template_dirs=args.template_dir
                    )
                except OtelConfigError as exc:
                    _report(exc, f"{label}: ")
                    problems += 1
                else:
                    print(f"ok {label}")
    if problems:
        print(f"{PROG}: {problems} problem(s) found", file=sys.stderr)
        return EXIT_INVALID
    return EXIT_OK


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

    render = commands.add_parser(
        "render", help="write <job dir>/otel/collector.yaml for one benchmark"
    )
    render.add_argument("config", help="submit config (YAML)")
    render.add_argument("--benchmark", required=True, help="one of driver.benchmarks")
    render.add_argument(
        "--job-dir",
        required=True,
        help="absolute job directory, <output_path>/<gym_job_id>/<benchmark>",
    )
    render.add_argument(
        "--stdout", action="store_true", help="print the YAML instead of writing it"
    )
    template_dirs(render)
    render.set_defaults(run=_cmd_render)

    validate = commands.add_parser("validate", help="check a collector YAML file")
    validate.add_argument("file")
    validate.add_argument(
        "--collector-version", metavar="V", help="release the file is for (default: newest line)"
    )
    validate.set_defaults(run=_cmd_validate)

    listing = commands.add_parser("templates", help="list template lines and combinations")
    listing.add_argument("--json", action="store_true")
    template_dirs(listing)
    listing.set_defaults(run=_cmd_templates)

    env = commands.add_parser("env", help="print the driver's environment")
    env.add_argument("config")
    env.add_argument("--gym-job-id", required=True)
    env.add_argument("--json", action="store_true")
    env.set_defaults(run=_cmd_env)

    check = commands.add_parser("check", help="render and check every line and combination")
    check.add_argument(
        "config", nargs="*", help="submit configs to check besides the bundled example"
    )
    template_dirs(check)
    check.set_defaults(run=_cmd_check)

    report = commands.add_parser(
        "report", help="what the job's collector received and delivered (otel.delivery_report)"
    )
    report.add_argument("job_dir", metavar="JOB_DIR", help="the benchmark's job directory")
    report.add_argument("--json", action="store_true", help="a JSON document for scripts")
    report.set_defaults(run=_cmd_report)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return int(args.run(args))
    except OtelConfigError as exc:
        _report(exc)
        return EXIT_INVALID
    except OSError as exc:
        print(f"{PROG}: error: {exc.filename or ''}: {exc.strerror}", file=sys.stderr)
        return EXIT_INVALID
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
