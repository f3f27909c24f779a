"""Who is scraped, on which nodes: the one description the config and the job step share.

A job spans node pools, and the nodes of each are known only inside the job. So the rendered
config names, per scrape job, a file of targets (Prometheus ``file_sd_configs``), and the job
step's start writes those files from Slurm's node lists just before the collector starts. This
module says which file holds which targets: a model service on the first node of its pool
(``node_pool``, else the first pool), a node or DCGM exporter on every node of the job.

Each target is one group of its own whose ``instance`` label is ``<node>:<port>``: the
Prometheus receiver takes the resource's ``server.address`` from it, and the config turns that
into ``host.name``, so every scraped point names the Slurm node its exporter ran on. A target
on the collector's own node is reached at ``localhost`` (a service there may listen on the
loopback interface only), any other by the node's name.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePosixPath

from .._common.constants import COLLECTOR_DIR
from .._submit.config import SubmitConfig

TARGETS_DIR = "targets"
EVERY_NODE = None  # ScrapeJob.pool of the node and DCGM exporters


@dataclass(frozen=True)
class ScrapeJob:
    """One scrape job: its name, its targets file (in :func:`targets_dir`),
    the port its targets serve, the pool (index into :func:`pool_names`) whose first node runs
    it or ``EVERY_NODE``, and the ``gym_service`` label of a model service."""

    name: str
    file: str
    port: int
    pool: int | None
    service: str | None = None


def pool_names(config: SubmitConfig) -> tuple[str, ...]:
    """The job's components in order; a config without pools is one component, named for its
    compute entry in messages."""
    return config.compute.node_pools or (config.cluster,)


def scrape_jobs(config: SubmitConfig, component: str) -> list[ScrapeJob]:
    """Every scrape job of the job, model services first in declaration order. ``component``
    is ``otel.component`` as already checked by the caller."""
    pools = config.compute.node_pools
    jobs = [
        ScrapeJob(
            name=f"{component}/{service.name}",
            file=f"model-{service.name}.json",
            port=service.port,
            pool=pools.index(service.node_pool) if service.node_pool else 0,
            service=service.name,
        )
        for service in config.services.values()
        if service.serves_model
    ]
    otel = config.otel
    # Conventional job names, so the standard DCGM and node dashboards apply unchanged.
    for name, port in (("dcgm", otel.gpu_metrics_port), ("node", otel.node_metrics_port)):
        if port is not None:
            jobs.append(ScrapeJob(name, f"{name}.json", port, EVERY_NODE))
    return jobs


def targets_dir(bench_dir: PurePosixPath) -> PurePosixPath:
    return bench_dir / COLLECTOR_DIR / TARGETS_DIR
