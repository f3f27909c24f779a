"""The collector's Slurm job step: how it starts, when it is healthy, and how it stops.

Every executor used to re-implement this from prose, and the obvious way loses data: on Slurm
22.05, ``kill -TERM`` of the background ``srun`` and a plain ``scancel <job>.<step>`` both end
the collector with SIGKILL, so nothing is flushed. Only ``scancel --signal=TERM <job>.<step>``
hands the collector the TERM it shuts down cleanly on, and the step's ``srun`` then returns the
collector's exit status. Step ids are handed out in start order, which races between background
steps, so the stop finds the step by its name.

:func:`collector_step` describes the step as data (for executors that build their own scripts);
:func:`collector_step_script` renders the bash fragment that runs it, from the built-in templates
in ``templates/_step/`` (through the sandboxed environment of the collector configs, every value
quoted by its ``sh`` filter). The fragment needs nothing on
the node beyond bash and Slurm's own commands: the health check is read through bash's
``/dev/tcp`` and even the pauses are bash builtins. Where coreutils and util-linux are there, it
bounds what the job's telemetry takes of the disk (the log's bound, :mod:`.bounded_log`; the disk
budget, :mod:`.disk_budget`); where one of their commands is missing, it says so in the log and
goes on without that bound. The token reaches the step through the
environment only (``--export=ALL``): the fragment names its variable, never its value.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import PurePosixPath

from .._common.constants import (
    COLLECTOR_DIR,
    COLLECTOR_HEALTH_PORT,
    COLLECTOR_LOG_NAME,
    COLLECTOR_SERVICE_NAME,
    DRAIN_CONFIG_NAME,
    DRAIN_METRICS_PORT,
    DRAIN_SECONDS,
    FINAL_SCRAPE_GRACE_SECONDS,
    INGEST_CONFIG_NAME,
    QUEUE_HOP_PORT,
    SENDER_CONFIG_NAME,
    SENDER_STOP_SECONDS,
    SHUTDOWN_WAIT_SECONDS,
    SIGNALS,
)
from .._common.hosts import host_port
from .._render.job_files import COMPANION_NAMES, FILES_MARK, WITH_DRAIN, WITHOUT_DRAIN
from .._render.rendering import bench_dir_argument, check_render_inputs, collector_config_path
from .._submit.config import SubmitConfig
from .._templating.catalogue import STEP_DIR, template_set
from .._templating.context import (
    delivery_report_endpoint,
    drain_report_endpoint,
    hop_host,
    scrape_checked,
)
from .._templating.environment import render_builtin
from .._templating.file_compression import (
    compresses_files,
    file_rotation,
    gate_arguments,
    signal_file_name,
    step_compresses_files,
)
from .._templating.scrape import ScrapeJob, pool_names, scrape_jobs, targets_dir
from .bounded_log import bounded_log_context
from .disk_budget import disk_budget_context
from .finished_files import compress_context, finished_file_globs
from .fresh_files import set_aside_context
from .queue_place import queue_place_context

STEP_TEMPLATE = f"{STEP_DIR}/collector_step.sh.j2"  # built in only; includes the rest of _step/


@dataclass(frozen=True)
class CollectorStep:
    """Everything an executor needs to run the collector as a step of the benchmark job.

    ``command`` is what runs inside the step; ``srun_command`` prefixes it with ``srun`` and
    ``srun_options``. ``env_names`` lists the variables the step must inherit from the batch
    script (the token's variable only when the backend exporter is used): names, never values.

    ``pools`` are the job's components in order; before the collector starts, each of
    ``scrape_jobs`` needs its targets file under ``targets_dir`` (Prometheus ``file_sd``
    JSON): one group per node it runs on (``pool``'s first node, or every node of the job for
    ``pool`` None), target ``localhost:<port>`` on the collector's own node and
    ``<node>:<port>`` elsewhere, labels ``instance: <node>:<port>`` and, for a model service,
    ``gym_service``. :func:`collector_step_script` writes them from Slurm's node lists.

    After the collector exited, when ``drain_config_path`` exists (the backend's queue is on
    disk), the stop runs ``drain_command`` as the step ``drain_name`` once it is healthy, until
    two readings in a row of its own metrics (on the hop's loopback host at
    ``DRAIN_METRICS_PORT``) find its queues empty, for at most ``drain_seconds`` (the whole time
    with the delivery report, whose reading after the queue emptied records it): what the stop
    left queued goes out (a healthy backend takes a stop's remainder in a second or two). What
    it cannot send stays queued for the next start or ``nemo-gym-otel drain``.

    When ``sender_config_path`` exists (written with the drain config, see
    :mod:`.._render.sender_config`), the collector runs ``ingest_command`` instead of
    ``command`` (the job's config without its backend path), and ``sender_command`` runs that
    path as the step ``sender_name``, started first and healthy once its receiver answers on
    ``sender_port`` (the hop's, on the hop's loopback host): it waits out a backend's
    ``Retry-After`` without holding the collector's TERM. The stop TERMs it before the
    collector and kills it after ``sender_stop_seconds`` (what it had not delivered is still in
    the disk queue); the drain, one process, follows.

    ``files_mark`` begins the last line of ``config_path``, which says whether the stop has a
    drain config and which: ``<files_mark><id> with drain.yaml`` (then ``drain_config_path``
    must end in that same line) or ``<files_mark><id> without drain.yaml`` (then there must be
    no ``drain_config_path``). Anything else is a pair a crash during the write left mixed (see
    ``write_rendered``), or a config not written by ``write_collector_config``: the start must
    refuse it and ask for the job to be rendered again.

    ``finished_files`` (globs; empty where the collector compresses its files itself) are the
    files the collector's rotation finished: from the start until the stop and once more after
    it, the step compresses each into ``<file>.zst`` (``zstd``, written as ``<file>.zst.part``
    and renamed) and removes it; beyond ``finished_files_kept`` of them (0: all) it deletes the
    oldest compressed ones (see ``_step/finished_files.py``).
    """

    name: str
    command: tuple[str, ...]
    srun_options: tuple[str, ...]
    env_names: tuple[str, ...]
    config_path: PurePosixPath
    log_path: PurePosixPath
    health_host: str
    health_port: int
    health_url: str
    health_timeout_seconds: int
    grace_seconds: int
    shutdown_wait_seconds: int
    pools: tuple[str, ...]
    targets_dir: PurePosixPath
    scrape_jobs: tuple[ScrapeJob, ...]
    drain_name: str
    drain_command: tuple[str, ...]
    drain_config_path: PurePosixPath
    drain_seconds: int
    files_mark: str
    finished_files: tuple[str, ...]
    finished_files_kept: int
    ingest_command: tuple[str, ...]
    sender_name: str
    sender_command: tuple[str, ...]
    sender_config_path: PurePosixPath
    sender_port: int
    sender_stop_seconds: int

    @property
    def srun_command(self) -> tuple[str, ...]:
        return ("srun", *self.srun_options, *self.command)

    def _srun_named(self, name: str, command: tuple[str, ...]) -> tuple[str, ...]:
        options = [
            f"--job-name={name}" if o.startswith("--job-name=") else o for o in self.srun_options
        ]
        return ("srun", *options, *command)

    @property
    def drain_srun_command(self) -> tuple[str, ...]:
        return self._srun_named(self.drain_name, self.drain_command)

    @property
    def ingest_srun_command(self) -> tuple[str, ...]:
        return ("srun", *self.srun_options, *self.ingest_command)

    @property
    def sender_srun_command(self) -> tuple[str, ...]:
        return self._srun_named(self.sender_name, self.sender_command)

    def as_json(self) -> dict[str, object]:
        """Plain JSON types, as ``nemo-gym-otel step --json`` prints them."""
        return {
            "name": self.name,
            "command": list(self.command),
            "srun_options": list(self.srun_options),
            "srun_command": list(self.srun_command),
            "env_names": list(self.env_names),
            "config_path": str(self.config_path),
            "log_path": str(self.log_path),
            "health_url": self.health_url,
            "health_timeout_seconds": self.health_timeout_seconds,
            "grace_seconds": self.grace_seconds,
            "shutdown_wait_seconds": self.shutdown_wait_seconds,
            "drain_name": self.drain_name,
            "drain_command": list(self.drain_command),
            "drain_srun_command": list(self.drain_srun_command),
            "drain_config_path": str(self.drain_config_path),
            "drain_seconds": self.drain_seconds,
            "files_mark": self.files_mark,
            "finished_files": list(self.finished_files),
            "finished_files_kept": self.finished_files_kept,
            "ingest_command": list(self.ingest_command),
            "ingest_srun_command": list(self.ingest_srun_command),
            "sender_name": self.sender_name,
            "sender_command": list(self.sender_command),
            "sender_srun_command": list(self.sender_srun_command),
            "sender_config_path": str(self.sender_config_path),
            "sender_port": self.sender_port,
            "sender_stop_seconds": self.sender_stop_seconds,
            "pools": list(self.pools),
            "targets_dir": str(self.targets_dir),
            "scrape_jobs": [
                {
                    "name": j.name,
                    "file": j.file,
                    "port": j.port,
                    "pool": j.pool,
                    "service": j.service,
                }
                for j in self.scrape_jobs
            ],
        }


def collector_step(
    config: SubmitConfig, benchmark_name: str, remote_bench_dir: str | os.PathLike[str]
) -> CollectorStep:
    """The collector's step for one benchmark job, from the same inputs as its config.

    The inputs are checked as for rendering, so a step never points at a config that could not
    have been written. The config is read with the ``file:`` provider, which takes the rest of the
    argument as a path: a ``:`` in the job directory cannot be mistaken for a URI scheme. Where
    the config compresses the job's files, both commands carry the feature gate that makes the
    compression a standard zstd stream (see :mod:`..._templating.file_compression`).
    """
    bench_dir = check_render_inputs(config, benchmark_name, bench_dir_argument(remote_bench_dir))
    otel = config.otel
    config_path = PurePosixPath(collector_config_path(bench_dir))
    drain_path = config_path.with_name(DRAIN_CONFIG_NAME)
    options = [
        "--overlap",
        "--nodes=1",
        "--ntasks=1",
        f"--job-name={COLLECTOR_SERVICE_NAME}",
        "--export=ALL",
    ]
    if otel.container is not None:
        # Pyxis: the collector reads its config and writes its files in the job directory.
        options += [f"--container-image={otel.container}", f"--container-mounts={bench_dir}"]
    env_names = (otel.token_env,) if "otlp_http" in otel.exporters else ()
    host = otel.listen_host
    gates = gate_arguments(compresses_files(otel))  # its files' zstd; the drain writes there too
    rotation = file_rotation(otel) if step_compresses_files(otel) else None
    return CollectorStep(
        name=COLLECTOR_SERVICE_NAME,
        command=(otel.binary, f"--config=file:{config_path}", *gates),
        srun_options=tuple(options),
        env_names=(*env_names, "SLURM_JOB_ID"),
        config_path=config_path,
        log_path=bench_dir / COLLECTOR_DIR / COLLECTOR_LOG_NAME,
        health_host=host,
        health_port=COLLECTOR_HEALTH_PORT,
        health_url=f"http://{host_port(host, COLLECTOR_HEALTH_PORT)}/",
        health_timeout_seconds=otel.health_check_timeout_seconds,
        grace_seconds=FINAL_SCRAPE_GRACE_SECONDS,
        shutdown_wait_seconds=SHUTDOWN_WAIT_SECONDS,
        pools=pool_names(config),
        targets_dir=targets_dir(bench_dir),
        scrape_jobs=tuple(scrape_jobs(config, scrape_checked(otel.component, "otel.component"))),
        drain_name=f"{COLLECTOR_SERVICE_NAME}_drain",
        drain_command=(otel.binary, f"--config=file:{drain_path}", *gates),
        drain_config_path=drain_path,
        drain_seconds=DRAIN_SECONDS,
        files_mark=FILES_MARK,
        finished_files=finished_file_globs(config_path.parent, SIGNALS) if rotation else (),
        finished_files_kept=rotation.max_backups if rotation else 0,
        ingest_command=(
            otel.binary,
            f"--config=file:{config_path.with_name(INGEST_CONFIG_NAME)}",
            *gates,
        ),
        sender_name=f"{COLLECTOR_SERVICE_NAME}_sender",
        sender_command=(otel.binary, f"--config=file:{config_path.with_name(SENDER_CONFIG_NAME)}"),
        sender_config_path=config_path.with_name(SENDER_CONFIG_NAME),
        sender_port=QUEUE_HOP_PORT,
        sender_stop_seconds=SENDER_STOP_SECONDS,
    )


def collector_step_script(
    config: SubmitConfig, benchmark_name: str, remote_bench_dir: str | os.PathLike[str]
) -> str:
    """A bash fragment defining ``otel_collector_start`` and ``otel_collector_stop``.

    Source it in the job's batch script after ``collector.yaml`` was written; call the start
    before the job's services and the stop after the driver exited. Both return non-zero with one
    line on stderr when something went wrong (see the README's executor section). The bash is
    the built-in template ``templates/_step/collector_step.sh.j2``; this gathers its values.
    """
    step = collector_step(config, benchmark_name, remote_bench_dir)
    otel = config.otel
    compressed = compresses_files(otel)
    otel_dir = step.config_path.parent
    zstd_files = [otel_dir / signal_file_name(s, compressed) for s in SIGNALS] if compressed else []
    context: dict[str, object] = {
        "name": step.name,
        "log": step.log_path,
        "config": step.config_path,
        "otel_dir": otel_dir,
        "host": step.health_host,
        "port": step.health_port,
        "address": f"{step.health_host}:{step.health_port}",
        "health_timeout": step.health_timeout_seconds,
        "grace": step.grace_seconds,
        "shutdown_wait": step.shutdown_wait_seconds,
        "srun": step.srun_command,
        # In a container the binary is the image's business, and srun's own error lands in the log.
        "binary": step.command[0] if otel.container is None else None,
        "token_variables": [name for name in step.env_names if name != "SLURM_JOB_ID"],
        # The collector's last push and the drain's, each to its own receiver (see the template).
        "lost_readings": [
            _LOST_READING.format(endpoint=endpoint(otel.listen_host))
            for endpoint in (delivery_report_endpoint, drain_report_endpoint)
        ]
        if otel.delivery_report
        else None,
        "pools": step.pools,
        "pools_key": f"compute.{config.cluster}.node_pools",
        "targets_dir": step.targets_dir,
        "scrape_jobs": step.scrape_jobs,
        "files_mark": step.files_mark,
        "with_drain": WITH_DRAIN,
        "companions": [otel_dir / name for name in COMPANION_NAMES],
        "without_drain": WITHOUT_DRAIN,
        "drain": {
            "name": step.drain_name,
            "config": step.drain_config_path,
            "srun": step.drain_srun_command,
            "seconds": step.drain_seconds,
            # Where drain.yaml serves the drain's queue sizes (see _render/drain_config.py);
            # None: the delivery report wants the drain to run its whole time.
            "watch": None
            if otel.delivery_report
            else {"host": hop_host(otel.listen_host), "port": DRAIN_METRICS_PORT},
        },
        "sender": {
            "name": step.sender_name,
            "config": step.sender_config_path,
            "srun": step.sender_srun_command,
            "ingest_srun": step.ingest_srun_command,
            "host": hop_host(otel.listen_host),
            "port": step.sender_port,
            "stop_seconds": step.sender_stop_seconds,
        },
        **set_aside_context(zstd_files),
        **compress_context(otel_dir, SIGNALS, step.finished_files_kept, bool(step.finished_files)),
        "queue": None,
        **disk_budget_context(otel_dir, _queue_exporter(config), otel),
        **bounded_log_context(step.log_path),
    }
    if otel.backend_queue_megabytes is not None:
        context.update(queue_place_context(otel_dir, otel.container is not None))
    return render_builtin(STEP_TEMPLATE, context)


def _queue_exporter(config: SubmitConfig) -> str | None:
    """The id of the disk queue's exporter in the built-in templates of the config's line (the
    step is built in, whatever --template-dir says); None without a disk queue."""
    otel = config.otel
    if "otlp_http" not in otel.exporters or otel.backend_queue_megabytes is None:
        return None
    line = template_set(()).line_for(otel.collector_version)
    return f"{line.names['otlp_http']}/queue"


# The error both lines end with when only the delivery report's last push failed; before it the
# current line writes "Error: ", the legacy line a time stamp and "collector server run finished
# with error: ". A "; " would join another error to it. The push fails on its own receiver, closed
# by then: refused when it connects, or a broken pipe or a reset when the receiver closes the
# connection under it, or the connection ends before the answer (EOF) (each seen on the real
# collector).
_LOST_READING = (
    "failed to shutdown service after error: failed to shutdown meter provider: "
    'failed to upload metrics: Post "{endpoint}": '
)
