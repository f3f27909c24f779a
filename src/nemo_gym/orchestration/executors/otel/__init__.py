"""The OpenTelemetry Collector that runs beside every NeMo Gym benchmark job.

The executor imports this module on every submit, with telemetry on or off, so importing it is
cheap: only the constants load at import; each function, class and its dependencies (jinja2,
jsonschema, PyYAML, the schema files) load on first use, through the module ``__getattr__``.
"""

from __future__ import annotations

import importlib

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

# Not typing.TYPE_CHECKING: importing typing alone would cost more than the rest of this module.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from ._config import SubmitConfig
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
    from ._step import CollectorStep, collector_step, collector_step_script
    from ._validate import validate_collector_config
    from ._validation import (
        gym_telemetry_active,
        otel_active,
        validate_destination,
        validate_gym_telemetry,
    )

# Public name -> (private module, name there).
_LAZY = {
    "SubmitConfig": ("_config", "SubmitConfig"),
    "_policy_model_name": ("_context", "policy_model_name"),
    "scrape_targets": ("_context", "scrape_targets"),
    "driver_telemetry_env": ("_env", "driver_telemetry_env"),
    "merged_driver_env": ("_env", "merged_driver_env"),
    "resolve_token": ("_env", "resolve_token"),
    "CollectorConfigError": ("_errors", "CollectorConfigError"),
    "OtelConfigError": ("_errors", "OtelConfigError"),
    "SubmitConfigError": ("_errors", "SubmitConfigError"),
    "TemplateError": ("_errors", "TemplateError"),
    "Violation": ("_errors", "Violation"),
    "collector_config_path": ("_render", "collector_config_path"),
    "render_collector_config": ("_render", "render_collector_config"),
    "write_collector_config": ("_render", "write_collector_config"),
    "CollectorStep": ("_step", "CollectorStep"),
    "collector_step": ("_step", "collector_step"),
    "collector_step_script": ("_step", "collector_step_script"),
    "validate_collector_config": ("_validate", "validate_collector_config"),
    "gym_telemetry_active": ("_validation", "gym_telemetry_active"),
    "otel_active": ("_validation", "otel_active"),
    "validate_destination": ("_validation", "validate_destination"),
    "validate_gym_telemetry": ("_validation", "validate_gym_telemetry"),
}


def __getattr__(name: str) -> Any:
    try:
        module_name, attribute = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    value = getattr(importlib.import_module(f"{__name__}.{module_name}"), attribute)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


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
    "CollectorStep",
    "OtelConfigError",
    "SubmitConfig",
    "SubmitConfigError",
    "TemplateError",
    "Violation",
    "_policy_model_name",
    "collector_config_path",
    "collector_step",
    "collector_step_script",
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
