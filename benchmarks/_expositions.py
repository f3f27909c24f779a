"""Synthetic scrape expositions of a large GPU server, for ``scrape_load``.

The fixtures in ``tests/data/expositions`` hold a handful of series to check names and types;
a real node of a GPU cluster exposes a thousand times more. These expositions keep the fixtures'
metric names and label shapes (``node_cpu_seconds_total{cpu,mode}``, ``node_memory_*_bytes``,
``node_network_*_total{device}``; DCGM fields labelled ``gpu``, ``UUID``, ``pci_bus_id``,
``device``, ``modelName``, ``Hostname``, ``hpc_job``) and scale them to a node with 128 CPUs,
8 GPUs, 8 InfiniBand ports, 10 NVMe disks and a dozen mounts:

- node_exporter with its default collectors: CPU times (128 CPUs x 8 modes), CPU frequency and
  softnet per CPU, meminfo, filesystems, network and InfiniBand devices, disks, hwmon sensors,
  the scalar families (load, context switches, ...), its per-collector scrape figures and the
  Go runtime's and process's own series;
- dcgm-exporter with its default counters, the profiling (DCP) fields and the throttling and
  ECC counters: 37 fields for each of 8 GPUs.

Values are fixed (seeded), so an exposition is generated once and served as the same bytes.
"""

from __future__ import annotations

import random
import zlib
from collections.abc import Iterable

CPUS = 128
CPU_MODES = ("idle", "iowait", "irq", "nice", "softirq", "steal", "system", "user")
GPUS = 8
GPU_MODEL = "NVIDIA H100 80GB HBM3"
HPC_JOB = "1843522"

MEMINFO = [
    "MemTotal",
    "MemFree",
    "MemAvailable",
    "Buffers",
    "Cached",
    "SwapCached",
    "Active",
    "Inactive",
    "Active_anon",
    "Inactive_anon",
    "Active_file",
    "Inactive_file",
    "Unevictable",
    "Mlocked",
    "SwapTotal",
    "SwapFree",
    "Dirty",
    "Writeback",
    "AnonPages",
    "Mapped",
    "Shmem",
    "KReclaimable",
    "Slab",
    "SReclaimable",
    "SUnreclaim",
    "KernelStack",
    "PageTables",
    "NFS_Unstable",
    "Bounce",
    "WritebackTmp",
    "CommitLimit",
    "Committed_AS",
    "VmallocTotal",
    "VmallocUsed",
    "VmallocChunk",
    "Percpu",
    "HardwareCorrupted",
    "AnonHugePages",
    "ShmemHugePages",
    "ShmemPmdMapped",
    "FileHugePages",
    "FilePmdMapped",
    "HugePages_Total",
    "HugePages_Free",
    "HugePages_Rsvd",
    "HugePages_Surp",
    "Hugepagesize",
    "Hugetlb",
    "DirectMap4k",
    "DirectMap2M",
    "DirectMap1G",
]
MOUNTS = (
    ("/dev/md0", "ext4", "/"),
    ("/dev/nvme0n1p1", "vfat", "/boot/efi"),
    ("/dev/nvme0n1p2", "ext4", "/boot"),
    ("/dev/md1", "ext4", "/raid"),
    *(
        ("tmpfs", "tmpfs", path)
        for path in ("/dev/shm", "/run", "/run/lock", "/run/user/0", "/tmp")
    ),
    ("overlay", "overlay", "/var/lib/docker/overlay2"),
    ("10.0.0.10@o2ib:/lustre", "lustre", "/lustre"),
    ("nfs01:/home", "nfs4", "/home"),
)
FILESYSTEM = ("avail_bytes", "free_bytes", "size_bytes", "files", "files_free", "readonly")
FILESYSTEM += ("device_error",)
NET_DEVICES = ("lo", "eno1", "eno2", "bond0", "docker0", *(f"ibp{i}s0" for i in range(8)))
NET_RECEIVE = ("bytes", "packets", "errs", "drop", "fifo", "frame", "compressed", "multicast")
NET_TRANSMIT = ("bytes", "packets", "errs", "drop", "fifo", "colls", "carrier", "compressed")
NET_GAUGES = ("up", "mtu_bytes", "speed_bytes", "carrier", "transmit_queue_length")
IB_PORTS = tuple(f"mlx5_{i}" for i in range(8))
IB_FAMILIES = (
    "port_data_received_bytes_total",
    "port_data_transmitted_bytes_total",
    "port_packets_received_total",
    "port_packets_transmitted_total",
    "port_constraint_errors_received_total",
    "port_constraint_errors_transmitted_total",
    "port_errors_received_total",
    "port_receive_remote_physical_errors_total",
    "port_transmit_discards_total",
    "link_downed_total",
    "state_id",
    "rate_bytes_per_second",
)
DISKS = (*(f"nvme{i}n1" for i in range(10)), "md0", "md1")
DISK_FAMILIES = (
    "reads_completed_total",
    "reads_merged_total",
    "read_bytes_total",
    "read_time_seconds_total",
    "writes_completed_total",
    "writes_merged_total",
    "written_bytes_total",
    "write_time_seconds_total",
    "io_now",
    "io_time_seconds_total",
    "io_time_weighted_seconds_total",
    "discards_completed_total",
    "discards_merged_total",
    "discarded_sectors_total",
    "discard_time_seconds_total",
    "flush_requests_total",
    "flush_requests_time_seconds_total",
)
SCALARS = (
    "node_load1",
    "node_load5",
    "node_load15",
    "node_boot_time_seconds",
    "node_time_seconds",
    "node_context_switches_total",
    "node_intr_total",
    "node_forks_total",
    "node_procs_running",
    "node_procs_blocked",
    "node_entropy_available_bits",
    "node_filefd_allocated",
    "node_filefd_maximum",
    "node_sockstat_sockets_used",
    "node_sockstat_TCP_inuse",
    "process_cpu_seconds_total",
    "process_max_fds",
    "process_open_fds",
    "process_resident_memory_bytes",
    "process_start_time_seconds",
    "process_virtual_memory_bytes",
    "go_goroutines",
    "go_threads",
)
GO_MEMSTATS = [
    "alloc_bytes",
    "heap_alloc_bytes",
    "heap_idle_bytes",
    "heap_inuse_bytes",
    "heap_objects",
    "heap_released_bytes",
    "heap_sys_bytes",
    "mcache_inuse_bytes",
    "mspan_inuse_bytes",
    "next_gc_bytes",
    "stack_inuse_bytes",
    "sys_bytes",
]
COLLECTORS = [
    "arp",
    "bcache",
    "bonding",
    "btrfs",
    "conntrack",
    "cpu",
    "cpufreq",
    "diskstats",
    "dmi",
    "edac",
    "entropy",
    "fibrechannel",
    "filefd",
    "filesystem",
    "hwmon",
    "infiniband",
    "ipvs",
    "loadavg",
    "mdadm",
    "meminfo",
    "netclass",
    "netdev",
    "netstat",
    "nfs",
    "nfsd",
    "nvme",
    "os",
    "powersupplyclass",
    "pressure",
    "rapl",
    "schedstat",
    "selinux",
    "sockstat",
    "softnet",
    "stat",
    "tapestats",
    "textfile",
    "thermal_zone",
    "time",
    "timex",
    "udp_queues",
    "uname",
    "vmstat",
    "xfs",
    "zfs",
]
HWMON_SENSORS = 32

# (field, type): dcgm-exporter's default counters, the DCP profiling fields, throttling, ECC.
DCGM_FIELDS = (
    ("DCGM_FI_DEV_SM_CLOCK", "gauge"),
    ("DCGM_FI_DEV_MEM_CLOCK", "gauge"),
    ("DCGM_FI_DEV_MEMORY_TEMP", "gauge"),
    ("DCGM_FI_DEV_GPU_TEMP", "gauge"),
    ("DCGM_FI_DEV_POWER_USAGE", "gauge"),
    ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter"),
    ("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter"),
    ("DCGM_FI_DEV_GPU_UTIL", "gauge"),
    ("DCGM_FI_DEV_MEM_COPY_UTIL", "gauge"),
    ("DCGM_FI_DEV_ENC_UTIL", "gauge"),
    ("DCGM_FI_DEV_DEC_UTIL", "gauge"),
    ("DCGM_FI_DEV_XID_ERRORS", "gauge"),
    ("DCGM_FI_DEV_FB_FREE", "gauge"),
    ("DCGM_FI_DEV_FB_USED", "gauge"),
    ("DCGM_FI_DEV_FB_RESERVED", "gauge"),
    ("DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "counter"),
    ("DCGM_FI_DEV_VGPU_LICENSE_STATUS", "gauge"),
    ("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "counter"),
    ("DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "counter"),
    ("DCGM_FI_DEV_ROW_REMAP_FAILURE", "gauge"),
    ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gauge"),
    ("DCGM_FI_PROF_SM_ACTIVE", "gauge"),
    ("DCGM_FI_PROF_SM_OCCUPANCY", "gauge"),
    ("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "gauge"),
    ("DCGM_FI_PROF_PIPE_FP64_ACTIVE", "gauge"),
    ("DCGM_FI_PROF_PIPE_FP32_ACTIVE", "gauge"),
    ("DCGM_FI_PROF_PIPE_FP16_ACTIVE", "gauge"),
    ("DCGM_FI_PROF_DRAM_ACTIVE", "gauge"),
    ("DCGM_FI_PROF_PCIE_TX_BYTES", "gauge"),
    ("DCGM_FI_PROF_PCIE_RX_BYTES", "gauge"),
    ("DCGM_FI_DEV_POWER_VIOLATION", "counter"),
    ("DCGM_FI_DEV_THERMAL_VIOLATION", "counter"),
    ("DCGM_FI_DEV_SYNC_BOOST_VIOLATION", "counter"),
    ("DCGM_FI_DEV_BOARD_LIMIT_VIOLATION", "counter"),
    ("DCGM_FI_DEV_LOW_UTIL_VIOLATION", "counter"),
    ("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "counter"),
    ("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "counter"),
)


class Exposition:
    """Prometheus text format, family by family; counts the series it holds."""

    def __init__(self, seed: str) -> None:
        self._lines: list[str] = []
        self._random = random.Random(seed)
        self.series = 0

    def family(
        self, name: str, kind: str, labelsets: Iterable[dict[str, str]] = ({},)
    ) -> Exposition:
        self._lines += [f"# HELP {name} {name.replace('_', ' ')}.", f"# TYPE {name} {kind}"]
        for labels in labelsets:
            rendered = ",".join(f'{key}="{value}"' for key, value in labels.items())
            value = round(self._random.uniform(0, 1e6 if kind == "counter" else 1e3), 3)
            self._lines.append(f"{name}{{{rendered}}} {value}" if rendered else f"{name} {value}")
            self.series += 1
        return self

    def text(self) -> str:
        return "\n".join(self._lines) + "\n"


def _kind(name: str) -> str:
    """node_exporter's convention: a counter's name ends in ``_total``."""
    return "counter" if name.endswith("_total") else "gauge"


def node_exporter() -> Exposition:
    """node_exporter on a large GPU server (the same on every node: only its resource differs)."""
    cpus = [str(cpu) for cpu in range(CPUS)]
    out = Exposition("node")
    out.family(
        "node_cpu_seconds_total",
        "counter",
        ({"cpu": cpu, "mode": mode} for cpu in cpus for mode in CPU_MODES),
    )
    out.family("node_cpu_scaling_frequency_hertz", "gauge", ({"cpu": cpu} for cpu in cpus))
    for name in ("processed", "dropped", "times_squeezed"):
        out.family(f"node_softnet_{name}_total", "counter", ({"cpu": cpu} for cpu in cpus))
    for field in MEMINFO:
        out.family(f"node_memory_{field}_bytes", "gauge")
    mounts = [{"device": d, "fstype": t, "mountpoint": m} for d, t, m in MOUNTS]
    for name in FILESYSTEM:
        out.family(f"node_filesystem_{name}", "gauge", mounts)
    devices = [{"device": device} for device in NET_DEVICES]
    for direction, names in (("receive", NET_RECEIVE), ("transmit", NET_TRANSMIT)):
        for name in names:
            out.family(f"node_network_{direction}_{name}_total", "counter", devices)
    for name in NET_GAUGES:
        out.family(f"node_network_{name}", "gauge", devices)
    ports = [{"device": port, "port": "1"} for port in IB_PORTS]
    for name in IB_FAMILIES:
        out.family(f"node_infiniband_{name}", _kind(name), ports)
    disks = [{"device": disk} for disk in DISKS]
    for name in DISK_FAMILIES:
        out.family(f"node_disk_{name}", _kind(name), disks)
    out.family(
        "node_hwmon_temp_celsius",
        "gauge",
        (
            {"chip": f"platform_coretemp_{i // 16}", "sensor": f"temp{i % 16 + 1}"}
            for i in range(HWMON_SENSORS)
        ),
    )
    for name in SCALARS:
        out.family(name, _kind(name))
    for name in GO_MEMSTATS:
        out.family(f"go_memstats_{name}", "gauge")
    collectors = [{"collector": name} for name in COLLECTORS]
    out.family("node_scrape_collector_duration_seconds", "gauge", collectors)
    out.family("node_scrape_collector_success", "gauge", collectors)
    return out


def dcgm_exporter(node: str) -> Exposition:
    """dcgm-exporter on a node of 8 GPUs; ``node`` is its ``Hostname`` label."""
    gpus = [
        {
            "gpu": str(gpu),
            "UUID": f"GPU-{zlib.crc32(node.encode()):08x}-0b1d-4c1e-9a55-{gpu:012x}",
            "pci_bus_id": f"00000000:{0x18 + 0x12 * gpu:02X}:00.0",
            "device": f"nvidia{gpu}",
            "modelName": GPU_MODEL,
            "Hostname": node,
            "hpc_job": HPC_JOB,
        }
        for gpu in range(GPUS)
    ]
    out = Exposition(f"dcgm-{node}")
    for name, kind in DCGM_FIELDS:
        out.family(name, kind, gpus)
    return out
