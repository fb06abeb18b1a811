"""The calibrated collective-time model against FIDELITY.md §3."""

from __future__ import annotations

import pytest

from services.fabric.calibration import DEFAULT, GIB, MIB, derive_ib_alphas
from services.fabric.collectives import (
    CollectiveError,
    FabricView,
    bus_factor,
    estimate,
    step_comm_time,
)
from services.fabric.model import CA, SWITCH, FabricState, Port, System


def view(servers: int, **down: int) -> FabricView:
    ups = {f"gpu{i + 1:03d}": 8 for i in range(servers)}
    ups.update(down)
    return FabricView(rails_up=ups)


def test_nvlink_ring_busbw_8_gpus() -> None:
    e = estimate("all_reduce", 16 * GIB, 8, "ring")
    assert e.busbw_gbps == pytest.approx(370, rel=0.02)
    assert e.modelled and e.params["nvlink_ring_busbw"] == 370.0


def test_nvls_busbw_8_gpus_and_auto_prefers_it() -> None:
    assert estimate("all_reduce", 16 * GIB, 8, "nvls").busbw_gbps == pytest.approx(480, rel=0.02)
    assert estimate("all_reduce", 16 * GIB, 8).algorithm == "nvls"


def test_one_nic_between_two_servers() -> None:
    e = estimate("all_reduce", 16 * GIB, 2, gpus_per_server=1)
    assert 46 <= e.busbw_gbps <= 49
    assert e.bottleneck == "nic"


@pytest.mark.parametrize(("size", "target"), [(GIB, 0.31), (16 * GIB, 0.92)])
def test_1024_gpu_all_reduce_efficiency(size: int, target: float) -> None:
    e = estimate("all_reduce", size, 1024)
    assert e.efficiency() == pytest.approx(target, rel=0.02)
    assert e.algorithm == "ring"
    assert DEFAULT.peak_busbw() == 8 * 48.0


def test_rounded_alphas_match_their_derivation() -> None:
    a0, a1 = derive_ib_alphas()
    assert DEFAULT.ib_step_us == pytest.approx(a0, abs=0.01)
    assert DEFAULT.ib_min_step_us == pytest.approx(a1, abs=0.01)


@pytest.mark.parametrize("gpus", [2, 8, 64, 1024])
@pytest.mark.parametrize(("op", "factor"), [("all_reduce", lambda n: 2 * (n - 1) / n),
                                            ("all_gather", lambda n: (n - 1) / n),
                                            ("reduce_scatter", lambda n: (n - 1) / n),
                                            ("all_to_all", lambda n: (n - 1) / n),
                                            ("broadcast", lambda n: 1.0)])
def test_busbw_conventions(gpus: int, op: str, factor) -> None:  # type: ignore[no-untyped-def]
    e = estimate(op, 256 * MIB, gpus)
    assert e.algbw_gbps == pytest.approx(256 * MIB / e.time_s / 1e9)
    assert e.busbw_gbps == pytest.approx(e.algbw_gbps * factor(gpus))
    assert bus_factor(op, gpus) == pytest.approx(factor(gpus))


@pytest.mark.parametrize(("op", "algorithm"), [
    *((op, alg) for op in ("all_reduce", "all_gather", "reduce_scatter", "broadcast") for alg in ("auto", "ring")),
    ("all_to_all", "auto"),   # all_to_all is pairwise: it has no ring
])
@pytest.mark.parametrize("gpus", [8, 64, 1024])
def test_monotonic_in_size(op: str, gpus: int, algorithm: str) -> None:
    sizes = [1 << k for k in range(3, 37)]
    runs = [estimate(op, s, gpus, algorithm) for s in sizes]
    times = [e.time_s for e in runs]
    algbws = [e.algbw_gbps for e in runs]
    assert times == sorted(times)
    assert all(b >= a * (1 - 1e-9) for a, b in zip(algbws, algbws[1:], strict=False))


@pytest.mark.parametrize("gpus", [8, 64, 1024])
def test_small_sizes_are_latency_dominated(gpus: int) -> None:
    tiny, small = estimate("all_reduce", 8, gpus), estimate("all_reduce", 4096, gpus)
    assert tiny.bottleneck.startswith("latency")
    assert small.time_s == pytest.approx(tiny.time_s, rel=0.05)
    assert tiny.busbw_gbps < 0.01


def test_flat_ring_latency_over_1024_gpus() -> None:
    e = estimate("all_reduce", MIB, 1024, "ring")
    assert e.time_s == pytest.approx(2046 * (DEFAULT.ib_step_us + DEFAULT.ib_min_step_us) * 1e-6, rel=1e-3)


@pytest.mark.parametrize(("up", "factor"), [(7, 7 / 8), (4, 4 / 8), (1, 1 / 8)])
def test_a_rail_down_slows_the_whole_ring_to_that_server(up: int, factor: float) -> None:
    healthy = estimate("all_reduce", 64 * GIB, 64, "ring", view(8))
    hurt = estimate("all_reduce", 64 * GIB, 64, "ring", view(8, gpu003=up))
    assert hurt.terms["inter_s"] == pytest.approx(healthy.terms["inter_s"] / factor)
    assert hurt.busbw_gbps / healthy.busbw_gbps == pytest.approx(factor, rel=0.02)
    assert hurt.bottleneck == f"nic (gpu003: {up}/8 rails up)"
    assert hurt.params["slowest_rails_up"] == up


def test_a_rail_down_at_1024_gpus() -> None:
    healthy = estimate("all_reduce", 16 * GIB, 1024, fabric=view(128))
    hurt = estimate("all_reduce", 16 * GIB, 1024, fabric=view(128, gpu077=7))
    assert hurt.terms["inter_s"] == pytest.approx(healthy.terms["inter_s"] * 8 / 7)
    assert hurt.time_s > healthy.time_s


def test_congestion_divides_inter_node_bandwidth() -> None:
    calm = estimate("all_reduce", 64 * GIB, 64, "ring", FabricView())
    busy = estimate("all_reduce", 64 * GIB, 64, "ring", FabricView(congestion=2.0))
    assert busy.terms["inter_s"] == pytest.approx(2 * calm.terms["inter_s"])


def test_all_rails_down_on_a_server_is_an_error() -> None:
    with pytest.raises(CollectiveError, match="gpu005 has no compute rail up"):
        estimate("all_reduce", GIB, 1024, fabric=view(128, gpu005=0))
    with pytest.raises(CollectiveError, match="no compute rail up"):
        step_comm_time(10**9, 2, fabric=view(128, gpu100=0))


def test_one_server_does_not_need_rails() -> None:
    assert estimate("all_reduce", GIB, 8, fabric=view(1, gpu001=0)).busbw_gbps > 400


def test_sharp_beats_the_ring_at_scale_and_sends_each_byte_once() -> None:
    fabric = FabricView(sharp=True)
    for size in (GIB, 16 * GIB):
        sharp = estimate("all_reduce", size, 1024, "sharp", fabric)
        ring = estimate("all_reduce", size, 1024, "ring", fabric)
        assert sharp.time_s < ring.time_s
        # Inter-node bytes: the ring moves 2(N-1)/N·S per rank over the NICs, SHARP S.
        assert sharp.terms["inter_s"] == pytest.approx(ring.terms["inter_s"] / bus_factor("all_reduce", 1024))
    assert estimate("all_reduce", 16 * GIB, 1024, fabric=fabric).algorithm == "sharp"


def test_sharp_needs_granted_trees() -> None:
    with pytest.raises(CollectiveError, match="no SHARP trees"):
        estimate("all_reduce", GIB, 64, "sharp")


@pytest.mark.parametrize(("args", "match"), [
    (("gather", GIB, 8), "unknown op"),
    (("all_reduce", GIB, 8, "bogus"), "unknown algorithm"),
    (("all_reduce", GIB, 0), "gpus must be"),
    (("all_reduce", -1, 8), "size_bytes"),
    (("all_gather", GIB, 64, "nvls"), "nvls does not run all_gather across 8 servers"),
    (("broadcast", GIB, 8, "tree"), "tree does not run broadcast inside one server"),
    (("all_reduce", GIB, 12), "do not fill servers"),
])
def test_bad_input(args: tuple, match: str) -> None:  # type: ignore[type-arg]
    with pytest.raises(CollectiveError, match=match):
        estimate(*args)


def test_view_must_cover_the_collective() -> None:
    with pytest.raises(CollectiveError, match="lists 4 servers"):
        estimate("all_reduce", GIB, 64, fabric=view(4))


def test_from_state_counts_active_hcas() -> None:
    state = FabricState()
    state.systems[1] = System(1, SWITCH, "ib-leaf01", 64, 1, 0, lid=1)
    guid = 100
    for server in ("gpu001", "gpu002"):
        for rail in range(8):
            guid += 1
            state.systems[guid] = System(guid, CA, f"{server} mlx5_{rail}", 1, guid, 0)
            down = server == "gpu002" and rail == 3
            state.ports[(guid, 1)] = Port(guid, 1, guid, "Down" if down else "Active", "LinkUp")
    fv = FabricView.from_state(state, ["gpu001", "gpu002"], busiest_flows=2)
    assert fv.rails_up == {"gpu001": 8, "gpu002": 7}
    assert fv.congestion == 2.0


def test_step_comm_time_for_the_seed() -> None:
    params = 70 * 10**9
    z0 = step_comm_time(params, 2, 8, 4, 32, zero_stage=0)
    z1 = step_comm_time(params, 2, 8, 4, 32, zero_stage=1)
    assert z0.modelled and z1.modelled
    grad = params // 32 * 2
    assert z1.params["grad_bytes_per_dp_group"] == grad
    # One rank per server on its own rail: one NIC's bandwidth, ~48 GB/s busbw.
    (ar,) = z0.dp_estimates
    assert ar.gpus == 32 and ar.params["gpus_per_server_used"] == 1
    assert 46 <= ar.busbw_gbps <= 49
    # Reduce-scatter + all-gather moves what one all-reduce moves.
    assert z1.dp_s == pytest.approx(z0.dp_s, rel=0.01)
    assert [e.op for e in z1.dp_estimates] == ["reduce_scatter", "all_gather"]
    assert z1.pp_s == 0.0 and z1.total_s == z1.dp_s


def test_step_comm_pp_overlap_and_degraded_fabric() -> None:
    base = step_comm_time(70 * 10**9, 2, pp_activation_bytes=64 * MIB)
    assert base.pp_estimate is not None
    assert base.pp_s == pytest.approx(2 * 3 * base.pp_estimate.time_s)
    half = step_comm_time(70 * 10**9, 2, pp_activation_bytes=64 * MIB, dp_overlap=0.5)
    assert half.dp_s == pytest.approx(base.dp_s / 2)
    slow = step_comm_time(70 * 10**9, 2, fabric=view(128, gpu010=4))
    assert slow.dp_s == pytest.approx(base.dp_s * 2, rel=0.01)
    with pytest.raises(CollectiveError, match="ZeRO-3"):
        step_comm_time(10**9, 2, zero_stage=3)
    with pytest.raises(CollectiveError, match="TP 3"):
        step_comm_time(10**9, 2, tp=3)
