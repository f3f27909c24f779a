"""The environment that switches on Gym's instrumentation and points it at the collector."""

from __future__ import annotations

import os
from collections.abc import Mapping

from .._common.constants import OTLP_GRPC_PORT, OTLP_HTTP_PORT
from .._common.errors import SubmitConfigError
from .._common.hosts import host_port, is_wildcard
from .config import SubmitConfig


def driver_telemetry_env(gym_job_id: str, span_groups: str, logs: bool = True) -> dict[str, str]:
    return {
        "NEMO_GYM_OTEL_ENABLED": "1",
        "NEMO_GYM_OTEL_RUN_ID": gym_job_id,
        "NEMO_GYM_OTEL_SPAN_GROUPS": span_groups,
        "NEMO_GYM_OTEL_LOGS_ENABLED": "1" if logs else "0",
        "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://localhost:{OTLP_HTTP_PORT}",
        "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
        # nemo-lens builds its log exporter over gRPC whatever the protocol says; the SDK's
        # per-signal endpoint wins over the general one.
        "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT": f"http://localhost:{OTLP_GRPC_PORT}",
    }


def resolve_env_value(value: str, path: str, environ: Mapping[str, str]) -> str:
    """``lit:`` is literal, ``host:VAR`` is read now, ``runtime:VAR`` stays ``${VAR}`` for the job."""
    kind, _, rest = value.partition(":")
    if kind == "lit":
        if "\x00" in rest:  # YAML writes it as "\0"; no environment variable can hold it
            raise SubmitConfigError(
                path, "holds a NUL character, which no environment value can; remove it"
            )
        return rest
    if kind == "host":
        if rest not in environ:
            raise SubmitConfigError(
                path,
                f"reads {rest} from the submitting environment, where it is unset; export {rest} or use lit:/runtime:",
            )
        return environ[rest]
    if kind == "runtime":
        return "${" + rest + "}"
    raise SubmitConfigError(path, "must start with lit:, host: or runtime:")


def _collector_endpoints(listen_host: str) -> dict[str, str]:
    """Where the driver finds a collector that binds ``otel.listen_host``.

    A collector bound to one address (the node's address on the job's network) does not answer
    on localhost, so the driver is pointed at that address; one bound everywhere is reached
    through localhost, as :func:`driver_telemetry_env` says.
    """
    if listen_host == "localhost" or is_wildcard(listen_host):
        return {}
    return {
        "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://{host_port(listen_host, OTLP_HTTP_PORT)}",
        "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT": f"http://{host_port(listen_host, OTLP_GRPC_PORT)}",
    }


def merged_driver_env(
    config: SubmitConfig, gym_job_id: str, environ: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The driver's environment: Gym's telemetry switches, pointed at the collector's listen
    host, with ``driver.env`` winning."""
    environ = os.environ if environ is None else environ
    otel = config.otel
    merged: dict[str, str] = {}
    if otel.enabled and otel.gym_telemetry:
        merged.update(driver_telemetry_env(gym_job_id, otel.gym_span_groups, otel.gym_logs))
        merged.update(_collector_endpoints(otel.listen_host))
    for name, value in config.driver.env.items():
        merged[name] = resolve_env_value(value, f"driver.env.{name}", environ)
    return merged
