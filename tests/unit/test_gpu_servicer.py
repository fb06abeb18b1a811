"""The GpuNode gRPC service over a real grpc.aio server and channel, in process."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import grpc
import pytest

from clustertwin.v1 import gpu_node_pb2 as pb
from clustertwin.v1 import gpu_node_pb2_grpc as pb_grpc
from services.gpu_node.model import NodeModel
from services.gpu_node.servicer import GpuNodeServicer
from services.gpu_node.spec import NodeSpec


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        self.t += 0.5
        return self.t


Test = Callable[[pb_grpc.GpuNodeStub, GpuNodeServicer, list[str]], Awaitable[None]]


def run(test: Test, mig_layout: str | None = None) -> None:
    """Start a server on an ephemeral port, run `test` with a stub, stop everything."""

    async def main() -> None:
        log: list[str] = []

        async def persist(events: list[dict[str, Any]]) -> None:
            await asyncio.sleep(0)  # a real store yields to the loop too
            log.extend(f"persist:{e['kind']}" for e in events)

        model = NodeModel(NodeSpec(name="gpu002", mig_layout=mig_layout), 100.0)
        servicer = GpuNodeServicer(model, Clock(), persist)
        server = grpc.aio.server()
        pb_grpc.add_GpuNodeServicer_to_server(servicer, server)
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        try:
            async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
                await asyncio.wait_for(channel.channel_ready(), 10)
                await asyncio.wait_for(test(pb_grpc.GpuNodeStub(channel), servicer, log), 20)
        finally:
            await servicer.close()
            await server.stop(None)

    asyncio.run(main())


async def expect(code: grpc.StatusCode, call: Awaitable[Any], *words: str) -> str:
    with pytest.raises(grpc.aio.AioRpcError) as e:
        await call
    assert e.value.code() == code, e.value.details()
    for w in words:
        assert w in e.value.details()
    return e.value.details()


def test_queries() -> None:
    async def body(stub: pb_grpc.GpuNodeStub, servicer: GpuNodeServicer, log: list[str]) -> None:
        node = await stub.GetNode(pb.GetNodeRequest())
        assert (node.hostname, node.gpu_count, node.health, node.boot_id) == ("gpu002", 8, pb.HEALTH_PASS, 1)
        gpus = (await stub.ListGpus(pb.ListGpusRequest())).gpus
        assert len(gpus) == 8 and gpus[0].name == "NVIDIA H100 80GB HBM3" and len(gpus[0].nvlinks) == 18
        topo = await stub.GetTopology(pb.GetNodeRequest())
        assert topo.rows[0].cells[1] == "NV18" and "NIC Legend" in topo.text
        profiles = (await stub.ListMigProfiles(pb.GpuRequest(gpu=0))).profiles
        assert {p.name: p.gi_profile_id for p in profiles}["3g.40gb"] == 9
        await expect(grpc.StatusCode.NOT_FOUND, stub.GetGpu(pb.GpuRequest(gpu=8)), "gpu002", "GPU 8")
        assert log == []  # queries persist nothing

    run(body)


def test_mig_and_lease_errors() -> None:
    async def body(stub: pb_grpc.GpuNodeStub, servicer: GpuNodeServicer, log: list[str]) -> None:
        await stub.SetMigMode(pb.SetMigModeRequest(gpu=1, enabled=True))
        await expect(grpc.StatusCode.INVALID_ARGUMENT,
                     stub.CreateGpuInstance(pb.CreateGpuInstanceRequest(gpu=1, profile="5g.40gb")),
                     "gpu002: GPU 1: profile '5g.40gb' unknown")
        await expect(grpc.StatusCode.INVALID_ARGUMENT, stub.CreateGpuInstance(
            pb.CreateGpuInstanceRequest(gpu=1, profile="3g.40gb", has_placement=True, placement_start=2)),
            "allowed starts: 0, 4")
        gi = await stub.CreateGpuInstance(pb.CreateGpuInstanceRequest(
            gpu=1, profile="3g.40gb", has_placement=True, placement_start=4, default_compute_instance=True))
        assert (gi.id, gi.placement_start, len(gi.compute_instances)) == (2, 4, 1)
        free = {p.name: p.free_instances for p in (await stub.ListMigProfiles(pb.GpuRequest(gpu=1))).profiles}
        assert free["1g.10gb"] == 4
        lease = await stub.AcquireLease(pb.LeaseRequest(job_id="train", gpus=[0, 2], utilization=90))
        assert lease.env["CUDA_VISIBLE_DEVICES"] == "0,1" and lease.active
        await expect(grpc.StatusCode.FAILED_PRECONDITION,
                     stub.AcquireLease(pb.LeaseRequest(job_id="other", gpus=[2])), lease.id, "job train")
        await expect(grpc.StatusCode.RESOURCE_EXHAUSTED, stub.AcquireLease(pb.LeaseRequest(job_id="x", count=8)))
        mig_lease = await stub.AcquireLease(pb.LeaseRequest(job_id="inf", mig_profile="3g.40gb", count=1))
        assert mig_lease.devices[0].is_mig and mig_lease.devices[0].uuid.startswith("MIG-")
        leases = (await stub.ListLeases(pb.ListLeasesRequest())).leases
        assert {x.id for x in leases} == {lease.id, mig_lease.id}
        await expect(grpc.StatusCode.NOT_FOUND, stub.ReleaseLease(pb.LeaseId(lease_id="nope")))
        await expect(grpc.StatusCode.INVALID_ARGUMENT, stub.InjectFault(pb.InjectFaultRequest(gpu=0)))

    run(body)


def test_persist_is_awaited_before_the_reply() -> None:
    async def body(stub: pb_grpc.GpuNodeStub, servicer: GpuNodeServicer, log: list[str]) -> None:
        lease = await stub.AcquireLease(pb.LeaseRequest(job_id="j", count=1))
        log.append("reply")
        await stub.ReleaseLease(pb.LeaseId(lease_id=lease.id))
        log.append("reply")
        assert log == ["persist:lease_start", "reply", "persist:lease_end", "reply"]

    run(body)


def test_watch_receives_xid_after_inject_and_lost_gpu_is_an_error() -> None:
    async def body(stub: pb_grpc.GpuNodeStub, servicer: GpuNodeServicer, log: list[str]) -> None:
        lease = await stub.AcquireLease(pb.LeaseRequest(job_id="j", gpus=[3]))
        watch = stub.WatchEvents(pb.WatchEventsRequest(replay=True, after_seq=0))
        fault = await stub.InjectFault(pb.InjectFaultRequest(kind=pb.FAULT_KIND_XID, gpu=3, xid=79))
        assert fault.active and "GPU lost" in fault.effect
        seen: list[pb.Event] = []
        async for event in watch:
            seen.append(event)
            if event.kind == "health":
                break
        watch.cancel()
        kinds = [e.kind for e in seen]
        assert kinds[0] == "lease_start" and "xid" in kinds and "gpu_lost" in kinds and "lease_end" in kinds
        xid = next(e for e in seen if e.kind == "xid")
        assert xid.xid == 79 and xid.gpu == 3 and "fallen off the bus" in xid.message
        assert [e.seq for e in seen] == sorted({e.seq for e in seen})
        assert seen[-1].health == pb.HEALTH_FAIL
        assert not (await stub.ListLeases(pb.ListLeasesRequest(include_ended=True))).leases[0].active
        await expect(grpc.StatusCode.FAILED_PRECONDITION, stub.GetGpu(pb.GpuRequest(gpu=3)), "GPU_IS_LOST")
        await expect(grpc.StatusCode.FAILED_PRECONDITION,
                     stub.InjectFault(pb.InjectFaultRequest(kind=pb.FAULT_KIND_XID, gpu=3, xid=95)), "GPU_IS_LOST")
        assert (await stub.GetNode(pb.GetNodeRequest())).gpu_count == 7
        assert "79, pid='<unknown>'" in (await stub.KernelLog(pb.KernelLogRequest())).lines[-1]
        node = await stub.RebootNode(pb.GetNodeRequest())
        assert node.gpu_count == 8 and node.boot_id == 2
        assert lease.id

    run(body)


def test_live_watch_and_close() -> None:
    async def body(stub: pb_grpc.GpuNodeStub, servicer: GpuNodeServicer, log: list[str]) -> None:
        watch = stub.WatchEvents(pb.WatchEventsRequest())
        # No fixed sleep: keep making changes until the live watcher has seen one.
        got: asyncio.Future[pb.Event] = asyncio.get_running_loop().create_future()

        async def reader() -> None:
            async for event in watch:
                if not got.done():
                    got.set_result(event)
            if not got.done():
                got.set_exception(AssertionError("stream ended early"))

        task = asyncio.create_task(reader())
        gpu = 0
        while not got.done():
            await stub.InjectFault(pb.InjectFaultRequest(kind=pb.FAULT_KIND_ECC_SBE, gpu=gpu % 8, count=1))
            gpu += 1
            await asyncio.wait([got], timeout=0.05)
        assert got.result().kind == "fault"
        await servicer.close()
        await asyncio.wait_for(task, 5)  # close() ends the stream cleanly

    run(body)
