"""``python -m benchmarks [--quick] [--json FILE] [--only NAME ...] [--against PYTHON]``: print a
table, write JSON.

Every comparison is measured side by side in this run; no figure is compared with one from
another day.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
from pathlib import Path
from typing import Any

from ._stats import Sample, describe, table

SUITES = (
    "render",
    "write",
    "import",
    "collector",
    "long_jobs",
    "queue_cap",
    "scrape_load",
    "fleet",
    "job_fs",
)


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _machine() -> dict[str, Any]:
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "cpu_model": _cpu_model(),
    }


def _jsonable(value: Any) -> Any:
    if isinstance(value, Sample):
        return value.as_dict()
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument(
        "--quick", action="store_true", help="fewer repeats (a smoke run, not figures to publish)"
    )
    parser.add_argument(
        "--json",
        type=Path,
        default=Path("benchmarks/results.json"),
        help="where to write the results",
    )
    parser.add_argument("--only", nargs="+", choices=SUITES, default=list(SUITES))
    parser.add_argument(
        "--against",
        type=Path,
        metavar="PYTHON",
        help="the Python of an environment with another build of the package (another "
        "checkout's .venv/bin/python): the write suite runs it too, round for round, and "
        "prints both side by side",
    )
    args = parser.parse_args(argv)
    repeats = 5 if args.quick else 21
    machine = _machine()
    results: dict[str, Any] = {"machine": machine}
    rows: list[tuple[str, str]] = [
        (
            "machine",
            f"{machine['cpus']} CPUs ({machine['cpu_model']}), Python {machine['python']}, "
            f"{machine['platform']}",
        )
    ]

    if "render" in args.only:
        from .render import render_path

        results["render"] = render_path(repeats)
        for label, r in results["render"].items():
            rows += [
                (f"render+validate, {label}", describe(r["render"])),
                (f"dict + yaml.safe_dump, {label}", describe(r["baseline"])),
                (
                    f"ratio (goal <= 1.0), {label}",
                    describe(r["ratio"]) + ("" if r["same_document"] else "  DOCUMENTS DIFFER"),
                ),
                (f"dict + PyYAML's C dumper (CSafeDumper), {label}", describe(r["c_baseline"])),
                (f"ratio to the C dumper, {label}", describe(r["c_ratio"])),
            ]
    if "write" in args.only:
        from .render import bulk_write

        results["write"] = bulk_write(500, 3 if args.quick else 5, args.against)
        w = results["write"]
        other = w.get("against")

        def both(key: str, digits: int = 3) -> str:
            if other is None:
                return describe(w[key], digits)
            return f"{describe(w[key], digits)}   against: {describe(other[key], digits)}"

        rows += [
            (f"500 jobs written (goal < 2 s), {w['written']} files each", both("total")),
            ("first job (loads jinja2, compiles templates)", both("first", 1)),
            ("per job after the first", both("per_job")),
            ("  of which rendering and checking its files (no write)", both("render_only")),
            ("  and the same files written again (nothing rendered)", both("write_only")),
        ]
    if "import" in args.only:
        from .render import import_cost

        results["import"] = import_cost(11 if args.quick else 21)
        i = results["import"]
        rows += [
            ("bare interpreter", describe(i["bare"], 1)),
            ("interpreter + import otel", describe(i["import"], 1)),
            ("import adds (goal < 30 ms)", f"{i['added_ms']:.1f} ms"),
        ]
    if "collector" in args.only:
        from .collector_load import collector_load

        results["collector"] = collector_load(quick=args.quick)
        rows += results["collector"].pop("rows")
    if "long_jobs" in args.only:
        from .long_jobs import long_jobs

        results["long_jobs"] = long_jobs(quick=args.quick)
        rows += results["long_jobs"].pop("rows")
    if "queue_cap" in args.only:
        from .queue_cap import queue_cap

        results["queue_cap"] = queue_cap(quick=args.quick)
        rows += results["queue_cap"].pop("rows")
    if "scrape_load" in args.only:
        from .scrape_load import scrape_load

        results["scrape_load"] = scrape_load(quick=args.quick)
        rows += results["scrape_load"].pop("rows")

    if "fleet" in args.only:
        from .fleet import fleet

        results["fleet"] = fleet(quick=args.quick)
        rows += results["fleet"].pop("rows")
    if "job_fs" in args.only:
        from .job_fs import job_fs

        results["job_fs"] = job_fs(quick=args.quick)
        rows += results["job_fs"].pop("rows")

    print(table(rows))
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(_jsonable(results), indent=2) + "\n", encoding="utf-8")
    print(f"\nwritten: {args.json}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
