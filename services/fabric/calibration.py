"""The numbers the collective-time model is calibrated to (FIDELITY.md §3), and the α/β parameters
derived from them. Pure: constants and arithmetic, no I/O.

Bandwidths are in GB/s (1e9 bytes/s, as nccl-tests prints them), latencies in microseconds.

Peak. "Efficiency" of a multi-server all-reduce is its nccl-tests bus bandwidth divided by
`peak_busbw()`: the bus-bandwidth limit of one server's inter-node NICs, `rails × nic_gbps`
(8 × 48 = 384 GB/s). It is the asymptote of the ring's busbw over more than one server: in NCCL's
rail-aligned flat ring every server is entered and left once per channel, one channel per rail, so
each NIC carries exactly one channel's bus traffic. (NVLink is not the bound there: each GPU sends
only 7 of its 8 channels over NVLink, so NVLink's limit is 370 × 8/7 ≈ 423 GB/s.)

Ring step latency. A ring collective is 2(N−1) (all-reduce) or N−1 steps; over more than one server
every step waits for its slowest hop, an InfiniBand one. A pure affine model `T = L + S/B` cannot
give both ~31 % at 1 GiB and ~92 % at 16 GiB over 1024 GPUs with B at or below peak: it would need
B ≈ 1.06 × peak. So an IB step costs `ib_step_us` that is never hidden (NCCL protocol, proxy and
NIC latency) plus a minimum step period `ib_min_step_us` (the flow-control round trip: a step
cannot finish before the receiver has freed its slot) that the step's transfer overlaps:

    T = steps·ib_step + max(steps·ib_min_step, busfactor·S/B)

The two are solved from the two FIDELITY points in `derive_ib_alphas()`; the rounded defaults
below are its answer (a unit test checks they agree).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

GIB = 1 << 30
MIB = 1 << 20


@dataclass(frozen=True)
class Calibration:
    gpus_per_server: int = 8
    rails: int = 8  # compute NICs per server, one per GPU, one rail each
    # Bandwidths (GB/s)
    nic_gbps: float = 48.0  # one 400G NDR NIC through NCCL: 46-49 GB/s (line 50 GB/s)
    nvlink_ring_busbw: float = 370.0  # NVLink ring busbw, 8 x H100 (line 450 GB/s per direction)
    nvls_busbw: float = 480.0  # NVLS (NVLink SHARP) all-reduce busbw, 8 x H100
    # Latencies (µs)
    nvlink_step_us: float = 1.5  # one ring step over NVLink
    nvls_latency_us: float = 10.0  # one NVLS collective inside a server (multimem load-reduce + store)
    ib_step_us: float = 3.80  # never-hidden part of one ring/tree step over IB (see module doc)
    ib_min_step_us: float = 5.01  # minimum period of one IB step, overlapped by its transfer
    switch_hop_us: float = 0.6  # one Quantum-2 switch traversal (cut-through)
    # Algorithm-specific factors
    tree_bw_fraction: float = 0.30  # tree's effective share of the NICs' bandwidth at scale (see below)
    sharp_bw_fraction: float = 1.0  # SHARP's share of NIC bandwidth: no public multi-node H100 number
    sharp_hops: int = 2  # SHARP latency: ~2 switch hops (leaf and spine aggregation nodes)
    # The FIDELITY points the IB step latencies are calibrated to
    calib_gpus: int = 1024
    calib_small_bytes: int = GIB
    calib_small_efficiency: float = 0.31
    calib_large_bytes: int = 16 * GIB
    calib_large_efficiency: float = 0.92

    # tree_bw_fraction: NCCL's tree is hierarchical (an NVLink chain inside a server, a double binary
    # tree between servers), so its latency is ~2·log2(n) IB steps instead of the ring's 2(N−1).
    # With the NICs' full bandwidth it would reach ~97 % of peak at 1 GiB over 1024 GPUs; the
    # measured ~31 % says NCCL still ran the ring there, so the tree's effective bandwidth at that
    # scale is at most ~31 % of the NICs' (NCCL's own tuner caps tree bandwidth per channel and
    # scales it down for medium sizes). 0.30 keeps the tree the choice for small messages only.

    def peak_busbw(self) -> float:
        """The bus-bandwidth limit of one server's inter-node NICs: what 'efficiency' divides by."""
        return self.rails * self.nic_gbps

    def as_params(self) -> dict[str, float | int]:
        return asdict(self)


DEFAULT = Calibration()


def derive_ib_alphas(cal: Calibration = DEFAULT) -> tuple[float, float]:
    """(ib_step_us, ib_min_step_us) that make the flat ring over `calib_gpus` GPUs hit both
    efficiency points exactly, against `peak_busbw()`. Requires the small point latency-bound
    (true for the FIDELITY numbers)."""
    n = cal.calib_gpus
    steps = 2 * (n - 1)
    busfactor = 2 * (n - 1) / n
    peak = cal.peak_busbw() * 1e9

    def bw_time(size: int) -> float:
        return busfactor * size / peak

    # Large point, bandwidth-bound: T = steps·a0 + bw  =>  a0 = bw·(1/eff − 1)/steps
    a0 = bw_time(cal.calib_large_bytes) * (1 / cal.calib_large_efficiency - 1) / steps
    # Small point, latency-bound: T = steps·(a0 + a1) = bw/eff
    a1 = bw_time(cal.calib_small_bytes) / cal.calib_small_efficiency / steps - a0
    return a0 * 1e6, a1 * 1e6
