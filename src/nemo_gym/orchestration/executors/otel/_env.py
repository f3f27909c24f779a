"""The environment that switches on Gym's instrumentation and points it at the collector."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

from ._config import SubmitConfig
from ._constants import OTLP_GRPC_PORT, OTLP_HTTP_PORT
from ._errors import SubmitConfigError

RUNTIME_PREFIX = "runtime:"
# The collector reads a value that is exactly ${env:NAME} as YAML, and the Authorization resource
# attribute takes whatever type that gives (then converted to a string). A token survives that
# unchanged when it is text YAML keeps as a string, or a plain integer that converts back to the
# same digits. Anything else (leading zeros, floats, hex, true/null, a YAML marker) would arrive
# changed and the routing proxy would drop every payload without a word.
_TOKEN_CHARACTERS = re.compile(r"[A-Za-z0-9._~+/=:-]+")
_TOKEN_AS_INTEGER = re.compile(r"-?[1-9][0-9]*|0")
_TOKEN_CHANGED_BY_YAML = re.compile(
    r"[-+]?(\.[0-9]+|[0-9][0-9_]*(\.[0-9_]*)?)([eE][-+]?[0-9]+)?"  # numbers, "+5", "007"
    r"|[-+]?0[xXoObB][0-9a-fA-F_]+"  # hex, octal, binary
    r"|[-+]?\.(inf|Inf|INF)|\.(nan|NaN|NAN)"
    r"|~|null|Null|NULL|true|True|TRUE|false|False|FALSE|y|Y|n|N|yes|Yes|YES|no|No|NO"
    r"|on|On|ON|off|Off|OFF"
    r"|(---|\.\.\.).*|.*:"
)
_INT64_MAX = 2**63 - 1


def resolve_token(config: SubmitConfig, environ: Mapping[str, str] | None = None) -> str:
    """The ingest token from the submitting environment; the executor forwards it to the job.

    It is never written to the job directory: the rendered config refers to it as
    ``${env:<token_env>}``, which the collector resolves at start-up.
    """
    name = config.otel.token_env
    token = (os.environ if environ is None else environ).get(name, "")
    if not token:
        raise SubmitConfigError(
            "otel.token_env",
            f"the environment variable {name} is unset or empty, so the backend would drop every "
            f"payload; export {name}=<ingest token> before submitting, or set otel.enabled: false",
        )
    if not _token_survives_expansion(token):
        raise SubmitConfigError(
            "otel.token_env",
            f"the token in {name} would not reach the backend unchanged: the collector reads it "
            "as YAML, so it must use only letters, digits and ._~+/=:- and must not read as a "
            "number with leading zeros or a sign, a float, a boolean or null; issue a token in "
            "the usual base64url or hex alphabet",
        )
    return token


def _token_survives_expansion(token: str) -> bool:
    if not _TOKEN_CHARACTERS.fullmatch(token):
        return False
    if _TOKEN_AS_INTEGER.fullmatch(token):
        return abs(int(token)) <= _INT64_MAX
    return not _TOKEN_CHANGED_BY_YAML.fullmatch(token)


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


def merged_driver_env(
    config: SubmitConfig, gym_job_id: str, environ: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The driver's environment: Gym's telemetry switches, with ``driver.env`` winning."""
    environ = os.environ if environ is None else environ
    otel = config.otel
    merged: dict[str, str] = {}
    if otel.enabled and otel.gym_telemetry:
        merged.update(driver_telemetry_env(gym_job_id, otel.gym_span_groups, otel.gym_logs))
    for name, value in config.driver.env.items():
        merged[name] = resolve_env_value(value, f"driver.env.{name}", environ)
    return merged
