"""The pure parts of `twin train --real`: the torchrun commands (real_plan) and the figures read from
rank 0's progress events (real_figures). No processes, no twin."""

from __future__ import annotations

import pytest

from workloads.train.real_figures import attempts, figures, predicted_allreduce
from workloads.train.real_plan import RDZV_PORT, Node, plan


def nodes(n: int) -> list[Node]:
    return [Node(f"gpu00{i + 1}", f"ct0-gpu00{i + 1}", tuple(f"10.100.{16 * r}.{i + 1}" for r in range(8)), 2,
                 {"CUDA_VISIBLE_DEVICES": "0,1"}) for i in range(n)]


def flag(argv: tuple[str, ...], name: str) -> str:
    return next(a.split("=", 1)[1] for a in argv if a.startswith(f"--{name}="))


def test_only_the_first_node_hosts_the_rendezvous_on_its_rail0_address() -> None:
    launches = plan(nodes(3), "job", ["--steps", "5"])
    assert [la.server for la in launches] == ["gpu001", "gpu002", "gpu003"]
    for i, la in enumerate(launches):
        assert flag(la.argv, "rdzv-endpoint") == f"10.100.0.1:{RDZV_PORT}"
        assert flag(la.argv, "local-addr") == f"10.100.0.{i + 1}"
        assert ("is_host=true" in flag(la.argv, "rdzv-conf")) == (i == 0)
        assert flag(la.argv, "nnodes") == "2:3" and flag(la.argv, "nproc-per-node") == "2"
        assert la.argv[-2:] == ("--steps", "5")
        assert la.env["CUDA_VISIBLE_DEVICES"] == "0,1" and la.env["TORCH_DISABLE_SHARE_RDZV_TCP_STORE"] == "1"


def test_the_rendezvous_moves_to_the_rail_given() -> None:
    launches = plan(nodes(2), "job", [], rail=4)
    assert [flag(la.argv, "local-addr") for la in launches] == ["10.100.64.1", "10.100.64.2"]
    assert flag(launches[1].argv, "rdzv-endpoint") == f"10.100.64.1:{RDZV_PORT}"
    with pytest.raises(ValueError, match="rail 8 is not a compute rail"):
        plan(nodes(2), "job", [], rail=8)


def test_bad_plans_are_refused() -> None:
    with pytest.raises(ValueError, match="no servers"):
        plan([], "job", [])
    with pytest.raises(ValueError, match="min_nodes must be 1..2"):
        plan(nodes(2), "job", [], min_nodes=3)
    assert flag(plan(nodes(1), "job", [])[0].argv, "nnodes") == "1:1"


def test_the_join_timeout_is_the_rendezvous_conf() -> None:
    assert "join_timeout=120," in flag(plan(nodes(2), "job", [])[0].argv, "rdzv-conf")
    assert all("join_timeout=30," in flag(la.argv, "rdzv-conf") for la in plan(nodes(2), "job", [], join_timeout_s=30))


EVENTS = [
    {"t": 100.0, "kind": "started", "world": 6, "restart": 0, "resumed_from": None, "dataset_files": 0},
    {"t": 101.0, "kind": "allreduce", "bytes": 1 << 20, "world": 6, "median_s": 0.04},
    {"t": 102.0, "kind": "step", "step": 1},
    {"t": 104.0, "kind": "checkpoint", "step": 50},
    {"t": 106.0, "kind": "step", "step": 120},
    {"t": 150.0, "kind": "started", "world": 4, "restart": 1, "resumed_from": 50},
    {"t": 151.0, "kind": "allreduce", "bytes": 1 << 20, "world": 4, "median_s": 0.03},
    {"t": 152.5, "kind": "step", "step": 51},
    {"t": 160.0, "kind": "finished", "step": 300, "steps": 250, "seconds": 8.0, "steps_per_s": 31.25},
]


def test_figures_from_the_events_of_a_restarted_group() -> None:
    f = figures({"events": EVENTS}, per_server=2, bandwidth_scale=0.001, fault_t=107.0)
    assert f["ranks_started"] == [6, 4] and f["steps_per_s"] == 31.25 and f["last_step"] == 300
    assert f["fault_to_resumed_s"] == pytest.approx(45.5) and f["resumed_from_step"] == 50
    assert f["checkpoints"] == [50] and f["checkpoints_at"] == [(50, 104.0)] and f["dataset_files"] == 0
    ar = f["allreduce"]
    assert ar["ranks"] == 6 and ar["measured_s"] == 0.04  # the full group's, before the fault
    assert ar["measured_over_predicted"] == pytest.approx(0.04 / ar["predicted"]["time_s"])
    assert [a["first_step_t"] for a in attempts(EVENTS)] == [102.0, 152.5]


def test_no_resume_after_the_fault_is_said() -> None:
    f = figures({"events": EVENTS[:5]}, per_server=2, bandwidth_scale=0.001, fault_t=107.0)
    assert f["fault_to_resumed_s"] is None and f["steps_per_s"] is None


def test_the_prediction_scales_the_nics_as_the_twin_shapes_its_rails() -> None:
    full = predicted_allreduce(1 << 20, 6, 2, None)
    scaled = predicted_allreduce(1 << 20, 6, 2, 0.001)
    assert scaled["nic_gbps"] == pytest.approx(0.048) and full["nic_gbps"] == 48.0
    # NIC-bound at 1/1000: the bandwidth term, 2(N-1)/N * S over two ranks' NICs per server.
    assert scaled["time_s"] == pytest.approx(2 * 5 / 6 * (1 << 20) / (2 * 0.048e9), rel=0.01)
    assert "error" in predicted_allreduce(1 << 20, 5, 2, 0.001)  # 5 ranks do not fill servers of 2


def test_the_prediction_follows_the_rails_the_ranks_found_up() -> None:
    full = predicted_allreduce(1 << 20, 6, 2, 0.001, rails_up=8)
    half = predicted_allreduce(1 << 20, 6, 2, 0.001, rails_up=4)
    assert full["time_s"] == pytest.approx(predicted_allreduce(1 << 20, 6, 2, 0.001)["time_s"])
    assert half["time_s"] == pytest.approx(2 * full["time_s"], rel=0.05) and "4/8 rails up" in half["bottleneck"]
