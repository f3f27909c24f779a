"""Submit-time checks that span several keys: each names the keys and the way out."""

from __future__ import annotations

from ._config import SubmitConfig
from ._constants import GYM_TELEMETRY_EXTRA
from ._errors import SubmitConfigError


def otel_active(config: SubmitConfig) -> bool:
    """Enabled is enough: Gym's servers push telemetry even without a local model to scrape."""
    return config.otel.enabled


def gym_telemetry_active(config: SubmitConfig) -> bool:
    return config.otel.enabled and config.otel.gym_telemetry


def validate_gym_telemetry(config: SubmitConfig) -> None:
    """Without ``driver.gym_install`` the driver cannot add Gym's telemetry extra."""
    if gym_telemetry_active(config) and config.driver.gym_install is None:
        raise SubmitConfigError(
            "driver.gym_install",
            f"is unset, so the driver cannot install Gym's '{GYM_TELEMETRY_EXTRA}' extra and no Gym "
            "metrics or traces would be exported; set driver.gym_install (repo, ref), or set "
            "otel.gym_telemetry: false to keep engine and node metrics only",
        )


def validate_destination(config: SubmitConfig) -> None:
    """An enabled collector that exports over OTLP/HTTP needs a URL and a service name."""
    otel = config.otel
    if not otel.enabled or "otlp_http" not in otel.exporters:
        return
    missing = [f"otel.{key}" for key in ("endpoint", "service_name") if not getattr(otel, key)]
    if missing:
        raise SubmitConfigError(
            missing[0],
            f"{' and '.join(missing)} must be set when the collector exports over OTLP/HTTP; set "
            f"{'them' if len(missing) > 1 else 'it'}, set otel.exporters: [file] to keep the data in "
            "the job directory only, or set otel.enabled: false",
        )
