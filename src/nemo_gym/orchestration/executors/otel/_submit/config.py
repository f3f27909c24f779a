"""The submit config as frozen dataclasses, built only from a mapping that passed the schema.

Parsing happens in three steps, each with its own kind of message: the strict input schema
(unknown keys, types, formats), the conversion into dataclasses (defaults filled in, so nothing
downstream needs ``.get``), and the rules that need more than one key or more than a schema
(:mod:`.rules`, run by ``__post_init__``): a ``SubmitConfig`` that exists obeys them all.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from .._common.constants import DEFAULT_TOKEN_ENV, MODEL_SERVICE_TYPES
from .._common.errors import SubmitConfigError, Violation, dotted
from .._common.non_string_keys import non_string_key
from .._common.yaml_loader import MAX_DEPTH
from .rules import check_config_rules

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

    @property
    def node_pool(self) -> str | None:
        """The node pool whose first node serves this service's HTTP port (None: the first)."""
        return self.options.get("node_pool")


@dataclass(frozen=True)
class Compute:
    """The single compute entry; its name is the ``cluster`` resource attribute."""

    name: str
    type: str
    account: str
    options: Mapping[str, Any] = field(default_factory=dict)

    @property
    def node_pools(self) -> tuple[str, ...]:
        """The pools in the order they are listed: one heterogeneous job component each, in
        this order. Empty: the job is one plain allocation (one implicit pool)."""
        return tuple(self.options.get("node_pools") or ())


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
    allow_plain_http: bool = False
    token_env: str = DEFAULT_TOKEN_ENV
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
    backend_queue_megabytes: int | None = 4096
    disk_budget_percent: int = 50
    disk_budget_megabytes: int | None = None
    file_rotation: FileRotation | None = None


@dataclass(frozen=True)
class SubmitConfig:
    """A validated submit config. Build it with :meth:`from_dict` or :meth:`from_yaml`."""

    services: Mapping[str, Service]
    compute: Compute
    driver: Driver
    job: Job
    otel: Otel

    def __post_init__(self) -> None:
        """Every rule that needs only the config holds for every instance, including copies
        made with ``dataclasses.replace``."""
        check_config_rules(self)

    @property
    def cluster(self) -> str:
        return self.compute.name

    @classmethod
    def from_dict(cls, mapping: Mapping[str, Any]) -> SubmitConfig:
        """Check ``mapping`` against the submit-config schema, then build it (which runs the rules).

        Raises :class:`SubmitConfigError` whose ``violations`` list every schema problem found,
        or the first rule of :mod:`.rules` the config breaks.
        """
        from .._common.json_schema import violations

        _require_mapping(mapping, "")
        keys: list[Violation] = []
        plain = _plain(mapping, [], keys)
        problems = keys or violations(plain, _SUBMIT_SCHEMA)
        if problems:
            raise SubmitConfigError.of(problems)
        return _build(plain)

    @classmethod
    def from_yaml(cls, path: str | os.PathLike[str]) -> SubmitConfig:
        from .._common.text_file import read_text_file
        from .._common.yaml_loader import parse_yaml

        source = Path(path)
        text = read_text_file(str(source), SubmitConfigError)
        data = parse_yaml(text, str(source), SubmitConfigError)
        if data is None:
            raise SubmitConfigError(str(source), "is empty; write the submit config sections")
        _require_mapping(data, str(source))  # the file is all a CLI user has to go on
        return cls.from_dict(data)


def _require_mapping(value: Any, path: str) -> None:
    from .._common.json_schema import describe

    if not isinstance(value, Mapping):
        raise SubmitConfigError(
            path,
            f"the submit config must be a YAML mapping of its sections (services, compute, driver, "
            f"job, otel), not {describe(value)}",
        )


def _plain(value: Any, path: list[Any], keys: list[Violation]) -> Any:
    """Mappings as dicts, so the schema sees MappingProxyType and friends as objects; keys
    that are not strings go to ``keys``."""
    if len(path) > MAX_DEPTH:  # a mapping built in Python, not read by the bounded loader
        raise SubmitConfigError(
            dotted(path[:3]), f"nests deeper than {MAX_DEPTH} levels; flatten it"
        )
    if isinstance(value, Mapping):
        plain = {}
        for k, v in value.items():
            if not isinstance(k, str):
                keys.append(non_string_key(path, k))
            plain[k] = _plain(v, [*path, k], keys)
        return plain
    if isinstance(value, (list, tuple)):
        return [_plain(v, [*path, i], keys) for i, v in enumerate(value)]
    return value


def _whole(value: Any) -> Any:
    """The integer a whole-number float means: JSON Schema's ``integer`` accepts ``8000.0``,
    but the collector takes neither ``localhost:8000.0`` nor ``7.0s``."""
    return int(value) if isinstance(value, float) else value


def _build(data: Mapping[str, Any]) -> SubmitConfig:
    services = {}
    for name, raw in (data.get("services") or {}).items():
        rest = {
            k: v for k, v in raw.items() if k not in ("type", "port", "model", "served_model_name")
        }
        services[name] = Service(
            name=name,
            type=raw["type"],
            port=_whole(raw.get("port", _DEFAULT_PORTS[raw["type"]])),
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
    otel_raw = {key: _whole(value) for key, value in otel_raw.items()}
    if otel_raw.get("file_rotation") is not None:
        otel_raw["file_rotation"] = FileRotation(
            **{key: _whole(value) for key, value in otel_raw["file_rotation"].items()}
        )
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
