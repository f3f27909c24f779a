"""The OpenTelemetry Collector that runs beside every NeMo Gym benchmark job.

The executor imports this module on every submit, with telemetry on or off, so importing it is
cheap: jinja2, jsonschema, PyYAML and the schema files load on first use.
"""

from __future__ import annotations

from ._config import SubmitConfig
from ._constants import (
    COLLECTOR_CONFIG_NAME,
    COLLECTOR_DIR,
    COLLECTOR_HEALTH_PORT,
    COLLECTOR_SERVICE_NAME,
    FINAL_SCRAPE_GRACE_SECONDS,
    GYM_TELEMETRY_EXTRA,
    OTLP_GRPC_PORT,
    OTLP_HTTP_PORT,
    SHUTDOWN_WAIT_SECONDS,
)
from ._context import policy_model_name as _policy_model_name
from ._context import scrape_targets
from ._env import driver_telemetry_env, merged_driver_env, resolve_token
from ._errors import (
    CollectorConfigError,
    OtelConfigError,
    SubmitConfigError,
    TemplateError,
    Violation,
)
from ._render import collector_config_path, render_collector_config, write_collector_config
from ._validate import validate_collector_config
from ._validation import (
    gym_telemetry_active,
    otel_active,
    validate_destination,
    validate_gym_telemetry,
)

__all__ = [
    "COLLECTOR_CONFIG_NAME",
    "COLLECTOR_DIR",
    "COLLECTOR_HEALTH_PORT",
    "COLLECTOR_SERVICE_NAME",
    "FINAL_SCRAPE_GRACE_SECONDS",
    "GYM_TELEMETRY_EXTRA",
    "OTLP_GRPC_PORT",
    "OTLP_HTTP_PORT",
    "SHUTDOWN_WAIT_SECONDS",
    "CollectorConfigError",
    "OtelConfigError",
    "SubmitConfig",
    "SubmitConfigError",
    "TemplateError",
    "Violation",
    "_policy_model_name",
    "collector_config_path",
    "driver_telemetry_env",
    "gym_telemetry_active",
    "merged_driver_env",
    "otel_active",
    "render_collector_config",
    "resolve_token",
    "scrape_targets",
    "validate_collector_config",
    "validate_destination",
    "validate_gym_telemetry",
    "write_collector_config",
]
