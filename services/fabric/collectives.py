"""A calibrated collective-time model: how long an NCCL collective takes on the twin's cluster, and
with which nccl-tests bandwidths. Pure: arithmetic over a `FabricView`, no I/O, no clock. Every
answer is a model (`Estimate.modelled` is True) and carries the parameters it used.

`estimate(op, size_bytes, gpus, algorithm, fabric)`:

- ops: all_reduce, all_gather, reduce_scatter, broadcast, all_to_all. nccl-tests conventions:
  algbw = S / T; busbw = algbw × 2(N−1)/N (all_reduce), × (N−1)/N (all_gather, reduce_scatter,
  all_to_all), × 1 (broadcast). S is the per-rank buffer nccl-tests reports as "size".
- ring (flat, NCCL's ring over all N ranks, one channel per rail):
  `T = steps·α + max(steps·α_min, busfactor·S/B)`, steps = 2(N−1) for all_reduce, N−1 otherwise.
  Inside one server α is an NVLink step and B the NVLink ring busbw (370 GB/s). Across servers
  every step waits for an IB hop (α = `ib_step_us`, α_min = `ib_min_step_us`, see calibration.py)
  and B = min over the servers of their NIC bandwidth (rails up × 48 GB/s ÷ spine congestion) and
  the NVLink share (370 × g/(g−1)): the slowest member bounds the ring.
- tree (all_reduce across servers): NVLink chain inside, double binary tree between servers:
  `T ≈ 2·(log2(n)·α_ib + (g−1)·α_nvl) + max(2·S/(f_tree·B_nic), busfactor·S/B_nvl)`.
- nvls (all_reduce, all_gather, reduce_scatter inside one server; all_reduce across servers as
  NCCL's NVLS-tree: NVLS inside, the tree between servers): busbw 480 GB/s inside a server.
- sharp (all_reduce across servers, only when the fabric grants SHARP trees): NVLS inside a server,
  in-network reduction between servers, each byte sent once: inter-node term `(S/g)/B_nic` per rail
  = S/(rails·B_nic), latency ~`sharp_hops` switch hops. Pipelined with the NVLS part.
- all_to_all: pairwise; across servers its busbw is bounded by each GPU's share of the NICs.
- auto: the fastest of the algorithms that apply, as NCCL's tuner picks.

Layout: `gpus_per_server` ranks of the collective on each server (default: 8, or N if fewer). The
3D-parallel data-parallel groups have one rank per server (TP fills the server), each rank on its
own rail: pass `gpus_per_server=1`; a rank then gets one NIC (less if its server lost rails).

`step_comm_time(...)` turns these into the exposed communication of one training step of the
seed's 3D parallelism (TP inside a server, PP across servers, DP across replicas).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from emulator.errors import BadInput
from services.fabric.calibration import DEFAULT, Calibration
from services.fabric.model import CA, FabricState

OPS = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "all_to_all")
ALGORITHMS = ("auto", "ring", "tree", "nvls", "sharp")
US = 1e-6


class CollectiveError(BadInput):
    """The collective cannot run as asked (bad input, or the fabric cannot carry it)."""


@dataclass(frozen=True)
class FabricView:
    """What the model reads of the live fabric. Pure data.

    `rails_up`: per server of the job (name -> compute NICs Active); None means every server
    healthy. A view of a whole job may list more servers than one collective spans: the slowest
    listed server bounds, as a training step waits for its slowest group.
    `congestion`: worst spine-link sharing (flows per uplink of route balance, ≥ 1); divides the
    inter-node bandwidth. `sharp`: the aggregation manager granted this job SHARP trees.
    """

    rails_up: Mapping[str, int] | None = None
    rails: int = 8
    congestion: float = 1.0
    sharp: bool = False

    @classmethod
    def healthy(cls, servers: int | None = None, rails: int = 8, sharp: bool = False) -> FabricView:
        ups = None if servers is None else {f"gpu{i + 1:03d}": rails for i in range(servers)}
        return cls(rails_up=ups, rails=rails, sharp=sharp)

    @classmethod
    def from_state(cls, state: FabricState, servers: Sequence[str], rails: int = 8, busiest_flows: int = 1,
                   sharp: bool = False) -> FabricView:
        """From the subnet manager's view: a server's rails up are its HCAs ("gpu001 mlx5_3")
        whose port is Active. `busiest_flows` is `BalanceReport.busiest()` of the job's ring."""
        ups = dict.fromkeys(servers, 0)
        for (guid, _port), p in state.ports.items():
            system = state.systems.get(guid)
            if system is None or system.kind != CA or not p.active:
                continue
            server = system.description.split(" ", 1)[0]
            if server in ups:
                ups[server] += 1
        return cls(rails_up={s: min(n, rails) for s, n in ups.items()}, rails=rails,
                   congestion=float(max(1, busiest_flows)), sharp=sharp)

    def slowest(self, servers: int) -> tuple[str | None, int]:
        """(name, rails up) of the worst server, checking the view covers `servers` servers."""
        if self.rails_up is None:
            return None, self.rails
        if len(self.rails_up) < servers:
            raise CollectiveError(f"the fabric view lists {len(self.rails_up)} servers, the collective spans {servers}")
        dead = sorted(name for name, up in self.rails_up.items() if up <= 0)
        if dead:
            raise CollectiveError(f"server {dead[0]} has no compute rail up: a collective over it cannot run"
                                  + (f" ({len(dead)} such servers)" if len(dead) > 1 else ""))
        name = min(self.rails_up, key=lambda s: (self.rails_up[s] if self.rails_up else 0, s))
        return name, self.rails_up[name]


HEALTHY = FabricView()


@dataclass(frozen=True)
class Estimate:
    op: str
    size_bytes: int
    gpus: int
    algorithm: str
    time_s: float
    algbw_gbps: float
    busbw_gbps: float
    bottleneck: str
    terms: Mapping[str, float] = field(default_factory=dict)  # latency_s, intra_s, inter_s
    params: Mapping[str, float | int | str | bool] = field(default_factory=dict)
    modelled: bool = True

    def efficiency(self, cal: Calibration = DEFAULT) -> float:
        """busbw as a fraction of `Calibration.peak_busbw()` (the inter-node NICs' bus limit)."""
        return self.busbw_gbps / cal.peak_busbw()


def bus_factor(op: str, n: int) -> float:
    if op == "all_reduce":
        return 2 * (n - 1) / n
    if op == "broadcast":
        return 1.0
    return (n - 1) / n


@dataclass(frozen=True)
class _Layout:
    n_gpus: int
    per_server: int  # g
    servers: int  # n
    nic_bw: float  # bytes/s one server's NICs give this collective (slowest server)
    slow_server: str | None
    slow_rails: int


def _layout(gpus: int, gpus_per_server: int | None, fabric: FabricView, cal: Calibration) -> _Layout:
    g = gpus_per_server if gpus_per_server is not None else min(gpus, cal.gpus_per_server)
    if not 1 <= g <= cal.gpus_per_server:
        raise CollectiveError(f"gpus_per_server must be 1..{cal.gpus_per_server}, not {g}")
    if gpus % g:
        raise CollectiveError(f"{gpus} GPUs do not fill servers of {g}")
    n = gpus // g
    if n == 1:
        return _Layout(gpus, g, 1, math.inf, None, fabric.rails)
    if fabric.congestion < 1:
        raise CollectiveError(f"congestion is a sharing factor >= 1, not {fabric.congestion}")
    name, up = fabric.slowest(n)
    up = min(up, fabric.rails)
    # The ranks on a server use min(g, rails) NICs; rails down spread that traffic over the rest.
    nic = min(g, fabric.rails) * cal.nic_gbps * 1e9 * up / fabric.rails / fabric.congestion
    return _Layout(gpus, g, n, nic, name, up)


def _ring(op: str, size: int, lay: _Layout, cal: Calibration) -> tuple[float, dict[str, float], str]:
    n = lay.n_gpus
    steps = 2 * (n - 1) if op == "all_reduce" else n - 1
    bf = bus_factor(op, n)
    nvl = cal.nvlink_ring_busbw * 1e9
    if lay.servers == 1:
        lat = steps * cal.nvlink_step_us * US
        bw = bf * size / nvl
        return lat + bw, {"latency_s": lat, "intra_s": bw, "inter_s": 0.0}, "latency" if lat > bw else "nvlink"
    g = lay.per_server
    nvl_share = nvl * g / (g - 1) if g > 1 else math.inf
    intra = bf * size / nvl_share
    inter = bf * size / lay.nic_bw
    fixed = steps * cal.ib_step_us * US
    floor = steps * cal.ib_min_step_us * US
    t = fixed + max(floor, intra, inter)
    if fixed + floor > max(intra, inter):
        neck = f"latency ({steps} ring steps over IB)"
    elif inter >= intra:
        neck = _nic_neck(lay, cal)
    else:
        neck = "nvlink"
    return t, {"latency_s": fixed + floor, "intra_s": intra, "inter_s": inter}, neck


def _nic_neck(lay: _Layout, cal: Calibration) -> str:
    if lay.slow_server is not None and lay.slow_rails < cal.rails:
        return f"nic ({lay.slow_server}: {lay.slow_rails}/{cal.rails} rails up)"
    return "nic"


def _tree_inter(size: int, lay: _Layout, cal: Calibration) -> tuple[float, float]:
    """(latency, bandwidth time) of the inter-server double binary tree."""
    lat = 2 * math.log2(lay.servers) * (cal.ib_step_us + cal.ib_min_step_us) * US
    return lat, 2 * size / (cal.tree_bw_fraction * lay.nic_bw)


def _tree(size: int, lay: _Layout, cal: Calibration) -> tuple[float, dict[str, float], str]:
    g = lay.per_server
    ilat, inter = _tree_inter(size, lay, cal)
    lat = ilat + 2 * (g - 1) * cal.nvlink_step_us * US
    intra = bus_factor("all_reduce", g) * size / (cal.nvlink_ring_busbw * 1e9) if g > 1 else 0.0
    neck = "latency" if lat > max(intra, inter) else (_nic_neck(lay, cal) + ", tree" if inter >= intra else "nvlink")
    return lat + max(intra, inter), {"latency_s": lat, "intra_s": intra, "inter_s": inter}, neck


def _nvls(op: str, size: int, lay: _Layout, cal: Calibration) -> tuple[float, dict[str, float], str]:
    g = lay.per_server
    lat = cal.nvls_latency_us * US
    intra = bus_factor(op, g) * size / (cal.nvls_busbw * 1e9)
    if lay.servers == 1:
        return lat + intra, {"latency_s": lat, "intra_s": intra, "inter_s": 0.0}, "latency" if lat > intra else "nvls"
    ilat, inter = _tree_inter(size, lay, cal)
    lat += ilat
    neck = "latency" if lat > max(intra, inter) else (_nic_neck(lay, cal) + ", tree" if inter >= intra else "nvls")
    return lat + max(intra, inter), {"latency_s": lat, "intra_s": intra, "inter_s": inter}, neck


def _sharp(size: int, lay: _Layout, cal: Calibration) -> tuple[float, dict[str, float], str]:
    g = lay.per_server
    lat = (cal.ib_step_us + 2 * cal.sharp_hops * cal.switch_hop_us) * US
    intra = 0.0
    if g > 1:
        lat += cal.nvls_latency_us * US
        intra = bus_factor("all_reduce", g) * size / (cal.nvls_busbw * 1e9)
    inter = size / (cal.sharp_bw_fraction * lay.nic_bw)  # (S/g) per rail, each byte once
    neck = "latency" if lat > max(intra, inter) else (_nic_neck(lay, cal) + ", sharp" if inter >= intra else "nvls")
    return lat + max(intra, inter), {"latency_s": lat, "intra_s": intra, "inter_s": inter}, neck


def _all_to_all(size: int, lay: _Layout, cal: Calibration) -> tuple[float, dict[str, float], str]:
    n, g = lay.n_gpus, lay.per_server
    nvl = cal.nvlink_ring_busbw * 1e9
    intra = (g - 1) / n * size / nvl if g > 1 else 0.0
    lat = (g - 1) * cal.nvlink_step_us * US
    inter = 0.0
    if lay.servers > 1:
        # Each server sends g·S·(N−g)/N bytes off the server over its NICs, pairwise with every other.
        inter = g * size * (n - g) / n / lay.nic_bw
        lat += (lay.servers - 1) * cal.ib_step_us * US + cal.ib_min_step_us * US
    neck = "latency" if lat > max(intra, inter) else (_nic_neck(lay, cal) if inter >= intra else "nvlink")
    return lat + max(intra, inter), {"latency_s": lat, "intra_s": intra, "inter_s": inter}, neck


def _applicable(op: str, lay: _Layout, fabric: FabricView) -> list[str]:
    if op == "all_to_all":
        return ["pairwise"]
    algos = ["ring"]
    if lay.servers == 1:
        if lay.per_server > 1 and op in ("all_reduce", "all_gather", "reduce_scatter"):
            algos.append("nvls")
        return algos
    if op == "all_reduce":
        algos.append("tree")
        if lay.per_server > 1:
            algos.append("nvls")
        if fabric.sharp:
            algos.append("sharp")
    return algos


def estimate(op: str, size_bytes: int, gpus: int, algorithm: str = "auto", fabric: FabricView = HEALTHY,
             gpus_per_server: int | None = None, cal: Calibration = DEFAULT) -> Estimate:
    """Modelled time and nccl-tests bandwidths of one collective. Raises CollectiveError."""
    if op not in OPS:
        raise CollectiveError(f"unknown op {op!r}: one of {', '.join(OPS)}")
    if algorithm not in ALGORITHMS:
        raise CollectiveError(f"unknown algorithm {algorithm!r}: one of {', '.join(ALGORITHMS)}")
    if gpus < 1:
        raise CollectiveError(f"gpus must be >= 1, not {gpus}")
    if size_bytes < 0:
        raise CollectiveError(f"size_bytes must be >= 0, not {size_bytes}")
    lay = _layout(gpus, gpus_per_server, fabric, cal)
    params: dict[str, float | int | str | bool] = {
        **cal.as_params(), "gpus_per_server_used": lay.per_server, "servers": lay.servers,
        "congestion": fabric.congestion, "sharp_granted": fabric.sharp, "slowest_rails_up": lay.slow_rails}
    if gpus == 1 or size_bytes == 0:
        return Estimate(op, size_bytes, gpus, "none", 0.0, 0.0, 0.0, "none (nothing to move)", {}, params)
    applicable = _applicable(op, lay, fabric)
    if algorithm == "auto":
        candidates = applicable
    elif algorithm in applicable:
        candidates = [algorithm]
    else:
        where = "inside one server" if lay.servers == 1 else f"across {lay.servers} servers"
        why = " (the fabric granted no SHARP trees)" if algorithm == "sharp" and lay.servers > 1 else ""
        raise CollectiveError(f"{algorithm} does not run {op} {where}{why}: use one of {', '.join(applicable)}")
    best: tuple[float, dict[str, float], str, str] | None = None
    for algo in candidates:
        t, terms, neck = _run(algo, op, size_bytes, lay, cal)
        if best is None or t < best[0]:
            best = (t, terms, neck, algo)
    assert best is not None
    t, terms, neck, algo = best
    algbw = size_bytes / t / 1e9
    return Estimate(op, size_bytes, gpus, algo, t, algbw, algbw * bus_factor(op, gpus), neck, terms, params)


def _run(algo: str, op: str, size: int, lay: _Layout, cal: Calibration) -> tuple[float, dict[str, float], str]:
    if algo == "ring":
        return _ring(op, size, lay, cal)
    if algo == "tree":
        return _tree(size, lay, cal)
    if algo == "nvls":
        return _nvls(op, size, lay, cal)
    if algo == "sharp":
        return _sharp(size, lay, cal)
    return _all_to_all(size, lay, cal)


@dataclass(frozen=True)
class StepComm:
    """Exposed communication of one training step (a model)."""

    dp_s: float  # DP gradient sync not hidden behind backward
    pp_s: float  # pipeline point-to-point on the critical path (fill and drain)
    total_s: float
    dp_estimates: tuple[Estimate, ...]
    pp_estimate: Estimate | None
    params: Mapping[str, float | int | str | bool]
    modelled: bool = True


def step_comm_time(model_params: int, dtype_bytes: int, tp: int = 8, pp: int = 4, dp: int = 32, zero_stage: int = 1,
                   fabric: FabricView = HEALTHY, pp_activation_bytes: int = 0, dp_overlap: float = 0.0,
                   cal: Calibration = DEFAULT) -> StepComm:
    """Exposed communication per step of TP × PP × DP training (the seed: TP 8 in a server, PP 4
    across servers, DP 32).

    - DP: each DP group holds one rank per (pipeline stage, TP rank), one per server on its own rail
      (TP fills the server), and syncs model_params/(tp·pp) × dtype_bytes of gradients. ZeRO 0:
      one all-reduce; ZeRO-1/2: reduce-scatter of gradients, then all-gather of the updated
      parameters (the same bytes as an all-reduce, in two collectives). The 8 groups of a server run
      at once, one per rail. `dp_overlap` is the fraction hidden behind backward (0 = all exposed).
    - PP: with 1F1B the steady-state sends hide behind compute; the pipeline fill and drain expose
      2·(pp−1) point-to-point transfers of `pp_activation_bytes` (one micro-batch's activations of
      one TP rank), one rank to one rank over one rail.
    - TP all-reduces run over NVLink inside the compute of each layer and are not counted here.
    """
    if model_params <= 0 or dtype_bytes <= 0:
        raise CollectiveError("model_params and dtype_bytes must be positive")
    if min(tp, pp, dp) < 1:
        raise CollectiveError(f"tp, pp, dp must be >= 1, not {tp}, {pp}, {dp}")
    if cal.gpus_per_server % tp:
        raise CollectiveError(f"TP {tp} must divide the {cal.gpus_per_server} GPUs of a server")
    if zero_stage not in (0, 1, 2):
        raise CollectiveError(f"zero_stage must be 0, 1 or 2, not {zero_stage} (ZeRO-3 is not modelled)")
    if not 0.0 <= dp_overlap <= 1.0:
        raise CollectiveError(f"dp_overlap is a fraction, not {dp_overlap}")
    if pp_activation_bytes < 0:
        raise CollectiveError("pp_activation_bytes must be >= 0")
    ranks_per_server = cal.gpus_per_server // tp  # DP ranks of one group on one server
    grad_bytes = math.ceil(model_params / (tp * pp)) * dtype_bytes
    dp_estimates: tuple[Estimate, ...] = ()
    dp_raw = 0.0
    if dp > 1:
        g = math.gcd(ranks_per_server, dp)
        if zero_stage == 0:
            dp_estimates = (estimate("all_reduce", grad_bytes, dp, fabric=fabric, gpus_per_server=g, cal=cal),)
        else:
            # nccl-tests sizes: reduce_scatter reports the input (all gradients), all_gather the output.
            dp_estimates = (estimate("reduce_scatter", grad_bytes, dp, fabric=fabric, gpus_per_server=g, cal=cal),
                            estimate("all_gather", grad_bytes, dp, fabric=fabric, gpus_per_server=g, cal=cal))
        dp_raw = sum(e.time_s for e in dp_estimates)
    pp_est = None
    pp_s = 0.0
    if pp > 1 and pp_activation_bytes:
        pp_est = _p2p(pp_activation_bytes, fabric, cal)
        pp_s = 2 * (pp - 1) * pp_est.time_s
    dp_s = dp_raw * (1.0 - dp_overlap)
    params: dict[str, float | int | str | bool] = {
        "model_params": model_params, "dtype_bytes": dtype_bytes, "tp": tp, "pp": pp, "dp": dp,
        "zero_stage": zero_stage, "grad_bytes_per_dp_group": grad_bytes, "dp_overlap": dp_overlap,
        "pp_activation_bytes": pp_activation_bytes, "dp_ranks_per_server": ranks_per_server}
    return StepComm(dp_s, pp_s, dp_s + pp_s, dp_estimates, pp_est, params)


def _p2p(size: int, fabric: FabricView, cal: Calibration) -> Estimate:
    """One rank to one rank on the next server, over its rail (nccl-tests sendrecv conventions)."""
    lay = _layout(2, 1, fabric, cal)
    lat = (cal.ib_step_us + cal.ib_min_step_us) * US
    bw = size / lay.nic_bw
    t = lat + bw
    algbw = size / t / 1e9
    neck = "latency" if lat > bw else _nic_neck(lay, cal)
    return Estimate("send_recv", size, 2, "p2p", t, algbw, algbw, neck,
                    {"latency_s": lat, "intra_s": 0.0, "inter_s": bw}, cal.as_params())
