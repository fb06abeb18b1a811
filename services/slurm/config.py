"""`slurm.conf` and `gres.conf` for the twin, from its topology. Pure: no files, no processes.

Every GPU server becomes one Slurm node, its slurmd started as `slurmd -N NAME`. Loopback mode
(the default): every slurmd runs on this machine's 127.0.0.1 with its own Port, slurmctld too.
On a `--network netns` twin (`make_config`'s `ctld_addr`/`ctld_netns`, `node_addrs`/`node_netns`):
slurmctld listens on the management host's OOB address in that host's namespace, each slurmd on
its GPU server's OOB address (NodeAddr) in the server's namespace. NodeHostname is the machine's
real hostname either way. The hardware figures are the HGX H100's (FIDELITY.md §2: 2 × 56-core
Xeon 8480C, 224 threads, ~2 TB RAM); `SlurmdParameters=config_overrides` makes slurmd report
them instead of the host's.

GRES: a whole-GPU server offers `gpu:h100:8`; a MIG server offers its slices as typed GRES named
as NVML autodetection names them (`nvidia_h100_80gb_hbm3_1g.10gb`), counted over its GPUs. That is
what the topology boots; `twin slurm up` passes the servers' live counts instead (`live_gres`).
`gres.conf` (AutoDetect=off) gives every GRES unit a `File=`: fake device files under the run
directory, which `SlurmCluster` creates as character devices (slurmd's gres/gpu requires one
to set a job's CUDA_VISIBLE_DEVICES).

Partitions mirror the seed's queues: `exploratory` (default, normal training) and `regression`
(pre-release regression, higher PriorityTier) over every node, with partition-priority
preemption by requeue; `dev` holds the MIG servers (development and inference on slices).

`cred_expire` (AuthInfo) is also how long a requeued job waits before it may start again: Slurm's
120 s default is two accelerated training days at the twin's usual pace, so the twin uses
CRED_EXPIRE_S (Slurm's minimum is 5).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from emulator.topology import MIG_LAYOUTS, GpuServerSpec, Topology

GPU_TYPE = "h100"
MIG_TYPE_PREFIX = "nvidia_h100_80gb_hbm3_"
CPUS, SOCKETS, CORES_PER_SOCKET, THREADS_PER_CORE = 224, 2, 56, 2
REAL_MEMORY_MB = 2_063_000  # ~2 TB, as slurmd -C would report on the real server
CRED_EXPIRE_S = 10  # step credential lifetime = a requeued job's wait before it can start again

PARTITION_EXPLORATORY = "exploratory"
PARTITION_REGRESSION = "regression"
PARTITION_DEV = "dev"

SLURMD_TIMEOUT_S = 60   # SlurmdTimeout: seconds without an answer from a slurmd before its node is DOWN

@dataclass(frozen=True)
class Gres:
    """One GRES line of a node: `gpu:<type>:<count>`, with its device files."""

    type: str
    count: int
    files: str  # a hostlist expression of paths, e.g. /run/x/dev/gpu001/nvidia[0-7]

    @property
    def spec(self) -> str:
        return f"gpu:{self.type}:{self.count}"


@dataclass(frozen=True)
class SlurmNode:
    """One GPU server's slurmd: what its slurm.conf NodeName line says of it beyond the shared hardware
    figures (NodeAddr, Port, Gres, Feature=rack_<rack>[,mig]), and the namespace that slurmd runs in."""

    name: str
    port: int
    gres: tuple[Gres, ...]
    mig: bool
    rack: str
    addr: str = "127.0.0.1"   # NodeAddr: where slurmctld reaches this slurmd
    netns: str | None = None  # the network namespace slurmd runs in (None: this one)

    @property
    def gres_spec(self) -> str:
        return ",".join(g.spec for g in self.gres)


@dataclass(frozen=True)
class SlurmConfig:
    """Everything needed to render the files; `directory` is where the cluster keeps its state."""

    cluster_name: str
    directory: Path
    hostname: str  # the machine's real hostname (NodeHostname of every node, SlurmctldHost)
    ctld_port: int
    nodes: tuple[SlurmNode, ...]
    auth: str = "munge"  # "munge" or "none" (Debian's 22.05 ships auth_none.so)
    real_memory_mb: int = REAL_MEMORY_MB
    extra: dict[str, str] = field(default_factory=dict)
    ctld_addr: str = "127.0.0.1"   # slurmctld's address (SlurmctldHost=hostname(addr))
    ctld_netns: str | None = None  # the network namespace slurmctld runs in (None: this one)
    slurmd_timeout: int = SLURMD_TIMEOUT_S

    @property
    def node_names(self) -> list[str]:
        return [n.name for n in self.nodes]

    @property
    def mig_nodes(self) -> list[str]:
        return [n.name for n in self.nodes if n.mig]

    @property
    def munge_socket(self) -> Path:
        return self.directory / "munge" / "munge.socket"

    def device_dir(self, node: str) -> Path:
        return self.directory / "dev" / node

    def device_files(self, node: str | None = None) -> list[Path]:
        """Every device file gres.conf names (of one node, in its GRES order)."""
        out = []
        for n in self.nodes:
            if node is None or n.name == node:
                for g in n.gres:
                    out += [Path(p) for p in expand_brackets(g.files)]
        return out


def expand_brackets(expr: str) -> list[str]:
    """`/d/nvidia[0-7]` → 8 paths (the one bracket form this module writes)."""
    if "[" not in expr:
        return [expr]
    head, rest = expr.split("[", 1)
    body, tail = rest.split("]", 1)
    lo, hi = body.split("-")
    return [f"{head}{i}{tail}" for i in range(int(lo), int(hi) + 1)]


def mig_type(profile: str) -> str:
    """`1g.10gb` → `nvidia_h100_80gb_hbm3_1g.10gb` (NVML autodetection's Slurm type name)."""
    return MIG_TYPE_PREFIX + profile


def node_gres(server: GpuServerSpec, device_dir: Path) -> tuple[Gres, ...]:
    """The GRES the topology gives `server` (its MIG layout, or whole GPUs)."""
    layout = MIG_LAYOUTS.get(server.mig_layout) if server.mig_layout else None
    if layout is None or not layout.mig_enabled:
        return gres_from_counts([(GPU_TYPE, server.gpu_count)], device_dir)
    per_gpu = Counter(layout.instances)
    return gres_from_counts([(mig_type(p), per_gpu[p] * server.gpu_count)
                             for p in sorted(per_gpu, key=layout.instances.index)], device_dir)


def gres_from_counts(counts: list[tuple[str, int]], device_dir: Path) -> tuple[Gres, ...]:
    """`[(type, count), ...]` → GRES lines with one fake device file per unit under `device_dir`
    (whole GPUs `nvidia[0-N]`, MIG slices `mig-<profile>-[0-N]`); zero counts are dropped."""
    out = []
    for gres_type, n in counts:
        if n <= 0:
            continue
        if gres_type == GPU_TYPE:
            out.append(Gres(GPU_TYPE, n, f"{device_dir}/nvidia[0-{n - 1}]"))
        else:
            stem = "mig-" + gres_type.removeprefix(MIG_TYPE_PREFIX).replace(".", "-")
            out.append(Gres(gres_type, n, f"{device_dir}/{stem}-[0-{n - 1}]"))
    return tuple(out)


def make_config(topo: Topology, directory: Path, *, hostname: str, ctld_port: int,
                slurmd_ports: list[int], auth: str = "munge",
                real_memory_mb: int = REAL_MEMORY_MB, cluster_name: str | None = None,
                live_gres: Mapping[str, list[tuple[str, int]]] | None = None,
                extra: Mapping[str, str] | None = None, ctld_addr: str = "127.0.0.1",
                ctld_netns: str | None = None, node_addrs: Mapping[str, str] | None = None,
                node_netns: Mapping[str, str | None] | None = None,
                slurmd_timeout: int = SLURMD_TIMEOUT_S) -> SlurmConfig:
    """`ctld_addr`/`ctld_netns`, `node_addrs`/`node_netns` (node → OOB address / namespace):
    where slurmctld and each slurmd listen and run (default: 127.0.0.1, this namespace).
    `live_gres` (node → [(type, count)], from `services.slurm.live`) replaces the topology's
    GRES for the nodes it names: what the servers offer now, after any MIG change at run time.
    `extra` adds slurm.conf lines (e.g. the health check's)."""
    servers = topo.gpu_servers
    if len(slurmd_ports) != len(servers):
        raise ValueError(f"{len(servers)} GPU servers need {len(servers)} slurmd ports, "
                         f"got {len(slurmd_ports)}")
    if auth not in ("munge", "none"):
        raise ValueError(f"auth must be 'munge' or 'none', not {auth!r}")
    directory = Path(directory)
    live_gres = live_gres or {}
    node_addrs = node_addrs or {}
    node_netns = node_netns or {}

    def gres(s: GpuServerSpec) -> tuple[Gres, ...]:
        if s.name in live_gres:
            return gres_from_counts(live_gres[s.name], directory / "dev" / s.name)
        return node_gres(s, directory / "dev" / s.name)

    nodes = tuple(
        SlurmNode(s.name, port, g, any(x.type != GPU_TYPE for x in g), s.rack,
                  node_addrs.get(s.name, "127.0.0.1"), node_netns.get(s.name))
        for s, port in zip(servers, slurmd_ports, strict=True) for g in [gres(s)]
    )
    name = cluster_name or "twin-" + "".join(c if c.isalnum() else "-" for c in topo.spec.name)
    return SlurmConfig(name.lower(), directory, hostname, ctld_port, nodes, auth, real_memory_mb,
                       dict(extra or {}), ctld_addr, ctld_netns, slurmd_timeout)


def render_slurm_conf(cfg: SlurmConfig) -> str:
    d = cfg.directory
    mem_per_cpu = cfg.real_memory_mb // CPUS
    lines = [
        "# Generated by clustertwin services/slurm/config.py: do not edit.",
        f"ClusterName={cfg.cluster_name}",
        f"SlurmctldHost={cfg.hostname}({cfg.ctld_addr})",
        f"SlurmctldPort={cfg.ctld_port}",
        "SlurmUser=root",
        "SlurmdUser=root",
    ]
    if cfg.auth == "munge":
        lines += ["AuthType=auth/munge", "CredType=cred/munge",
                  f"AuthInfo=socket={cfg.munge_socket},cred_expire={CRED_EXPIRE_S}"]
    else:
        lines += ["AuthType=auth/none", "CredType=cred/none"]
    lines += [
        f"StateSaveLocation={d}/state",
        f"SlurmdSpoolDir={d}/spool/%n",
        f"SlurmctldPidFile={d}/run/slurmctld.pid",
        f"SlurmdPidFile={d}/run/slurmd-%n.pid",
        f"SlurmctldLogFile={d}/log/slurmctld.log",
        f"SlurmdLogFile={d}/log/slurmd-%n.log",
        "SlurmctldDebug=info",
        "SlurmdDebug=info",
        "SlurmdParameters=config_overrides",
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none",
        "JobAcctGatherType=jobacct_gather/none",
        "AccountingStorageType=accounting_storage/none",
        "JobCompType=jobcomp/none",
        "SwitchType=switch/none",
        "MpiDefault=none",
        "SchedulerType=sched/backfill",
        "SchedulerParameters=bf_interval=2,sched_interval=2",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_Core_Memory",
        f"DefMemPerCPU={mem_per_cpu}",
        "GresTypes=gpu",
        "PreemptType=preempt/partition_prio",
        "PreemptMode=REQUEUE",
        "JobRequeue=1",
        "ReturnToService=2",
        f"SlurmdTimeout={cfg.slurmd_timeout}",
        "InactiveLimit=0",
        "KillWait=2",
        "MinJobAge=300",
        "MessageTimeout=20",
        "MailProg=/bin/true",
        "EnforcePartLimits=ALL",
    ]
    lines += [f"{k}={v}" for k, v in cfg.extra.items()]
    lines.append("")
    for n in cfg.nodes:
        lines.append(
            f"NodeName={n.name} NodeAddr={n.addr} NodeHostname={cfg.hostname} Port={n.port} "
            f"CPUs={CPUS} Sockets={SOCKETS} CoresPerSocket={CORES_PER_SOCKET} "
            f"ThreadsPerCore={THREADS_PER_CORE} RealMemory={cfg.real_memory_mb} "
            + (f"Gres={n.gres_spec} " if n.gres else "")
            + f"Feature=rack_{n.rack}{',mig' if n.mig else ''} State=UNKNOWN")
    lines.append("")
    every = ",".join(cfg.node_names)
    lines.append(f"PartitionName={PARTITION_EXPLORATORY} Nodes={every} Default=YES "
                 "PriorityTier=1 PreemptMode=REQUEUE MaxTime=INFINITE State=UP")
    lines.append(f"PartitionName={PARTITION_REGRESSION} Nodes={every} Default=NO "
                 "PriorityTier=10 PreemptMode=OFF MaxTime=INFINITE State=UP")
    if cfg.mig_nodes:
        lines.append(f"PartitionName={PARTITION_DEV} Nodes={','.join(cfg.mig_nodes)} Default=NO "
                     "PriorityTier=1 PreemptMode=REQUEUE MaxTime=INFINITE State=UP")
    return "\n".join(lines) + "\n"


def render_gres_conf(cfg: SlurmConfig) -> str:
    lines = ["# Generated by clustertwin services/slurm/config.py: do not edit.", "AutoDetect=off"]
    for n in cfg.nodes:
        for g in n.gres:
            lines.append(f"NodeName={n.name} Name=gpu Type={g.type} File={g.files}")
    return "\n".join(lines) + "\n"
