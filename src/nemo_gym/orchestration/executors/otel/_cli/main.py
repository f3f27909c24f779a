"""``nemo-gym-otel``: render, validate and check collector configs from the shell.

Exit codes: 0 success, 1 invalid input (submit config, template or collector YAML), 2 usage;
``report``: 0 complete, 1 incomplete, 3 cannot be told, 2 also a job directory file it cannot
read; ``drain``: 0 the disk queue is empty (or was never made),
4 items are still queued, 5 the queue is in a node-local folder of another node (run it there). A reader that closes the pipe early
(``report --format json | head -1``) ends the command quietly with 141, as SIGPIPE would.
Messages go to stderr, one per problem, never as a traceback. Every command that prints results
takes ``--format {text,json}``; the ``--json`` some commands had before is kept, hidden, as its
alias. ``graph`` prints a picture (Mermaid), ``render`` a path or the YAML itself.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import sys
import threading
from collections.abc import Sequence

from .._common.constants import DEFAULT_TOKEN_ENV
from .._common.errors import OtelConfigError
from . import commands
from .commands import EXIT_INVALID, PROG, report_error

EXIT_CLOSED_PIPE = 128 + 13  # SIGPIPE's status: the reader of stdout went away
_VARIABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _variable_name(text: str) -> str:
    if not _VARIABLE_NAME.fullmatch(text):
        raise argparse.ArgumentTypeError("must be an environment variable name, e.g. OTEL_TOKEN")
    return text


def _output_format(sub: argparse.ArgumentParser, json_help: str) -> None:
    sub.add_argument(
        "--format", choices=("text", "json"), default="text", help=f"json: {json_help}"
    )
    sub.add_argument(  # the flag of earlier releases, kept for their scripts
        "--json", dest="format", action="store_const", const="json", help=argparse.SUPPRESS
    )


def _token_env(sub: argparse.ArgumentParser, why: str) -> None:
    sub.add_argument(
        "--token-env",
        default=DEFAULT_TOKEN_ENV,
        type=_variable_name,
        metavar="NAME",
        help=f"variable holding the ingest token, {why} (default: {DEFAULT_TOKEN_ENV})",
    )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Render and check the OpenTelemetry Collector config of NeMo Gym jobs.",
    )
    subcommands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

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
        _output_format(sub, "one object per config with its violations and the collector's verdict")

    def one_job(sub: argparse.ArgumentParser) -> None:
        """The submit config, benchmark and job directory that name one benchmark job."""
        sub.add_argument("config", help="submit config (YAML)")
        sub.add_argument("--benchmark", required=True, help="one of driver.benchmarks")
        sub.add_argument(
            "--job-dir",
            required=True,
            help="absolute job directory, <output_path>/<gym_job_id>/<benchmark>",
        )

    render = subcommands.add_parser(
        "render", help="write <job dir>/otel/collector.yaml for one benchmark"
    )
    one_job(render)
    render.add_argument(
        "--stdout", action="store_true", help="print the YAML instead of writing it"
    )
    template_dirs(render)
    render.set_defaults(run=commands.render)

    validate = subcommands.add_parser("validate", help="check collector YAML files")
    validate.add_argument("file", nargs="+")
    validate.add_argument(
        "--collector-version", metavar="V", help="release the file is for (default: newest line)"
    )
    template_dirs(validate)
    _token_env(validate, "for the token and tenant rules")
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
    validate.set_defaults(run=commands.validate)

    graph = subcommands.add_parser(
        "graph", help="print the pipeline graph as Mermaid, the tenant path marked"
    )
    graph.add_argument("file", nargs="?", help="a collector YAML file")
    graph.add_argument("--config", help="a submit config to render instead (with --benchmark)")
    graph.add_argument("--benchmark", help="one of driver.benchmarks, with --config")
    graph.add_argument(
        "--collector-version", metavar="V", help="release the file is for (default: newest line)"
    )
    _token_env(graph, "whose tenant path is marked")
    template_dirs(graph)
    graph.set_defaults(run=commands.graph)

    listing = subcommands.add_parser("templates", help="list template lines and combinations")
    _output_format(listing, "one object per line with its range, combinations and origins")
    template_dirs(listing)
    listing.set_defaults(run=commands.templates)

    env = subcommands.add_parser("env", help="print the driver's environment")
    env.add_argument("config")
    env.add_argument("--gym-job-id", required=True)
    _output_format(env, "one object, variable name to value")
    env.set_defaults(run=commands.env)

    step = subcommands.add_parser(
        "step", help="print the bash fragment that runs the collector as a Slurm job step"
    )
    one_job(step)
    _output_format(step, "the step as data (CollectorStep) instead of the bash fragment")
    step.set_defaults(run=commands.step)

    check = subcommands.add_parser("check", help="render and check every line and combination")
    check.add_argument(
        "config", nargs="*", help="submit configs to check besides the bundled example"
    )
    template_dirs(check)
    judged_by_collector(check)
    check.set_defaults(run=commands.check)

    drain = subcommands.add_parser(
        "drain", help="send what a job's disk queue still holds to the backend"
    )
    drain.add_argument("job_dir", metavar="JOB_DIR", help="the benchmark's job directory")
    drain.add_argument(
        "--collector",
        metavar="BINARY",
        default="otelcol-contrib",
        help="a collector of the job's template line, path or name on PATH (default: "
        "otelcol-contrib, as otel.binary)",
    )
    drain.add_argument(
        "--timeout",
        type=float,
        metavar="SECONDS",
        help="give up after this long, leaving the rest queued (default: until the queue is empty)",
    )
    _output_format(drain, "the outcome as one document")
    drain.set_defaults(run=commands.drain)

    report = subcommands.add_parser(
        "report", help="what the job's collector received and delivered (otel.delivery_report)"
    )
    report.add_argument("job_dir", metavar="JOB_DIR", help="the benchmark's job directory")
    _output_format(report, "one document for scripts")
    report.add_argument(
        "--log",
        metavar="FILE",
        help="the collector's log (default: JOB_DIR/otel/collector.log, where the job step "
        "writes it), read for what happened after its last reading",
    )
    report.set_defaults(run=commands.report)
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
        report_error(exc)
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
