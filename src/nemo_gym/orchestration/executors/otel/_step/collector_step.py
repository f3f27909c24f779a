"""The collector's Slurm job step: how it starts, when it is healthy, and how it stops.

Every executor used to re-implement this from prose, and the obvious way loses data: on Slurm
22.05, ``kill -TERM`` of the background ``srun`` and a plain ``scancel <job>.<step>`` both end
the collector with SIGKILL, so nothing is flushed. Only ``scancel --signal=TERM <job>.<step>``
hands the collector the TERM it shuts down cleanly on, and the step's ``srun`` then returns the
collector's exit status. Step ids are handed out in start order, which races between background
steps, so the stop finds the step by its name.

:func:`collector_step` describes the step as data (for executors that build their own scripts);
:func:`collector_step_script` writes the bash fragment that runs it. The fragment needs nothing on
the node beyond bash and Slurm's own commands: the health check is read through bash's
``/dev/tcp`` and even the pauses are bash builtins. The token reaches the step through the
environment only (``--export=ALL``): the fragment names its variable, never its value.
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass
from pathlib import PurePosixPath

from .._common.constants import (
    COLLECTOR_DIR,
    COLLECTOR_HEALTH_PORT,
    COLLECTOR_LOG_NAME,
    COLLECTOR_SERVICE_NAME,
    DRAIN_CONFIG_NAME,
    DRAIN_SECONDS,
    FINAL_SCRAPE_GRACE_SECONDS,
    SHUTDOWN_WAIT_SECONDS,
    SIGNALS,
)
from .._common.hosts import host_port
from .._render.job_files import FILES_MARK
from .._render.rendering import bench_dir_argument, check_render_inputs, collector_config_path
from .._submit.config import SubmitConfig
from .._templating.context import delivery_report_endpoint, scrape_checked
from .._templating.file_compression import (
    compresses_files,
    file_rotation,
    gate_arguments,
    signal_file_name,
    step_compresses_files,
)
from .._templating.scrape import EVERY_NODE, ScrapeJob, pool_names, scrape_jobs, targets_dir
from .finished_files import compress_functions, finished_file_globs
from .fresh_files import set_aside_function


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
    disk), the stop runs ``drain_command`` as the step ``drain_name`` for ``drain_seconds``
    after it is healthy: what the stop left queued goes out (a healthy backend takes a stop's
    remainder in a second or two). What it cannot send stays queued for the next start or
    ``nemo-gym-otel drain``.

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

    @property
    def srun_command(self) -> tuple[str, ...]:
        return ("srun", *self.srun_options, *self.command)

    @property
    def drain_srun_command(self) -> tuple[str, ...]:
        options = [
            f"--job-name={self.drain_name}" if o.startswith("--job-name=") else o
            for o in self.srun_options
        ]
        return ("srun", *options, *self.drain_command)

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
    )


def collector_step_script(
    config: SubmitConfig, benchmark_name: str, remote_bench_dir: str | os.PathLike[str]
) -> str:
    """A bash fragment defining ``otel_collector_start`` and ``otel_collector_stop``.

    Source it in the job's batch script after ``collector.yaml`` was written; call the start
    before the job's services and the stop after the driver exited. Both return non-zero with one
    line on stderr when something went wrong (see the README's executor section).
    """
    step = collector_step(config, benchmark_name, remote_bench_dir)
    q = shlex.quote
    # The binary is looked up on the node only when it runs there; in a container it is the
    # image's business, and srun's own error lands in the log.
    binary_check = (
        ""
        if config.otel.container is not None
        else (
            f"    if ! command -v {q(step.command[0])} >/dev/null 2>&1; then\n"
            f'        echo "otel_collector_start: collector binary not found: "{q(step.command[0])}'
            '" (otel.binary; put it on PATH or set an absolute path)" >&2\n'
            "        return 127\n"
            "    fi\n"
        )
    )
    token_checks = "".join(
        f'    if [[ -z "${{{name}:-}}" ]]; then\n'
        f'        echo "otel_collector_start: {name} is not set or empty; export the ingest token '
        f"in the job's environment (otel.token_env)\" >&2\n"
        "        return 1\n"
        "    fi\n"
        for name in step.env_names
        if name != "SLURM_JOB_ID"
    )
    # With the delivery report the collector's last push, at shutdown, finds its own receiver
    # closed and the collector exits 1 (upstream collector issue 12944). The stop tells that one
    # failure from any other by the collector's last log line, and reports a clean stop.
    lost_reading = (
        f"    local cause={q(_LOST_READING.format(endpoint=delivery_report_endpoint(config.otel.listen_host)))}\n"
        '    [[ "$line" == *"$cause"* && "$line" != *";"* ]] || return 1\n'
        '    [[ "$line" == *": connect: connection refused" || "$line" == *": write: broken pipe" ||\n'
        '        "$line" == *": read: connection reset by peer" || "$line" == *": EOF" ]]\n'
        if config.otel.delivery_report
        else "    return 1\n"
    )
    compressed = compresses_files(config.otel)
    otel_dir = step.config_path.parent
    zstd_files = [otel_dir / signal_file_name(s, compressed) for s in SIGNALS] if compressed else []
    plan = "".join(
        f"{job.file} {'*' if job.pool is EVERY_NODE else job.pool} {job.port} {job.service or '-'}\n"
        for job in step.scrape_jobs
    )
    return _FRAGMENT.format(
        name=q(step.name),
        pools=" ".join(q(pool) for pool in step.pools),
        pools_key=q(f"compute.{config.cluster}.node_pools"),
        targets_dir=q(str(step.targets_dir)),
        plan=plan,
        lost_reading=lost_reading,
        srun=" ".join(q(part) for part in step.srun_command),
        config=q(str(step.config_path)),
        log=q(str(step.log_path)),
        host=q(step.health_host),
        port=step.health_port,
        health_timeout=step.health_timeout_seconds,
        grace=step.grace_seconds,
        shutdown_wait=step.shutdown_wait_seconds,
        token_checks=token_checks,
        binary_check=binary_check,
        drain_call=_DRAIN_CALL,
        set_aside=set_aside_function(zstd_files),
        compress=compress_functions(otel_dir, SIGNALS, step.finished_files_kept)
        if step.finished_files
        else (
            "_otel_collector_live_files() { :; }  # the exporters create their files themselves\n"
            "_otel_collector_compress_finished() { :; }  # the step has nothing to compress\n"
        ),
        compress_start=_COMPRESS_START if step.finished_files else "",
        otel_dir=q(str(otel_dir)),
        drain=_DRAIN.format(
            name=q(step.drain_name),
            config=q(str(step.drain_config_path)),
            srun=" ".join(q(part) for part in step.drain_srun_command),
            log=q(str(step.log_path)),
            health_timeout=step.health_timeout_seconds,
            seconds=step.drain_seconds,
            shutdown_wait=step.shutdown_wait_seconds,
        ),
    )


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

_COMPRESS_START = """\
        if ! command -v zstd >/dev/null 2>&1; then
            echo "otel_collector_start: no zstd command on this node: the files the collector's rotation finishes stay JSON lines (install zstd to compress them)" >&2
        fi
        _otel_collector_compressing &
        _otel_collector_compressor=$!
"""

_DRAIN_CALL = """\
    if [[ -f "$_otel_collector_drain_config" ]]; then
        _otel_collector_drain || ((status != 0)) || status=1
    fi
"""

# Formatted on its own, then passed whole into _FRAGMENT (so formatted once).
_DRAIN = """\
_otel_collector_drain_config={config}

_otel_collector_drain() {{  # what the stop left in the disk queue: drain.yaml, for {seconds}s
    local pid status=0 deadline=$((SECONDS + {health_timeout}))
    {srun} >>{log} 2>&1 &
    pid=$!
    until _otel_collector_healthy; do
        if ! kill -0 "$pid" 2>/dev/null; then
            wait "$pid" || status=$?
            echo "otel_collector_stop: the drain exited (status $status) before it was healthy; what the stop left queued stays on disk for the next start or nemo-gym-otel drain; "{log}": $(_otel_collector_last_log_line)" >&2
            return 1
        fi
        if ((SECONDS >= deadline)); then
            _otel_collector_kill_step "$pid" {name}
            echo "otel_collector_stop: the drain was not healthy after {health_timeout}s; what the stop left queued stays on disk for nemo-gym-otel drain, see "{log} >&2
            return 1
        fi
        _otel_collector_pause 0.2
    done
    _otel_collector_pause {seconds}
    if ! _otel_collector_term "$pid" {name}; then
        echo "otel_collector_stop: the drain did not exit within {shutdown_wait}s of TERM; its step was killed, see "{log} >&2
        return 1
    fi
    wait "$pid" || status=$?
    if ((status == 1)) && _otel_collector_only_last_reading_lost; then
        status=0
    elif ((status != 0)); then
        echo "otel_collector_stop: the drain exited with status $status; "{log}": $(_otel_collector_last_log_line)" >&2
    fi
    return "$status"
}}
"""

_FRAGMENT = """\
# nemo-gym-otel: the OpenTelemetry Collector's job step. Source this file in the batch script,
# call otel_collector_start before the job's services and otel_collector_stop after the driver.
_otel_collector_pid=
_otel_collector_compressor=

_otel_collector_pause() {{  # sleep without coreutils: a read that times out
    read -rt "$1" <> <(:) || :
}}

_otel_collector_last_log_line() {{
    local line last=
    if [[ ! -r {log} ]]; then printf '(no log)'; return 0; fi
    while IFS= read -r line || [[ -n "$line" ]]; do  # srun's own lines name no cause
        [[ -n "$line" && "$line" != "srun: "* ]] && last=$line
    done < {log}
    printf '%s' "${{last:-(the log is empty)}}"
}}

_otel_collector_only_last_reading_lost() {{  # see collector_step_script
    local line
    line=$(_otel_collector_last_log_line)
{lost_reading}}}

_otel_collector_healthy() {{  # HTTP/1.0 GET through bash's /dev/tcp; healthy means 200
    local status
    exec 9<>/dev/tcp/{host}/{port} || return 1
    printf 'GET / HTTP/1.0\\r\\n\\r\\n' >&9
    IFS= read -rt 2 status <&9
    exec 9<&-
    [[ "$status" == "HTTP/1."?" 200"* ]]
}} 2>/dev/null

_otel_collector_steps() {{  # the step ids of the step named $1 (default: the collector's)
    local want=${{1:-{name}}}
    squeue --noheader --steps --jobs="$SLURM_JOB_ID" --format='%i %j' 2>/dev/null |
        while read -r id name; do
            if [[ "$name" == "$want" ]]; then printf '%s\\n' "$id"; fi
        done
    return 0
}}

_otel_collector_kill_step() {{  # [pid name]: default the collector's
    local step pid=${{1:-$_otel_collector_pid}}
    for step in $(_otel_collector_steps "${{2:-}}"); do scancel "$step" 2>/dev/null || :; done
    kill -KILL "$pid" 2>/dev/null || :
    wait "$pid" 2>/dev/null || :
    [[ -n "${{1:-}}" ]] || _otel_collector_pid=
}}

_otel_collector_term() {{  # pid name: TERM the named step, wait; 1 (and kill it) past the bound
    local step deadline=$((SECONDS + {shutdown_wait}))
    for step in $(_otel_collector_steps "$2"); do scancel --signal=TERM "$step" || :; done
    while kill -0 "$1" 2>/dev/null && ((SECONDS < deadline)); do
        _otel_collector_pause 0.2
    done
    if kill -0 "$1" 2>/dev/null; then
        _otel_collector_kill_step "$1" "$2"
        return 1
    fi
}}

{drain}
{set_aside}
{compress}
_otel_collector_end_compressing() {{
    [[ -n "$_otel_collector_compressor" ]] || return 0
    kill -TERM "$_otel_collector_compressor" 2>/dev/null || :
    wait "$_otel_collector_compressor" 2>/dev/null || :
    _otel_collector_compressor=
}}

_otel_collector_hostnames() {{  # a Slurm node list, one name a line
    if [[ "$1" == *[[,]* ]]; then scontrol show hostnames "$1"; else printf '%s\\n' "$1"; fi
}}

# The scrape targets of every node of the job, from Slurm's node lists (see CollectorStep): one
# component per node pool, in the order the submit config lists them.
_otel_collector_write_targets() {{
    local pools=({pools}) here=${{SLURMD_NODENAME:-}}
    local components=${{SLURM_HET_SIZE:-1}}
    if ((components != ${{#pools[@]}})); then
        echo "otel_collector_start: the job has $components component(s) but "{pools_key}" lists ${{#pools[@]}} pool(s) (${{pools[*]}}); submit one heterogeneous job component per pool, in that order" >&2
        return 1
    fi
    if [[ -z "$here" ]]; then
        echo "otel_collector_start: SLURMD_NODENAME is not set; call it in the batch script of a Slurm job" >&2
        return 1
    fi
    local -a first=() all=() nodes
    local -A seen=()
    local i var node
    for ((i = 0; i < components; i++)); do
        var=SLURM_JOB_NODELIST
        [[ -n "${{SLURM_HET_SIZE:-}}" ]] && var=SLURM_JOB_NODELIST_HET_GROUP_$i
        nodes=()
        [[ -n "${{!var:-}}" ]] && mapfile -t nodes < <(_otel_collector_hostnames "${{!var}}")
        if ((${{#nodes[@]}} == 0)); then
            echo "otel_collector_start: node pool ${{pools[i]}} (job component $i) has no nodes: $var is empty" >&2
            return 1
        fi
        for node in "${{nodes[@]}}"; do
            if [[ ! "$node" =~ ^[A-Za-z0-9._-]+$ ]]; then
                echo "otel_collector_start: $var names a node the targets cannot hold: $node" >&2
                return 1
            fi
            [[ -n "${{seen[$node]:-}}" ]] || all+=("$node")
            seen[$node]=1
        done
        first[i]=${{nodes[0]}}
    done
    mkdir -p {targets_dir} || return 1
    local file pool port service groups sep address
    while read -r file pool port service; do
        if [[ "$pool" == "*" ]]; then nodes=("${{all[@]}}"); else nodes=("${{first[pool]}}"); fi
        groups= sep=
        [[ "$service" == - ]] && service=
        for node in "${{nodes[@]}}"; do
            address=$node
            [[ "$node" == "$here" ]] && address=localhost
            groups+="$sep{{\\"targets\\":[\\"$address:$port\\"],\\"labels\\":{{\\"instance\\":\\"$node:$port\\"${{service:+,\\"gym_service\\":\\"$service\\"}}}}}}"
            sep=,
        done
        printf '[%s]\\n' "$groups" >{targets_dir}/".$file.tmp" &&
            mv -f {targets_dir}/".$file.tmp" {targets_dir}/"$file" || return 1
    done <<'_OTEL_TARGETS_'
{plan}_OTEL_TARGETS_
}}

otel_collector_start() {{
    if [[ -z "${{SLURM_JOB_ID:-}}" ]]; then
        echo "otel_collector_start: SLURM_JOB_ID is not set; call it inside a Slurm job" >&2
        return 1
    fi
{token_checks}{binary_check}    if [[ ! -f {config} ]]; then
        echo "otel_collector_start: "{config}" does not exist; write it first (write_collector_config)" >&2
        return 1
    fi
    _otel_collector_write_targets || return 1
    if _otel_collector_healthy; then
        echo "otel_collector_start: something already answers on "{host}":{port}; another collector on this node? (otel.listen_host)" >&2
        return 1
    fi
    if ! _otel_collector_set_aside; then
        echo "otel_collector_start: cannot rename the earlier attempt's zstd files in "{otel_dir}"; is the job directory writable?" >&2
        return 1
    fi
    if ! _otel_collector_live_files; then
        echo "otel_collector_start: cannot create the signal files in "{otel_dir}"; is the job directory writable?" >&2
        return 1
    fi
    {srun} >>{log} 2>&1 &
    _otel_collector_pid=$!
    local deadline=$((SECONDS + {health_timeout}))
    while ((SECONDS < deadline)); do
        if ! kill -0 "$_otel_collector_pid" 2>/dev/null; then
            local status=0
            wait "$_otel_collector_pid" || status=$?
            _otel_collector_pid=
            echo "otel_collector_start: the collector exited (status $status) before it was healthy; "{log}": $(_otel_collector_last_log_line)" >&2
            return 1
        fi
        if _otel_collector_healthy; then
{compress_start}            return 0
        fi
        _otel_collector_pause 0.5
    done
    _otel_collector_kill_step
    echo "otel_collector_start: no healthy collector on "{host}":{port} after {health_timeout}s (otel.health_check_timeout_seconds); see "{log} >&2
    return 1
}}

otel_collector_stop() {{
    local status=0
    _otel_collector_end_compressing
    _otel_collector_stop_collector || status=$?
    if ! _otel_collector_compress_finished; then
        echo "otel_collector_stop: cannot compress the files the collector's rotation finished in "{otel_dir}"; they stay JSON lines" >&2
    fi
    return "$status"
}}

_otel_collector_stop_collector() {{
    if [[ -z "$_otel_collector_pid" ]]; then
        echo "otel_collector_stop: no collector was started by otel_collector_start" >&2
        return 1
    fi
    local status=0
    if ! kill -0 "$_otel_collector_pid" 2>/dev/null; then
        wait "$_otel_collector_pid" || status=$?
        _otel_collector_pid=
        echo "otel_collector_stop: the collector had already exited (status $status); "{log}": $(_otel_collector_last_log_line)" >&2
        return $((status == 0 ? 1 : status))
    fi
    _otel_collector_pause {grace}  # one more scrape sees the final counters
    local steps
    steps=$(_otel_collector_steps)
    if [[ -z "$steps" ]]; then
        _otel_collector_kill_step
        echo "otel_collector_stop: no step named "{name}" in job $SLURM_JOB_ID; the collector was killed without a flush" >&2
        return 1
    fi
    if ! _otel_collector_term "$_otel_collector_pid" {name}; then
        _otel_collector_pid=
        echo "otel_collector_stop: the collector did not exit within {shutdown_wait}s of TERM; its step was killed, see "{log} >&2
        return 1
    fi
    wait "$_otel_collector_pid" || status=$?
    _otel_collector_pid=
    if ((status == 1)) && _otel_collector_only_last_reading_lost; then
        echo "otel_collector_stop: stopped cleanly; only the delivery report's own last reading, pushed at shutdown, was lost (upstream collector issue 12944)" >&2
        status=0
    elif ((status != 0)); then
        echo "otel_collector_stop: the collector exited with status $status; "{log}": $(_otel_collector_last_log_line)" >&2
    fi
{drain_call}    return "$status"
}}
"""
