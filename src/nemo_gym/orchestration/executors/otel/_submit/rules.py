"""The rules of a submit config that a schema cannot express; each names the keys and the way out.

:func:`check_config_rules` runs at construction (``SubmitConfig.from_dict``), so every config
that exists obeys them. The executor's own checks follow: whether telemetry is on, and whether
what it needs besides the config (Gym's install, a destination) is there.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from .._common.constants import (
    COLLECTOR_HEALTH_PORT,
    DRAIN_METRICS_PORT,
    DRAIN_RECEIVER_PORT,
    FINAL_SCRAPE_GRACE_SECONDS,
    GYM_TELEMETRY_EXTRA,
    OTLP_GRPC_PORT,
    OTLP_HTTP_PORT,
    QUEUE_HOP_PORT,
)
from .._common.errors import SubmitConfigError
from .._common.hosts import cleartext_off_node, is_loopback, is_wildcard, url_userinfo

if TYPE_CHECKING:
    from .config import SubmitConfig

_HOST_LABEL = re.compile(r"[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?")
_NOT_AN_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})")
# The ports of the job's own collector: its listeners on otel.listen_host and the disk
# queue's hop and the stop's drain on loopback.
_OWN_PORTS = {
    COLLECTOR_HEALTH_PORT: "the collector's health check",
    OTLP_GRPC_PORT: "the collector's OTLP/gRPC receiver",
    OTLP_HTTP_PORT: "the collector's OTLP/HTTP receiver",
}
_HOP_PORT = {
    QUEUE_HOP_PORT: "the receiver of the collector's disk-queue hop",
    DRAIN_RECEIVER_PORT: "the receiver of the stop's drain",
    DRAIN_METRICS_PORT: "the metrics of the stop's drain",
}


def check_config_rules(config: SubmitConfig) -> None:
    """Raise on the first rule ``config`` breaks."""
    _check_benchmark_folders(config)
    _check_policy_model(config)
    _check_node_pools(config)
    _check_scrape_interval(config)
    _check_ports(config)
    _check_listen_host(config)
    _check_endpoint(config)


def benchmark_folder(benchmark_name: str) -> str:
    """The last part of a benchmark's job directory: its name, which is one folder unless it
    holds a ``/`` (written ``_``) or is ``.`` or ``..`` (written ``_.``, ``_..``)."""
    folder = benchmark_name.replace("/", "_")
    return f"_{folder}" if folder in (".", "..") else folder


def _check_benchmark_folders(config: SubmitConfig) -> None:
    """Two benchmarks written to one folder would share one job directory: the second's
    collector.yaml would replace the first's, and their files would mix."""
    seen: dict[str, str] = {}
    for name in config.driver.benchmarks:
        folder = benchmark_folder(name)
        if folder in seen:
            raise SubmitConfigError(
                f"driver.benchmarks.{name}",
                f"is written to the job directory folder {folder!r}, like the benchmark "
                f"{seen[folder]!r} ('/' becomes '_'), so both would share one job directory; "
                "rename one of them",
            )
        seen[folder] = name


def _check_policy_model(config: SubmitConfig) -> None:
    policy = config.driver.policy_model
    if policy is not None and policy not in config.services:
        known = ", ".join(config.services) or "none"
        raise SubmitConfigError(
            "driver.policy_model",
            f"is not a service of this config (services: {known}); "
            "set it to one of the services or remove it",
        )


def _pool_references(config: SubmitConfig) -> list[tuple[str, str]]:
    """(key path, pool name) of every place a service names a node pool."""
    found = []
    for service in config.services.values():
        base = f"services.{service.name}"
        if service.node_pool is not None:
            found.append((f"{base}.node_pool", service.node_pool))
        for i, pool in enumerate(service.options.get("node_pools") or ()):
            found.append((f"{base}.node_pools[{i}]", pool))
        for stage in ("prefill", "decode"):
            pool = (service.options.get(stage) or {}).get("node_pool")
            if pool is not None:
                found.append((f"{base}.{stage}.node_pool", pool))
    return found


def _check_node_pools(config: SubmitConfig) -> None:
    """A pool is one component of the heterogeneous job: a name the compute entry does not list
    has no nodes, and the collector would scrape a service that runs nowhere it knows."""
    pools = config.compute.node_pools
    for path, pool in _pool_references(config):
        if pool not in pools:
            listed = ", ".join(pools) if pools else "none"
            raise SubmitConfigError(
                path,
                f"names the node pool {pool!r}, which compute.{config.cluster}.node_pools does not "
                f"list (pools: {listed}); add it there or name a listed pool",
            )


def _check_scrape_interval(config: SubmitConfig) -> None:
    """The collector outlives the driver by the grace period; one more scrape must fit in it."""
    interval = config.otel.scrape_interval_seconds
    if interval > FINAL_SCRAPE_GRACE_SECONDS:
        raise SubmitConfigError(
            "otel.scrape_interval_seconds",
            f"{interval} is longer than the {FINAL_SCRAPE_GRACE_SECONDS}s the collector outlives the driver, "
            f"so the final counters would never be scraped; use at most {FINAL_SCRAPE_GRACE_SECONDS}",
        )


def _check_listen_host(config: SubmitConfig) -> None:
    """A host name or an IP address, as the collector's listeners take it: ``0`` or
    ``999.999.999.999`` pass a host-name pattern, but the resolver reads the first as 0.0.0.0
    (every interface) and refuses the second; ``face:8080`` is neither."""
    if not listen_host_is_valid(config.otel.listen_host):
        raise SubmitConfigError(
            "otel.listen_host",
            "must be a host name (letters, digits, '-' and '.', not all digits) or an IPv4 or IPv6 "
            "address without brackets or port, e.g. localhost, 10.0.0.5 or fd00::5",
        )


def _check_endpoint(config: SubmitConfig) -> None:
    """The token travels in the endpoint's Authorization header: never in cleartext across the
    network (unless the config says so), and no second credential in the URL itself."""
    endpoint = config.otel.endpoint
    if endpoint is None:
        return
    if url_userinfo(endpoint) is not None:
        raise SubmitConfigError(
            "otel.endpoint",
            "carries a user name or password (user:password@host), which would be written into "
            "every job's collector.yaml; remove it: the ingest token travels in the Authorization "
            "header (otel.token_env)",
        )
    try:
        parts = urlsplit(endpoint)
        port = parts.port
    except ValueError:
        port = 0
    if port == 0:
        raise SubmitConfigError(
            "otel.endpoint",
            "has a port that is not a number from 1 to 65535, so the collector would refuse the "
            "URL and not start; write it as https://host:port or leave the port out",
        )
    if _NOT_AN_ESCAPE.search(endpoint):
        raise SubmitConfigError(
            "otel.endpoint",
            "holds a '%' that does not start an escape of two hex digits, so the collector "
            "would refuse the URL and not start; write a literal '%' as %25",
        )
    own = _own_collector_port(parts.hostname or "", port, config.otel.listen_host)
    if own is not None:
        raise SubmitConfigError(
            "otel.endpoint",
            f"points at the job's own collector (port {port} is {own}), which would send "
            "everything back into itself and never to a backend; set the backend's URL",
        )
    if cleartext_off_node(endpoint) and not config.otel.allow_plain_http:
        raise SubmitConfigError(
            "otel.endpoint",
            "is plain http:// to a host that is not loopback, so the ingest token would cross "
            "the network in cleartext on every request; use https://, or set "
            "otel.allow_plain_http: true for a proxy on the node's private network",
        )


def _own_collector_port(host: str, port: int | None, listen_host: str) -> str | None:
    """What of the job's own collector answers at ``host:port``, if anything: its listeners
    answer on ``listen_host`` (on loopback too when that is loopback or a wildcard), the
    queue's hop and the stop's drain on loopback."""
    host = host.lower()
    if port in _HOP_PORT and is_loopback(host):
        return _HOP_PORT[port]
    listen = listen_host.lower()
    on_listener = host == listen or (
        is_loopback(host) and (is_loopback(listen) or is_wildcard(listen))
    )
    return _OWN_PORTS.get(port) if on_listener and port is not None else None


def listen_host_is_valid(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        labels = host.split(".")
        return (
            len(host) <= 253
            and all(_HOST_LABEL.fullmatch(label) for label in labels)
            and not labels[-1].isdigit()
        )
    return "%" not in host  # a zone (fe80::1%eth0) is not an address the collector binds


def _check_ports(config: SubmitConfig) -> None:
    otel = config.otel
    scraped: dict[int, str] = {}
    for key, port in (
        ("gpu_metrics_port", otel.gpu_metrics_port),
        ("node_metrics_port", otel.node_metrics_port),
    ):
        if port is not None:
            _claim(scraped, _OWN_PORTS, port, f"otel.{key}")
    for service in config.services.values():
        if service.serves_model:
            _claim(scraped, _OWN_PORTS, service.port, f"services.{service.name}.port")


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
