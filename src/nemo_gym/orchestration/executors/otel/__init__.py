"""The OpenTelemetry Collector that runs beside every NeMo Gym benchmark job.

The executor imports this module on every submit, with telemetry on or off, so importing it is
cheap: only the constants load at import; each function, class and its dependencies (jinja2,
jsonschema, PyYAML, the schema files) load on first use, through the module ``__getattr__``.
"""

from __future__ import annotations

import importlib

from ._common.constants import (  # the constants load at import: they cost nothing
    COLLECTOR_CONFIG_NAME,
    COLLECTOR_DIR,
    COLLECTOR_HEALTH_PORT,
    COLLECTOR_SERVICE_NAME,
    DRAIN_CONFIG_NAME,
    DRAIN_SECONDS,
    FINAL_SCRAPE_GRACE_SECONDS,
    GYM_TELEMETRY_EXTRA,
    OTLP_GRPC_PORT,
    OTLP_HTTP_PORT,
    QUEUE_HOP_PORT,
    SHUTDOWN_WAIT_SECONDS,
)

_CONSTANTS = [name for name in globals() if name.isupper() and not name.startswith("_")]

# Not typing.TYPE_CHECKING: importing typing alone would cost more than the rest of this module.
TYPE_CHECKING = False
if TYPE_CHECKING:  # what type checkers see of the table below (tests/test_api.py compares them)
    from typing import Any

    from ._checks.collector_config import validate_collector_config
    from ._common.errors import (
        CollectorConfigError,
        CollectorConfigWarning,
        OtelConfigError,
        OtelConfigWarning,
        SubmitConfigError,
        TemplateError,
        Violation,
    )
    from ._render.rendering import (
        collector_config_path,
        render_collector_config,
        write_collector_config,
    )
    from ._step.collector_step import CollectorStep, collector_step, collector_step_script
    from ._submit.config import SubmitConfig
    from ._submit.driver_env import driver_telemetry_env, merged_driver_env
    from ._submit.rules import (
        gym_telemetry_active,
        otel_active,
        validate_destination,
        validate_gym_telemetry,
    )
    from ._submit.token import resolve_token
    from ._templating.context import policy_model_name as _policy_model_name
    from ._templating.context import scrape_targets

# The public names besides the constants, by stage: name -> (private module, name there).
_LAZY = {
    # stage 1, the submit config
    "SubmitConfig": ("_submit.config", "SubmitConfig"),
    "otel_active": ("_submit.rules", "otel_active"),
    "gym_telemetry_active": ("_submit.rules", "gym_telemetry_active"),
    "validate_gym_telemetry": ("_submit.rules", "validate_gym_telemetry"),
    "validate_destination": ("_submit.rules", "validate_destination"),
    "resolve_token": ("_submit.token", "resolve_token"),
    "driver_telemetry_env": ("_submit.driver_env", "driver_telemetry_env"),
    "merged_driver_env": ("_submit.driver_env", "merged_driver_env"),
    # stage 2, templating
    "scrape_targets": ("_templating.context", "scrape_targets"),
    "_policy_model_name": ("_templating.context", "policy_model_name"),
    # stage 3, checks
    "validate_collector_config": ("_checks.collector_config", "validate_collector_config"),
    # stage 4, rendering: render, parse, check, write
    "collector_config_path": ("_render.rendering", "collector_config_path"),
    "render_collector_config": ("_render.rendering", "render_collector_config"),
    "write_collector_config": ("_render.rendering", "write_collector_config"),
    # stage 5, the executor's collector job step
    "CollectorStep": ("_step.collector_step", "CollectorStep"),
    "collector_step": ("_step.collector_step", "collector_step"),
    "collector_step_script": ("_step.collector_step", "collector_step_script"),
    # errors, raised by every stage
    "OtelConfigError": ("_common.errors", "OtelConfigError"),
    "SubmitConfigError": ("_common.errors", "SubmitConfigError"),
    "TemplateError": ("_common.errors", "TemplateError"),
    "CollectorConfigError": ("_common.errors", "CollectorConfigError"),
    "CollectorConfigWarning": ("_common.errors", "CollectorConfigWarning"),
    "Violation": ("_common.errors", "Violation"),
    "OtelConfigWarning": ("_common.errors", "OtelConfigWarning"),
}

__all__ = sorted([*_CONSTANTS, *_LAZY])


def __getattr__(name: str) -> Any:
    try:
        module_name, attribute = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    value = getattr(importlib.import_module(f"{__name__}.{module_name}"), attribute)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
