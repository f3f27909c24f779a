"""Render path, bulk writes and import cost (issue 4, benchmarks 1-3)."""

from __future__ import annotations

import copy
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml
from support import helpers

from nemo_gym.orchestration.api import SubmitConfig
from nemo_gym.orchestration.executors import otel
from nemo_gym.orchestration.executors.otel._render.rendering import (
    render_job_files,
    write_rendered,
)
from nemo_gym.orchestration.executors.otel._templating.context import (
    policy_model_name,
    submitting_user,
)

from ._stats import Sample, time_calls

BENCH_DIR = "/lustre/runs/gym-bench-0001/aime25"


def large_mapping(services: int = 32) -> dict[str, Any]:
    """The bundled example with 32 model services and both node exporters."""
    mapping = yaml.safe_load(helpers.EXAMPLE.read_text(encoding="utf-8"))
    template = mapping["services"]["judge"]
    mapping["services"] = {
        f"model{i:02d}": copy.deepcopy(template)
        | {"port": 8000 + i, "served_model_name": f"model-{i:02d}"}
        for i in range(services)
    }
    mapping["driver"]["policy_model"] = "model00"
    mapping["otel"].update(gpu_metrics_port=9400, node_metrics_port=9100)
    return mapping


def dict_document(config: SubmitConfig, benchmark: str, bench_dir: str) -> dict[str, Any]:
    """The collector document built as a Python dict, as the original module did (no checks)."""
    o = config.otel
    signals = ("traces", "metrics", "logs")
    keys = {"traces": "trace_statements", "metrics": "metric_statements", "logs": "log_statements"}
    keep = 'set(attributes["service.name.override"], attributes["service.name"]) where attributes["service.name.override"] == nil and attributes["service.name"] != nil'
    targets = f"{bench_dir}/otel/targets"
    named = [(f"{o.component}/{name}", f"model-{name}") for name in otel.scrape_targets(config)]
    named += [
        (job, job)
        for job, port in (("dcgm", o.gpu_metrics_port), ("node", o.node_metrics_port))
        if port is not None
    ]
    jobs = [
        {
            "job_name": job,
            "scrape_interval": f"{o.scrape_interval_seconds}s",
            "scrape_timeout": f"{min(o.scrape_interval_seconds, 10)}s",
            "file_sd_configs": [{"files": [f"{targets}/{file}.json"]}],
        }
        for job, file in named
    ]
    attributes = [
        {"key": k, "value": v, "action": "upsert"}
        for k, v in (
            ("service.name", o.service_name),
            ("user", submitting_user()),
            ("run_id", Path(bench_dir).parent.name),
            ("slurm_job_id", "${env:SLURM_JOB_ID}"),
            ("benchmark", benchmark),
            ("cluster", config.cluster),
            ("model", policy_model_name(config)),
        )
        if v is not None
    ] + [{"key": "slurm_job_id", "action": "convert", "converted_type": "string"}]
    pipelines: dict[str, Any] = {}
    queue_dir = f"{bench_dir}/otel/queue"
    assert o.backend_queue_megabytes is not None, "the baseline renders the default disk queue"
    for s in signals:
        pipelines[f"{s}/ingest"] = {
            "receivers": ["otlp", "prometheus", "span_metrics"] if s == "metrics" else ["otlp"],
            "processors": [
                "transform/keep_service_name",
                *(["transform/host_name", "transform/metric_names"] if s == "metrics" else []),
                "resource/job",
                "batch",
            ],
            "exporters": [f"forward/{s}", *(["span_metrics"] if s == "traces" else [])],
        }
        pipelines[f"{s}/queue"] = {"receivers": [f"forward/{s}"], "exporters": ["otlp_http/queue"]}
        pipelines[f"{s}/backend"] = {
            "receivers": ["otlp/queue"],
            "processors": ["resource/tenant"],
            "exporters": ["otlp_http/backend"],
        }
        pipelines[f"{s}/files"] = {"receivers": [f"forward/{s}"], "exporters": [f"file/{s}"]}
    return {
        "extensions": {
            "health_check": {"endpoint": "localhost:13133"},
            "file_storage/queue": {
                "directory": queue_dir,
                "create_directory": True,
                "compaction": {
                    "directory": queue_dir,
                    "on_rebound": True,
                    "cleanup_on_start": True,
                },
            },
        },
        "receivers": {
            "otlp": {
                "protocols": {
                    "grpc": {"endpoint": "localhost:4317"},
                    "http": {"endpoint": "localhost:4318"},
                }
            },
            "otlp/queue": {"protocols": {"http": {"endpoint": "localhost:4319"}}},
            "prometheus": {"config": {"scrape_configs": jobs}},
        },
        "processors": {
            "transform/keep_service_name": {
                "error_mode": "ignore",
                **{keys[s]: [{"context": "resource", "statements": [keep]}] for s in signals},
            },
            "transform/host_name": {
                "error_mode": "ignore",
                "metric_statements": [
                    {
                        "context": "resource",
                        "statements": [
                            'set(attributes["host.name"], attributes["server.address"]) where attributes["host.name"] == nil and attributes["server.address"] != nil'
                        ],
                    }
                ],
            },
            "transform/metric_names": {
                "error_mode": "ignore",
                "metric_statements": [
                    {
                        "context": "metric",
                        "statements": [
                            'replace_pattern(name, "^([a-zA-Z_][a-zA-Z0-9_]*):", "$${1}_")'
                        ],
                    }
                ],
            },
            "resource/job": {"attributes": attributes},
            "resource/tenant": {
                "attributes": [
                    {
                        "key": "Authorization",
                        "value": f"${{env:{o.token_env}}}",
                        "action": "upsert",
                    },
                    {"key": "Authorization", "action": "convert", "converted_type": "string"},
                ]
            },
            "batch": None,
        },
        "connectors": {
            "span_metrics": {
                "histogram": {
                    "explicit": {
                        "buckets": [
                            "250ms",
                            "1s",
                            "2s",
                            "5s",
                            "10s",
                            "30s",
                            "60s",
                            "120s",
                            "300s",
                            "600s",
                            "1800s",
                        ]
                    }
                },
                "dimensions": [
                    {"name": "service.name.override"},
                    {"name": "nemo.gym.sandbox.provider"},
                ],
                "metrics_flush_interval": "5s",
            },
            **{f"forward/{s}": None for s in signals},
        },
        "exporters": {
            "otlp_http/queue": {
                "endpoint": "http://localhost:4319",
                "compression": "none",
                "timeout": "120s",
                "retry_on_failure": {
                    "enabled": True,
                    "initial_interval": "1s",
                    "max_interval": "30s",
                    "max_elapsed_time": "0s",
                },
                "sending_queue": {
                    "enabled": True,
                    "storage": "file_storage/queue",
                    "sizer": "bytes",
                    "queue_size": o.backend_queue_megabytes * 1024 * 1024,
                    "num_consumers": 4,
                    "block_on_overflow": False,
                    "batch": {
                        "sizer": "items",
                        "flush_timeout": "1s",
                        "min_size": 2048,
                        "max_size": 8192,
                    },
                },
            },
            "otlp_http/backend": {
                "endpoint": o.endpoint,
                "headers": {"Authorization": f"Bearer ${{env:{o.token_env}}}"},
                "timeout": "10s",
                "retry_on_failure": {
                    "enabled": True,
                    "initial_interval": "1s",
                    "max_interval": "30s",
                    "max_elapsed_time": "0s",
                },
                "sending_queue": {"enabled": False},
            },
            **{
                f"file/{s}": {
                    "path": f"{bench_dir}/otel/{s}.jsonl.zst",
                    "format": "json",
                    "compression": "zstd",
                    "append": True,
                }
                for s in signals
            },
        },
        "service": {
            "extensions": ["health_check", "file_storage/queue"],
            "telemetry": {
                "logs": {
                    "level": "info",
                    "disable_stacktrace": True,
                    "sampling": {"enabled": False},
                },
                "metrics": {"level": "none"},
            },
            "pipelines": pipelines,
        },
    }


def _dump(config: SubmitConfig, dumper: type) -> str:
    """The unchecked baseline: the same document built as a dict and dumped by PyYAML."""
    return yaml.dump(dict_document(config, "aime25", BENCH_DIR), Dumper=dumper, sort_keys=False)


def _ratio(name: str, ours: list[float], theirs: list[float]) -> Sample:
    return Sample(name, "x", tuple(r / d for r, d in zip(ours, theirs, strict=True)))


def render_path(repeats: int) -> dict[str, Any]:
    results: dict[str, Any] = {}
    for label, mapping in (
        ("example", yaml.safe_load(helpers.EXAMPLE.read_text(encoding="utf-8"))),
        ("large (32 services)", large_mapping()),
    ):
        config = SubmitConfig.from_dict(mapping)
        ours = otel.render_collector_config(config, "aime25", BENCH_DIR)
        same = yaml.safe_load(ours) == yaml.safe_load(_dump(config, yaml.CSafeDumper))
        # Interleave the three so all see the same machine state.
        rendered, dumped, c_dumped = [], [], []
        calls = (
            (rendered, lambda c=config: otel.render_collector_config(c, "aime25", BENCH_DIR)),
            (dumped, lambda c=config: _dump(c, yaml.SafeDumper)),
            (c_dumped, lambda c=config: _dump(c, yaml.CSafeDumper)),
        )
        for _ in range(repeats):
            for values, call in calls:
                values.append(time_calls("call", call, 1, 20).values[0])
        results[label] = {
            "render": Sample(f"render+validate {label}", "ms", tuple(rendered)),
            "baseline": Sample(f"dict+safe_dump {label}", "ms", tuple(dumped)),
            "ratio": _ratio(f"ratio {label}", rendered, dumped),
            "c_baseline": Sample(f"dict+C dumper {label}", "ms", tuple(c_dumped)),
            "c_ratio": _ratio(f"ratio to the C dumper {label}", rendered, c_dumped),
            "same_document": same,
        }
    return results


def submission(jobs: int, root: str) -> dict[str, Any]:
    """One submission of ``jobs`` benchmark jobs, as the executor writes them: one
    ``<output_path>/<gym_job_id>`` with ``jobs`` benchmarks. Timed from the first call, so the
    first call's one-time costs (loading jinja2, compiling templates and schema checks) count."""
    mapping = yaml.safe_load(helpers.EXAMPLE.read_text(encoding="utf-8"))
    mapping["driver"]["benchmarks"] = {f"bench{i:03d}": {} for i in range(jobs)}
    mapping["job"]["output_path"] = f"{root}/runs"
    config = SubmitConfig.from_dict(mapping)
    per_job = []
    start = time.perf_counter()
    for benchmark in config.driver.benchmarks:
        t0 = time.perf_counter()
        otel.write_collector_config(config, benchmark, f"{root}/runs/gym-0001/{benchmark}")
        per_job.append((time.perf_counter() - t0) * 1000)
    total = time.perf_counter() - start
    written = len(list(Path(root).glob("runs/gym-0001/*/otel/collector.yaml")))
    # The same jobs' files (collector.yaml and the three cut from it) rendered and checked again
    # without writing, then written again into fresh folders without rendering: what of a job
    # is the package's own work and what is the disk's.
    render_only, files = [], []
    for benchmark in config.driver.benchmarks:
        t0 = time.perf_counter()
        text, companions, _ = render_job_files(
            config, benchmark, f"{root}/runs/gym-0001/{benchmark}"
        )
        render_only.append((time.perf_counter() - t0) * 1000)
        files.append((benchmark, text, companions))
    write_only = []
    for benchmark, text, companions in files:
        t0 = time.perf_counter()
        write_rendered(text, f"{root}/again/gym-0001/{benchmark}", companions)
        write_only.append((time.perf_counter() - t0) * 1000)
    return {
        "total_s": total,
        "per_job_ms": per_job,
        "render_only_ms": render_only,
        "write_only_ms": write_only,
        "written": written,
    }


def bulk_write(
    jobs: int, rounds: int, against: Path | None = None, parent: Path | None = None
) -> dict[str, Any]:
    """``rounds`` submissions, each in a fresh interpreter (as a submit is) into a fresh folder
    of ``parent`` (default: the temporary directory).

    With ``against`` (the Python of another environment, with another build of the package
    installed: another checkout's ``.venv/bin/python``), each round also runs this same
    ``submission`` with that package, right after this one's, so both see the same machine
    state; its figures come under ``"against"``.

    The folders are removed only after the last round, and pending writes are flushed before
    each submission (untimed): deleting thousands of files while the next round writes would
    measure the disk's cleanup, not the package."""
    sides = [Path(sys.executable), *([against] if against is not None else [])]
    reports: list[list[dict[str, Any]]] = [[] for _ in sides]
    with tempfile.TemporaryDirectory(dir=parent) as root:
        for round_ in range(rounds):
            for side, python in enumerate(sides):
                os.sync()
                folder = Path(root) / f"round{round_}-{side}"
                folder.mkdir()
                reports[side].append(_submission_round(python, jobs, folder))
    results = _write_samples(jobs, reports[0])
    if against is not None:
        results["against"] = _write_samples(jobs, reports[1])
    return results


def _submission_round(python: Path, jobs: int, folder: Path) -> dict[str, Any]:
    result = subprocess.run(
        [
            str(python),
            "-c",
            "import json, sys; from benchmarks.render import submission; "
            "print(json.dumps(submission(int(sys.argv[1]), sys.argv[2])))",
            str(jobs),
            str(folder),
        ],
        cwd=helpers.REPO,
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    return json.loads(result.stdout)


def _write_samples(jobs: int, reports: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "total": Sample(f"{jobs} jobs written", "s", tuple(r["total_s"] for r in reports)),
        "first": Sample(
            "first write in a process", "ms", tuple(r["per_job_ms"][0] for r in reports)
        ),
        "per_job": Sample(
            "write_collector_config per job after the first",
            "ms",
            tuple(v for r in reports for v in r["per_job_ms"][1:]),
        ),
        "render_only": Sample(
            "render_job_files per job, no write",
            "ms",
            tuple(v for r in reports for v in r["render_only_ms"]),
        ),
        "write_only": Sample(
            "write_rendered per job, nothing rendered",
            "ms",
            tuple(v for r in reports for v in r["write_only_ms"]),
        ),
        "written": min(r["written"] for r in reports),
    }


def import_cost(runs: int) -> dict[str, Any]:
    """A fresh interpreter importing the module, against one that imports nothing, interleaved."""
    bare, loaded = [], []
    for _ in range(runs):
        for command, into in (
            ("pass", bare),
            ("import nemo_gym.orchestration.executors.otel", loaded),
        ):
            start = time.perf_counter()
            subprocess.run([sys.executable, "-c", command], check=True)
            into.append((time.perf_counter() - start) * 1000)
    return {
        "bare": Sample("bare interpreter", "ms", tuple(bare)),
        "import": Sample("interpreter + import", "ms", tuple(loaded)),
        "added_ms": statistics.median(loaded) - statistics.median(bare),
    }
