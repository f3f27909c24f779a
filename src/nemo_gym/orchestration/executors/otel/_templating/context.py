"""The variables a collector template sees, computed from the submit config.

Everything here is plain data (strings, integers, lists, :class:`EnvRef`); the templates decide
the YAML shape, this module decides the values. Each user-supplied string is checked here, where
its submit-config key is known, so a value that can never be valid names that key.

Template variables (documented for override authors):

``meta``        package_version, template, line, combination, template_version, origin,
                collector_range
``names``       component role to the type name the line's collectors know (``otlp_http``,
                ``span_metrics``), from the line's ``line.yaml``
``signals``     ["traces", "metrics", "logs"]
``listen``      health, grpc, http: ``host:port`` endpoints the collector binds
``scrape``      interval, timeout (``15s``-style durations) and ``jobs``: a list of
                {name, targets_file}: the job step writes each file's targets at start
                (see :mod:`.scrape`)
``resource``    the job's resource attributes: a list of {key, value}
``backend``     endpoint (OTLP/HTTP base URL), token (the placeholder for the ingest token) and
                timeout (one attempt's bound)
``queue``       null, or (``otel.backend_queue_megabytes``) the backend's disk queue: storage (the extension's id), directory, max_bytes
                (per signal), consumers, timeout (the hop's), listen (the hop receiver's
                loopback ``host:port``) and endpoint (its URL)
``files``       signal name to the absolute path of its file: ``<signal>.jsonl``, or
                ``<signal>.jsonl.zst`` where the collector compresses
``compression`` null, or ``zstd`` where the collector writes standard zstd streams (see
                :mod:`.file_compression`; the job step then starts it with the feature gate)
``delivery_report``  null, or (``otel.delivery_report``) marker (the resource attribute of the
                collector's own counters), interval_ms, endpoint (its own OTLP/HTTP metrics URL)
``rotation``    null, or max_megabytes, max_backups: ``otel.file_rotation``, else on a line whose
                files the job step compresses its default (:mod:`.file_compression`)
"""

from __future__ import annotations

import dataclasses
import getpass
import os
from pathlib import PurePosixPath
from typing import Any

from .._common.characters import prometheus_unreadable
from .._common.constants import (
    COLLECTOR_DIR,
    COLLECTOR_HEALTH_PORT,
    DELIVERY_REPORT_INTERVAL_SECONDS,
    DELIVERY_REPORT_MARKER,
    DRAIN_RECEIVER_PORT,
    OTLP_GRPC_PORT,
    OTLP_HTTP_PORT,
    QUEUE_DIR_NAME,
    QUEUE_HOP_PORT,
    SIGNALS,
)
from .._common.errors import SubmitConfigError, dotted
from .._common.hosts import connect_host, host_port, is_loopback
from .._common.version import package_version
from .._submit.config import SubmitConfig
from .catalogue import Line, TemplateInfo
from .file_compression import compresses_files, file_rotation, signal_file_name
from .scalar import EnvRef, invalid_character
from .scrape import scrape_jobs, targets_dir

SLURM_JOB_ID = EnvRef("SLURM_JOB_ID")
# Prometheus refuses a scrape timeout longer than the interval; 10s is its own default.
_MAX_SCRAPE_TIMEOUT_SECONDS = 10
# Pacing of the backend path (see the template's queue_exporter block): one attempt at the
# backend is bounded by the first; the hop waits longer, so it never gives up on (and later
# repeats) a request the backend is still working on, and the backend exporter behind it retries
# for as long as the hop waits: a Retry-After of up to about that long is waited out there
# (_render/sender_config.py). The stop ends the sender before the collector's TERM, so the hop's
# wait no longer holds the collector. The stop's drain, one process, bounds its hop's wait at
# DRAIN_HOP_TIMEOUT_SECONDS; `nemo-gym-otel drain` runs a sender too and lifts it.
_BACKEND_TIMEOUT = "10s"
_HOP_TIMEOUT = "120s"
_QUEUE_CONSUMERS = 4


def hop_host(listen_host: str) -> str:
    """Where the queue's hop listens: the listen host when that is a loopback address (two
    collectors on one node, each on its own loopback address, do not collide), else 127.0.0.1:
    the hop is never reachable from another node."""
    return listen_host if is_loopback(listen_host) else "127.0.0.1"


def checked(value: str, path: str) -> str:
    """``value`` unchanged, or an error naming ``path`` if no collector could read it back."""
    bad = invalid_character(value)
    if bad is not None:
        raise SubmitConfigError(
            path,
            f"contains the control character U+{ord(bad):04X} (a line break, tab or similar), "
            "which no collector value may hold; remove it",
        )
    return value


def scrape_checked(value: str, path: str) -> str:
    """Like :func:`checked`, for a value that lands in the Prometheus receiver's scrape config
    (``otel.component``, the prefix of the model scrape jobs' names)."""
    bad = prometheus_unreadable(checked(value, path))
    if bad is not None:
        raise SubmitConfigError(
            path,
            f"contains U+{ord(bad):04X}, which the collector's Prometheus receiver cannot read "
            "back (it rewrites its scrape config as YAML, where this is a line break or not "
            "allowed); remove it",
        )
    return value


def delivery_report_endpoint(listen_host: str) -> str:
    """Where the collector pushes its own counters (``otel.delivery_report``): its OTLP/HTTP
    receiver. The job step knows a lost push to it by this URL."""
    return f"http://{host_port(connect_host(listen_host), OTLP_HTTP_PORT)}/v1/metrics"


def drain_report_endpoint(listen_host: str) -> str:
    """Where the stop's drain pushes its own counters: its own receiver on the hop's host (see
    :mod:`.._render.drain_config`). The job step knows a lost push to it by this URL."""
    return f"http://{host_port(hop_host(listen_host), DRAIN_RECEIVER_PORT)}/v1/metrics"


def submitting_user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no passwd entry and no USER/LOGNAME (bare containers)
        return f"uid-{os.getuid()}"


def _policy_model(config: SubmitConfig) -> tuple[str, str | None] | None:
    """(key path, value) the ``model`` attribute comes from: served_model_name, else model."""
    name = config.driver.policy_model
    service = config.services.get(name) if name else None
    if service is None or not service.serves_model:
        return None
    key = "served_model_name" if service.served_model_name else "model"
    return dotted(["services", service.name, key]), getattr(service, key)


def policy_model_name(config: SubmitConfig) -> str | None:
    found = _policy_model(config)
    return found[1] if found else None


def scrape_targets(config: SubmitConfig) -> dict[str, int]:
    return {s.name: s.port for s in config.services.values() if s.serves_model}


# Prometheus reads file_sd_configs' paths as glob patterns, and refuses a "*" before the last
# path segment: a job directory holding one of these would name other files, or none.
_GLOB_CHARACTERS = "*?[\\"


def check_scrape_paths(config: SubmitConfig, bench_dir: PurePosixPath) -> None:
    """Refuse a job directory the scrape targets files cannot live in; rendering and the step
    both ask, so that no step points at a config that could not have been written."""
    glob = next((c for c in str(bench_dir) if c in _GLOB_CHARACTERS), None)
    if glob is not None and scrape_jobs(
        config, scrape_checked(config.otel.component, "otel.component")
    ):
        raise SubmitConfigError(
            "remote_bench_dir",
            f"contains {glob!r}, which the collector reads as a wildcard in the path of its "
            "scrape targets files; choose a job directory without '*', '?', '[' and '\\'",
        )


def _scrape_jobs(config: SubmitConfig, bench_dir: PurePosixPath) -> list[dict[str, Any]]:
    component = scrape_checked(config.otel.component, "otel.component")
    jobs = scrape_jobs(config, component)
    return [
        {"name": job.name, "targets_file": str(targets_dir(bench_dir) / job.file)} for job in jobs
    ]


def template_context(
    config: SubmitConfig,
    benchmark_name: str,
    remote_bench_dir: PurePosixPath,
    info: TemplateInfo,
    line: Line,
) -> dict[str, Any]:
    otel = config.otel
    bench_dir = checked(str(remote_bench_dir), "remote_bench_dir")
    model_path, model = _policy_model(config) or ("", None)
    attributes: list[tuple[str, Any, str]] = [
        ("service.name", otel.service_name, "otel.service_name"),
        ("user", submitting_user(), "user (the submitting user's login name)"),
        ("run_id", remote_bench_dir.parent.name, "remote_bench_dir"),
        ("slurm_job_id", SLURM_JOB_ID, ""),
        ("benchmark", benchmark_name, dotted(["driver", "benchmarks", benchmark_name])),
        ("cluster", config.cluster, "compute"),
        ("model", model, model_path),
    ]
    resource = [
        {"key": key, "value": checked(value, path) if isinstance(value, str) else value}
        for key, value, path in attributes
        if value is not None
    ]
    interval = otel.scrape_interval_seconds
    otel_dir = PurePosixPath(bench_dir) / COLLECTOR_DIR
    host = otel.listen_host
    compressed = compresses_files(otel)
    return {
        "meta": {
            "package_version": package_version(),
            "template": info.name,
            "line": line.name,
            "combination": info.combination,
            "template_version": info.template_version,
            "origin": info.origin,
            "collector_range": line.collector_range,
        },
        "names": dict(line.names),
        "signals": list(SIGNALS),
        "listen": {
            "health": host_port(host, COLLECTOR_HEALTH_PORT),
            "grpc": host_port(host, OTLP_GRPC_PORT),
            "http": host_port(host, OTLP_HTTP_PORT),
        },
        "scrape": {
            "interval": f"{interval}s",
            "timeout": f"{min(interval, _MAX_SCRAPE_TIMEOUT_SECONDS)}s",
            "jobs": _scrape_jobs(config, PurePosixPath(bench_dir)),
        },
        "resource": resource,
        "backend": {
            "endpoint": checked(otel.endpoint, "otel.endpoint") if otel.endpoint else None,
            "token": EnvRef(otel.token_env),
            "timeout": _BACKEND_TIMEOUT,
        },
        "queue": None
        if otel.backend_queue_megabytes is None
        else {
            "storage": "file_storage/queue",
            "directory": str(otel_dir / QUEUE_DIR_NAME),
            "max_bytes": otel.backend_queue_megabytes * 1024 * 1024,
            "consumers": _QUEUE_CONSUMERS,
            "timeout": _HOP_TIMEOUT,
            "listen": host_port(hop_host(host), QUEUE_HOP_PORT),
            "endpoint": f"http://{host_port(hop_host(host), QUEUE_HOP_PORT)}",
        },
        "files": {s: str(otel_dir / signal_file_name(s, compressed)) for s in SIGNALS},
        "compression": "zstd" if compressed else None,
        "delivery_report": {
            "marker": DELIVERY_REPORT_MARKER,
            "interval_ms": DELIVERY_REPORT_INTERVAL_SECONDS * 1000,
            "endpoint": delivery_report_endpoint(host),
        }
        if otel.delivery_report
        else None,
        "rotation": dataclasses.asdict(rotation) if (rotation := file_rotation(otel)) else None,
    }
