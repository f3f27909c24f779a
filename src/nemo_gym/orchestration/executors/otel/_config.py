"""The submit config as frozen dataclasses, built only from a mapping that passed the schema.

Parsing happens in three steps, each with its own kind of message: the strict input schema
(unknown keys, types, formats), the conversion into dataclasses (defaults filled in, so nothing
downstream needs ``.get``), and the cross-checks that involve more than one key.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from ._constants import (
    COLLECTOR_HEALTH_PORT,
    MODEL_SERVICE_TYPES,
    OTLP_GRPC_PORT,
    OTLP_HTTP_PORT,
)
from ._errors import SubmitConfigError

_SUBMIT_SCHEMA = "submit-config.schema.json"
_DEFAULT_PORTS = {"vllm": 8000, "vllm_pd": 8000, "ray": 6379}


def _frozen(mapping: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return MappingProxyType(dict(mapping or {}))


@dataclass(frozen=True)
class Service:
    """One service of the job; ``options`` holds its remaining keys as written."""

    name: str
    type: str
    port: int
    model: str | None = None
    served_model_name: str | None = None
    options: Mapping[str, Any] = field(default_factory=dict)

    @property
    def serves_model(self) -> bool:
        return self.type in MODEL_SERVICE_TYPES


@dataclass(frozen=True)
class Compute:
    """The single compute entry; its name is the ``cluster`` resource attribute."""

    name: str
    type: str
    account: str
    options: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class GymInstall:
    repo: str
    ref: str


@dataclass(frozen=True)
class Driver:
    benchmarks: Mapping[str, Mapping[str, Any]]
    policy_model: str | None = None
    gym_install: GymInstall | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    container: str | None = None
    mounts: tuple[str, ...] = ()


@dataclass(frozen=True)
class Job:
    output_path: str


@dataclass(frozen=True)
class FileRotation:
    """``otel.file_rotation``: bounds each ``<signal>.jsonl`` of a long job (see the schema)."""

    max_megabytes: int
    max_backups: int


@dataclass(frozen=True)
class Otel:
    """The ``otel`` section with every default filled in (see the submit-config schema)."""

    enabled: bool = True
    binary: str = "otelcol-contrib"
    container: str | None = None
    endpoint: str | None = None
    token_env: str = "OTEL_TOKEN"
    service_name: str | None = None
    component: str = "gym-vllm"
    gym_telemetry: bool = True
    gym_span_groups: str = "default,verify"
    gym_logs: bool = True
    gpu_metrics_port: int | None = 9400
    node_metrics_port: int | None = 9100
    scrape_interval_seconds: int = 15
    health_check_timeout_seconds: int = 300
    exporters: tuple[str, ...] = ("otlp_http", "file")
    collector_version: str | None = None
    listen_host: str = "localhost"
    delivery_report: bool = False
    file_rotation: FileRotation | None = None


@dataclass(frozen=True)
class SubmitConfig:
    """A validated submit config. Build it with :meth:`from_dict` or :meth:`from_yaml`."""

    services: Mapping[str, Service]
    compute: Compute
    driver: Driver
    job: Job
    otel: Otel

    @property
    def cluster(self) -> str:
        return self.compute.name

    @classmethod
    def from_dict(cls, mapping: Mapping[str, Any]) -> SubmitConfig:
        """Check ``mapping`` against the submit-config schema, then build and cross-check it.

        Raises :class:`SubmitConfigError` naming the first offending key path; the error's
        ``violations`` attribute lists every schema problem found.
        """
        from ._schema_check import violations

        _require_mapping(mapping, "")
        problems = violations(_plain(mapping), _SUBMIT_SCHEMA)
        if problems:
            error = SubmitConfigError(problems[0].path, problems[0].message)
            error.violations = tuple(problems)  # type: ignore[attr-defined]
            raise error
        config = _build(mapping)
        _cross_check(config)
        return config

    @classmethod
    def from_yaml(cls, path: str | os.PathLike[str]) -> SubmitConfig:
        from ._yaml import parse_yaml

        source = Path(path)
        try:
            text = source.read_text(encoding="utf-8")
        except OSError as exc:
            raise SubmitConfigError(str(source), f"cannot read the file ({exc.strerror})") from None
        except UnicodeDecodeError:
            raise SubmitConfigError(str(source), "is not UTF-8 text") from None
        data = parse_yaml(text, str(source), SubmitConfigError)
        if data is None:
            raise SubmitConfigError(str(source), "is empty; write the submit config sections")
        _require_mapping(data, str(source))  # the file is all a CLI user has to go on
        return cls.from_dict(data)


def _require_mapping(value: Any, path: str) -> None:
    from ._schema_check import describe

    if not isinstance(value, Mapping):
        raise SubmitConfigError(
            path,
            f"the submit config must be a YAML mapping of its sections (services, compute, driver, "
            f"job, otel), not {describe(value)}",
        )


def _plain(value: Any) -> Any:
    """Mappings as dicts, so the schema sees MappingProxyType and friends as objects."""
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _build(data: Mapping[str, Any]) -> SubmitConfig:
    services = {}
    for name, raw in (data.get("services") or {}).items():
        rest = {
            k: v for k, v in raw.items() if k not in ("type", "port", "model", "served_model_name")
        }
        services[name] = Service(
            name=name,
            type=raw["type"],
            port=raw.get("port", _DEFAULT_PORTS[raw["type"]]),
            model=raw.get("model"),
            served_model_name=raw.get("served_model_name"),
            options=_frozen(rest),
        )
    if len(data["compute"]) > 1:
        raise SubmitConfigError(
            "compute",
            f"{len(data['compute'])} entries ({', '.join(data['compute'])}); more than one "
            "compute entry is not supported yet: keep exactly one",
        )
    ((compute_name, compute_raw),) = data["compute"].items()
    driver_raw = data["driver"]
    install = driver_raw.get("gym_install")
    otel_raw = dict(data.get("otel") or {})
    if "exporters" in otel_raw:
        otel_raw["exporters"] = tuple(otel_raw["exporters"])
    if otel_raw.get("file_rotation") is not None:
        otel_raw["file_rotation"] = FileRotation(**otel_raw["file_rotation"])
    config = SubmitConfig(
        services=_frozen(services),
        compute=Compute(
            name=compute_name,
            type=compute_raw["type"],
            account=compute_raw["account"],
            options=_frozen({k: v for k, v in compute_raw.items() if k not in ("type", "account")}),
        ),
        driver=Driver(
            benchmarks=_frozen(driver_raw["benchmarks"]),
            policy_model=driver_raw.get("policy_model"),
            gym_install=GymInstall(**install) if install else None,
            env=_frozen(driver_raw.get("env")),
            container=driver_raw.get("container"),
            mounts=tuple(driver_raw.get("mounts") or ()),
        ),
        job=Job(output_path=data["job"]["output_path"]),
        otel=Otel(**otel_raw),
    )
    return config


def _cross_check(config: SubmitConfig) -> None:
    policy = config.driver.policy_model
    if policy is not None and policy not in config.services:
        known = ", ".join(config.services) or "none"
        raise SubmitConfigError(
            "driver.policy_model",
            f"names {policy!r}, which is not a service (services: {known}); "
            "set it to one of the services or remove it",
        )
    otel = config.otel
    reserved = {
        COLLECTOR_HEALTH_PORT: "the collector's health check",
        OTLP_GRPC_PORT: "the collector's OTLP/gRPC receiver",
        OTLP_HTTP_PORT: "the collector's OTLP/HTTP receiver",
    }
    scraped: dict[int, str] = {}
    for key, port in (
        ("gpu_metrics_port", otel.gpu_metrics_port),
        ("node_metrics_port", otel.node_metrics_port),
    ):
        if port is not None:
            _claim(scraped, reserved, port, f"otel.{key}")
    for service in config.services.values():
        if service.serves_model:
            _claim(scraped, reserved, service.port, f"services.{service.name}.port")


def _claim(taken: dict[int, str], reserved: Mapping[int, str], port: int, path: str) -> None:
    """Two scrape targets on one port would scrape the same process twice under two names."""
    if port in reserved:
        raise SubmitConfigError(path, f"port {port} is {reserved[port]}'s port; pick another port")
    if port in taken:
        raise SubmitConfigError(
            path,
            f"port {port} is already used by {taken[port]}; give each scraped service its own port",
        )
    taken[port] = path
