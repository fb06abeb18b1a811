"""How long a checkpoint write or a dataset read takes on the seed's Lustre (modelled, not measured).

The seed's hot tier (topologies/su-1024.yaml): 24 OSS in failover pairs, 4 all-NVMe OSTs each (96
OSTs), TB/s aggregate, read by 128 GPU servers. The twin's daemons run a few OSS on one machine;
this module answers at the seed's scale, for a stripe layout, with the twin's current faults applied.

The model (every figure a parameter with a modelled default, FIDELITY.md):
  - each writer (reader) node handles its own file of nbytes / nodes, striped over `stripe_count`
    OSTs (0 = the default 1, -1 = all usable ones); the files' stripes are spread round-robin over the
    usable OSTs, as the MDS allocator balances them;
  - an OST delivers min(its NVMe bandwidth, streams x one stream's bandwidth), and an OSS at most its
    server cap (PCIe/memory/CPU) and its NICs, shared by the OSTs it serves: an OSS whose partner
    failed serves 8 OSTs with one server's bandwidth, so every file striped there slows down;
  - a node moves at most its storage NIC's share;
  - the time is that of the slowest OST (each holds an equal share of the bytes of its stripes) or the
    node's NIC, whichever is longer, plus the open/layout/close round trips;
  - an OSS lost without a partner takes its OSTs away: new files avoid them (so the aggregate drops)
    and existing files with objects there block, then fail with EIO (`reads_blocked`);
    a full OST is avoided by new files (writes) and still read.

`checkpoint_write_seconds(nbytes, stripe_count, live_state)` is the hook for the training workload
(workloads/train's `storage=` callable takes bytes -> seconds:
`storage=functools.partial(checkpoint_write_seconds, stripe_count=4, live_state=state)` or
`storage=storage_model(4, state)`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from emulator.errors import BadInput
from services.lustre.ost import NvmeModel

if TYPE_CHECKING:
    from services.lustre.manifest import LustreSection

Op = Literal["read", "write"]


@dataclass(frozen=True)
class ClusterModel:
    """The seed's Lustre as parameters (modelled defaults; su-1024.yaml's counts)."""

    oss: int = 24
    osts_per_oss: int = 4
    failover_pairs: bool = True
    ost: NvmeModel = field(default_factory=NvmeModel)   # 12 GB/s read, 8 GB/s write per OST; streams 3 / 2 GB/s
    oss_read_bw: float = 40e9       # what one OSS server moves (PCIe, memory, CPU), reading
    oss_write_bw: float = 28e9      # and writing
    oss_nic_bw: float = 90e9        # 2 x 400 GbE at 90 % efficiency
    nodes: int = 128                # GPU servers (clients)
    node_bw: float = 40e9           # one client's storage NIC share (400 GbE at 80 %)
    metadata_s: float = 2e-3        # open + layout + close round trips to the MDS per file

    @property
    def ost_count(self) -> int:
        return self.oss * self.osts_per_oss

    def partner(self, oss: int) -> int | None:
        if not self.failover_pairs:
            return None
        p = oss ^ 1
        return p if p < self.oss else None


@dataclass(frozen=True)
class LiveState:
    """The faults to apply (indices at the modelled scale): OSS down, OSTs inactive or full."""

    failed_oss: frozenset[int] = frozenset()
    inactive_osts: frozenset[int] = frozenset()
    full_osts: frozenset[int] = frozenset()

    @property
    def healthy(self) -> bool:
        return not (self.failed_oss or self.inactive_osts or self.full_osts)


HEALTHY = LiveState()


@dataclass
class Estimate:
    op: Op
    nbytes: int
    stripe_count: int          # as asked
    stripes_per_file: int      # as used
    nodes: int
    seconds: float
    aggregate_bps: float
    osts_used: int
    osts_usable: int
    bottleneck: str
    reads_blocked: list[int] = field(default_factory=list)   # OSTs nobody serves: I/O there blocks, then EIO
    notes: list[str] = field(default_factory=list)
    modelled: bool = True

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)

    def text(self) -> str:
        gbps = self.aggregate_bps / 1e9
        what = "checkpoint write" if self.op == "write" else "dataset read"
        lines = [f"{what} of {_size(self.nbytes)} by {self.nodes} nodes, stripe count {self.stripe_count} "
                 f"({self.stripes_per_file} OSTs per file): {_dur(self.seconds)} at {gbps:,.1f} GB/s aggregate "
                 f"({self.osts_used} of {self.osts_usable} usable OSTs; limited by {self.bottleneck})",
                 "modelled, not measured: the seed's scale (services/lustre/estimate.py parameters), "
                 "with the twin's current faults applied"]
        lines += [f"  {n}" for n in self.notes]
        return "\n".join(lines) + "\n"


def _size(n: float) -> str:
    for unit, f in (("TiB", 1024**4), ("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if n >= f:
            return f"{n / f:.1f} {unit}"
    return f"{int(n)} B"


def _dur(s: float) -> str:
    return f"{s:.2f} s" if s < 120 else f"{s / 60:.1f} min"


def serving(model: ClusterModel, state: LiveState) -> dict[int, int | None]:
    """OST index -> the OSS serving it now (its own, its partner after a failover, or None)."""
    out: dict[int, int | None] = {}
    for i in range(model.ost_count):
        own = i // model.osts_per_oss
        if i in state.inactive_osts:
            out[i] = None
        elif own not in state.failed_oss:
            out[i] = own
        else:
            p = model.partner(own)
            out[i] = p if p is not None and p not in state.failed_oss else None
    return out


def estimate(op: Op, nbytes: int, stripe_count: int = 1, state: LiveState | None = None,
             model: ClusterModel | None = None, nodes: int | None = None) -> Estimate:
    """Modelled seconds to write (`op="write"`, a checkpoint) or read (a dataset) `nbytes` in total,
    split evenly over `nodes` client nodes, each with its own file of `stripe_count` stripes."""
    m = model or ClusterModel()
    st = state or HEALTHY
    if nbytes < 0:
        raise BadInput(f"size {nbytes} must not be negative")
    if stripe_count < -1:
        raise BadInput(f"stripe count {stripe_count}: use -1 (all OSTs), 0 (default 1) or a positive count")
    n_nodes = m.nodes if nodes is None else nodes
    if n_nodes < 1:
        raise BadInput(f"nodes {n_nodes} must be at least 1")
    serve = serving(m, st)
    blocked = sorted(i for i, s in serve.items() if s is None)
    usable = [i for i, s in serve.items() if s is not None and not (op == "write" and i in st.full_osts)]
    notes = []
    for o in sorted(st.failed_oss):
        p = m.partner(o)
        if p is not None and p not in st.failed_oss:
            notes.append(f"OSS {o} is down: its partner OSS {p} serves its {m.osts_per_oss} OSTs as well "
                         f"(one server's bandwidth for {2 * m.osts_per_oss} OSTs)")
        else:
            notes.append(f"OSS {o} is down with no partner to take over: its OSTs are lost to new files; "
                         "existing files with objects there block, then fail with EIO")
    if st.full_osts:
        notes.append(f"{len(st.full_osts)} OST(s) full: new files avoid them")
    if not usable:
        return Estimate(op, nbytes, stripe_count, 0, n_nodes, math.inf, 0.0, 0, 0, "no usable OST", blocked,
                        notes + ["no OST can take the data: the I/O fails"])
    per_file = len(usable) if stripe_count == -1 else max(1, stripe_count)
    per_file = min(per_file, len(usable))
    if stripe_count > len(usable):
        notes.append(f"stripe count {stripe_count} > {len(usable)} usable OSTs: files get {per_file}")
    # stripes of all files, spread evenly over the usable OSTs (the allocator's round robin, as a fluid)
    total_stripes = n_nodes * per_file
    streams = {i: total_stripes / len(usable) for i in usable}
    used = usable if total_stripes >= len(usable) else usable[:total_stripes]
    if total_stripes < len(usable):
        streams = {i: 1.0 for i in used}
    stripe_bytes = nbytes / total_stripes if total_stripes else 0.0
    ost_bw = m.ost.read_bw if op == "read" else m.ost.write_bw
    stream_bw = m.ost.stream_read_bw if op == "read" else m.ost.stream_write_bw
    server_bw = min(m.oss_read_bw if op == "read" else m.oss_write_bw, m.oss_nic_bw)
    # each OSS's bandwidth is shared by the OSTs it serves that carry stripes now
    by_oss: dict[int, list[int]] = {}
    for i in used:
        by_oss.setdefault(serve[i], []).append(i)   # type: ignore[arg-type]
    worst_t, worst_why = 0.0, "nothing"
    delivered_total = 0.0
    for oss, osts in by_oss.items():
        demand = {i: min(ost_bw, streams[i] * stream_bw) for i in osts}
        scale = min(1.0, server_bw / sum(demand.values()))
        for i in osts:
            rate = demand[i] * scale
            delivered_total += rate
            t = streams[i] * stripe_bytes / rate
            if t > worst_t:
                worst_t = t
                worst_why = (f"OSS {oss}" + (" (serving its failed partner's OSTs)" if len(osts) > m.osts_per_oss
                                             else "") if scale < 1.0 else
                             f"OST {i}'s NVMe" if demand[i] >= ost_bw else f"{streams[i]:.3g} stream(s) per OST")
    node_t = (nbytes / n_nodes) / min(m.node_bw, per_file * stream_bw)
    if node_t > worst_t:
        worst_t = node_t
        worst_why = "the client nodes' NICs" if m.node_bw <= per_file * stream_bw else \
            f"{per_file} stripe(s) per file (one stream per OST)"
    seconds = m.metadata_s + worst_t if nbytes else m.metadata_s
    agg = nbytes / worst_t if worst_t > 0 else delivered_total
    return Estimate(op, nbytes, stripe_count, per_file, n_nodes, seconds, agg, len(used), len(usable), worst_why,
                    blocked, notes)


def checkpoint_write_seconds(nbytes: int, stripe_count: int = 4, live_state: LiveState | None = None,
                             model: ClusterModel | None = None, nodes: int | None = None) -> float:
    """Modelled seconds to write a checkpoint of `nbytes` (all nodes writing their shards at once)."""
    return estimate("write", nbytes, stripe_count, live_state, model, nodes).seconds


def storage_model(stripe_count: int = 4, live_state: LiveState | None = None,
                  model: ClusterModel | None = None, nodes: int | None = None) -> Callable[[int], float]:
    """A `bytes -> seconds` callable for workloads/train's `storage=` hook."""
    return lambda nbytes: checkpoint_write_seconds(nbytes, stripe_count, live_state, model, nodes)


def live_state_from_twin(lu: LustreSection, statfs_osts: list[Any], model: ClusterModel | None = None,
                         down_oss: set[str] | None = None) -> LiveState:
    """The faults of the twin whose Lustre is `lu` at the modelled scale: the twin's k-th OSS (oss01 = 0)
    is the model's k-th, its OST index i the model's OST i. `statfs_osts` are the MDS's LustreTargetState rows; an OSS
    counts as failed when it is in `down_oss` (fault markers) or serves none of its own OSTs."""
    m = model or ClusterModel()
    names = sorted({o.oss for o in lu.osts})
    idx = {n: k for k, n in enumerate(names)}
    served_by = {t.index: t.server for t in statfs_osts if t.active}
    failed = set()
    for n in names:
        own = [o.index for o in lu.osts if o.oss == n]
        if (down_oss and n in down_oss) or (own and all(served_by.get(i) != n for i in own)):
            failed.add(idx[n])
    inactive = {t.index for t in statfs_osts if not t.active and t.index < m.ost_count}
    # an OST inactive only because its OSS failed is the failover's business, not its own fault
    inactive = {i for i in inactive if (i // (len(lu.osts) // max(1, len(names)))) not in failed}
    full = {t.index for t in statfs_osts if t.full and t.index < m.ost_count}
    return LiveState(frozenset(k for k in failed if k < m.oss), frozenset(inactive), frozenset(full))
