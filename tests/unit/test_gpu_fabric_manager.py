"""The NVSwitch fabric manager: NVLink training state per GPU gates leases (CUDA contexts)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import grpc
import pytest

from clustertwin.v1 import gpu_node_pb2 as pb
from clustertwin.v1 import gpu_node_pb2_grpc as pb_grpc
from services.gpu_node.errors import ModelError
from services.gpu_node.model import NodeModel
from services.gpu_node.servicer import GpuNodeServicer
from services.gpu_node.spec import NodeSpec
from tests.unit.test_gpu_servicer import run


def node(**kw: Any) -> NodeModel:
    return NodeModel(NodeSpec(name="gpu007", **kw), 0.0)


def states(m: NodeModel) -> set[str]:
    return {v.fabric_state for v in m.list_gpus()}


def refused(m: NodeModel, call: Any, *words: str) -> ModelError:
    before = json.dumps(m.to_state(), sort_keys=True)
    with pytest.raises(ModelError) as e:
        call()
    assert e.value.code == "FAILED_PRECONDITION"
    for w in words:
        assert w in e.value.message
    assert json.dumps(m.to_state(), sort_keys=True) == before  # the refusal changed nothing
    return e.value


def test_new_node_is_trained_and_serves_leases() -> None:
    m = node()
    v = m.gpu_info(0)
    assert (v.fabric_state, v.fabric_status, v.fabric_bandwidth) == ("Completed", "Success", "Full")
    assert v.fabric_clique_id == 0 and v.fabric_cluster_uuid == "00000000-0000-0000-0000-000000000000"
    assert m.node_info(0.0).fabric_manager_running
    assert not [e for e in m.drain_events() if e["kind"].startswith("fabric")]
    assert m.acquire("j", 0.0, count=8).active


def test_reboot_retrains_with_tick_and_gates_leases() -> None:
    m = node()  # fabric_training_s = 2.0
    m.acquire("old", 1.0, count=2)
    m.drain_events()
    m.reboot(10.0)
    assert states(m) == {"Not Started"} and m.gpu_info(3).fabric_status == "N/A"
    assert m.fabric_ready_at() == 12.0
    refused(m, lambda: m.acquire("j", 10.0, gpus=[3]), "cudaErrorSystemNotReady", "Not Started", "GPU 3")
    refused(m, lambda: m.acquire("j", 10.0, count=1), "cudaErrorSystemNotReady")
    m.tick(10.4)
    assert states(m) == {"Not Started"}
    m.tick(10.6)
    assert states(m) == {"In Progress"}
    refused(m, lambda: m.acquire("j", 10.6, count=1), "system not yet initialized", "In Progress")
    m.tick(11.9)
    assert states(m) == {"In Progress"}
    m.tick(12.0)
    assert states(m) == {"Completed"} and m.fabric_ready_at() is None
    assert m.gpu_info(5).fabric_status == "Success"
    fabric = [e for e in m.drain_events() if e["kind"] == "fabric"]
    assert len(fabric) == 16 and {e["gpu"] for e in fabric} == set(range(8))
    assert [e["message"].split("(")[0].strip() for e in fabric if e["gpu"] == 0] == [
        "GPU 0: fabric state Not Started -> In Progress", "GPU 0: fabric state In Progress -> Completed"]
    assert m.acquire("j", 12.0, count=8).active


def test_one_late_tick_walks_through_both_transitions() -> None:
    m = node(fabric_training_s=5.0)
    m.reboot(1.0)
    m.tick(100.0)
    assert states(m) == {"Completed"}
    kinds = [e["message"] for e in m.drain_events() if e["kind"] == "fabric" and e["gpu"] == 7]
    assert len(kinds) == 2


def test_stopped_fabric_manager_refuses_new_leases_keeps_running_ones() -> None:
    m = node()
    running = m.acquire("train", 1.0, gpus=[0, 1], utilization=90)
    info = m.stop_fabric_manager(2.0)
    assert not info.fabric_manager_running and not m.node_info(2.0).fabric_manager_running
    assert [e["kind"] for e in m.drain_events()][-1] == "fabric_manager"
    # Existing CUDA processes continue; the GPUs keep their trained state.
    assert m.lease(running.id).active and m.gpu_info(0).lease_ids == [running.id]
    assert states(m) == {"Completed"}
    for call in (lambda: m.acquire("new", 3.0, gpus=[4]), lambda: m.acquire("new", 3.0, count=1)):
        refused(m, call, "cudaErrorSystemNotReady", "fabric manager is not running")
    m.tick(50.0)  # time alone does not bring it back
    refused(m, lambda: m.acquire("new", 50.0, count=1), "fabric manager")
    assert m.stop_fabric_manager(51.0).fabric_manager_running is False  # idempotent, like systemctl
    assert m.start_fabric_manager(52.0).fabric_manager_running
    assert states(m) == {"Completed"}  # already trained: re-attaches without retraining
    assert m.acquire("new", 52.0, count=1).active
    assert m.lease(running.id).active


def test_reset_with_manager_stopped_leaves_gpu_untrained_until_start() -> None:
    m = node()
    m.stop_fabric_manager(1.0)
    m.reset_gpu(2, 2.0)
    assert m.gpu_info(2).fabric_state == "Not Started" and m.gpu_info(3).fabric_state == "Completed"
    m.start_fabric_manager(3.0)
    assert m.gpu_info(2).fabric_state == "Not Started" and m.fabric_ready_at() == 5.0
    refused(m, lambda: m.acquire("j", 3.0, gpus=[2]), "cudaErrorSystemNotReady", "GPU 2")
    assert m.acquire("j", 3.0, count=7).active  # the trained GPUs are usable meanwhile
    m.tick(5.0)
    assert m.gpu_info(2).fabric_state == "Completed"
    assert m.acquire("k", 5.0, gpus=[2]).active


def test_reset_with_manager_running_retrains_within_the_reset() -> None:
    m = node()
    m.reset_gpu(6, 1.0)
    assert m.gpu_info(6).fabric_state == "Completed"
    msgs = [e["message"] for e in m.drain_events() if e["kind"] == "fabric"]
    assert len(msgs) == 3 and "Completed -> Not Started" in msgs[0]


def test_reboot_restarts_a_stopped_manager() -> None:
    m = node()
    m.stop_fabric_manager(1.0)
    info = m.reboot(2.0)
    assert info.fabric_manager_running and states(m) == {"Not Started"}
    m.tick(4.0)
    assert states(m) == {"Completed"}


def test_nvlink_down_degrades_fabric_bandwidth() -> None:
    m = node()
    fault = m.inject_fault("NVLINK_DOWN", 4, 1.0, link=7)
    v = m.gpu_info(4)
    assert (v.fabric_state, v.fabric_bandwidth) == ("Completed", "Degraded")
    assert m.gpu_info(5).fabric_bandwidth == "Full"
    m.clear_fault(fault.id, 2.0)
    assert m.gpu_info(4).fabric_bandwidth == "Full"


def test_persistence_round_trip_mid_training_and_stopped() -> None:
    m = node()
    m.reboot(10.0)
    m.tick(11.0)  # In Progress
    m.stop_fabric_manager(11.0)
    state = json.loads(json.dumps(m.to_state()))
    r = NodeModel.from_state(m.spec, state, 11.5)
    assert r.to_state() == m.to_state()
    assert not r.node_info(11.5).fabric_manager_running and states(r) == {"In Progress"}
    r.tick(20.0)  # stopped: training does not advance
    assert states(r) == {"In Progress"}
    r.start_fabric_manager(20.0)
    assert states(r) == {"Not Started"}
    r.tick(22.0)
    assert states(r) == {"Completed"}
    # A state saved before the fabric manager existed loads as trained and running.
    old = json.loads(json.dumps(node().to_state()))
    old.pop("fabric_manager_running")
    for g in old["gpus"]:
        g.pop("fabric_state")
        g.pop("fabric_train_start")
    legacy = NodeModel.from_state(NodeSpec(name="gpu007"), old, 0.0)
    assert legacy.node_info(0.0).fabric_manager_running and states(legacy) == {"Completed"}


def test_servicer_codes_and_reboot_waits_for_training() -> None:
    async def test(stub: pb_grpc.GpuNodeStub, servicer: GpuNodeServicer, log: list[str]) -> None:
        gpu = (await stub.GetGpu(pb.GpuGetGpuRequest(gpu=0))).gpu
        assert (gpu.fabric_state, gpu.fabric_status, gpu.fabric_bandwidth) == ("Completed", "Success", "Full")
        assert gpu.fabric_cluster_uuid == "00000000-0000-0000-0000-000000000000"
        running = (await stub.AcquireLease(pb.GpuAcquireLeaseRequest(job_id="a", gpus=[0]))).lease
        info = (await stub.StopFabricManager(pb.GpuStopFabricManagerRequest())).node
        assert not info.fabric_manager_running
        with pytest.raises(grpc.aio.AioRpcError) as e:
            await stub.AcquireLease(pb.GpuAcquireLeaseRequest(job_id="b", count=1))
        assert e.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        assert "cudaErrorSystemNotReady" in e.value.details() and "fabric manager" in e.value.details()
        leases = (await stub.ListLeases(pb.GpuListLeasesRequest())).leases
        assert [x.id for x in leases] == [running.id]
        assert (await stub.StartFabricManager(pb.GpuStartFabricManagerRequest())).node.fabric_manager_running
        assert (await stub.AcquireLease(pb.GpuAcquireLeaseRequest(job_id="b", count=1))).lease.active
        # Reboot replies once training is done; the training events were persisted.
        node = (await asyncio.wait_for(stub.RebootNode(pb.GpuRebootNodeRequest()), 10)).node
        assert node.boot_id == 2 and node.fabric_manager_running
        gpus = (await stub.ListGpus(pb.GpuListGpusRequest())).gpus
        assert {g.fabric_state for g in gpus} == {"Completed"}
        assert log.count("persist:fabric") == 16 and log.count("persist:fabric_manager") == 2
        assert (await stub.AcquireLease(pb.GpuAcquireLeaseRequest(job_id="c", count=8))).lease.active
        # Refused while training: a reboot through the model directly, no tick yet.
        async with servicer._lock:
            servicer._model.reboot(servicer._clock())
        with pytest.raises(grpc.aio.AioRpcError) as e:
            await stub.AcquireLease(pb.GpuAcquireLeaseRequest(job_id="d", gpus=[1]))
        assert e.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        assert "system not yet initialized" in e.value.details() and "Not Started" in e.value.details()

    run(test)
