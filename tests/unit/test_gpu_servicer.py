"""The GpuNode gRPC service over a real grpc.aio server and channel, in process."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import grpc
import pytest

from clustertwin.v1 import gpu_node_pb2 as pb
from clustertwin.v1 import gpu_node_pb2_grpc as pb_grpc
from emulator import paging
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
        node = (await stub.GetNode(pb.GpuGetNodeRequest())).node
        assert (node.hostname, node.gpu_count, node.health, node.boot_id) == ("gpu002", 8, pb.GPU_HEALTH_PASS, 1)
        gpus = (await stub.ListGpus(pb.GpuListGpusRequest())).gpus
        assert len(gpus) == 8 and gpus[0].name == "NVIDIA H100 80GB HBM3" and len(gpus[0].nvlinks) == 18
        topo = (await stub.GetTopology(pb.GpuGetTopologyRequest())).topology
        assert topo.rows[0].cells[1] == "NV18" and topo.labels[0] == "GPU0"
        profiles = (await stub.ListMigProfiles(pb.GpuListMigProfilesRequest(gpu=0))).profiles
        assert {p.name: p.gi_profile_id for p in profiles}["3g.40gb"] == 9
        await expect(grpc.StatusCode.NOT_FOUND, stub.GetGpu(pb.GpuGetGpuRequest(gpu=8)), "gpu002", "GPU 8")
        assert log == []  # queries persist nothing

    run(body)


def test_mig_and_lease_errors() -> None:
    async def body(stub: pb_grpc.GpuNodeStub, servicer: GpuNodeServicer, log: list[str]) -> None:
        await stub.SetMigMode(pb.GpuSetMigModeRequest(gpu=1, enabled=True))
        await expect(grpc.StatusCode.INVALID_ARGUMENT,
                     stub.CreateGpuInstance(pb.GpuCreateGpuInstanceRequest(gpu=1, profile="5g.40gb")),
                     "gpu002: GPU 1: profile '5g.40gb' unknown")
        await expect(grpc.StatusCode.INVALID_ARGUMENT, stub.CreateGpuInstance(
            pb.GpuCreateGpuInstanceRequest(gpu=1, profile="3g.40gb", placement_start=2)),
            "allowed starts: 0, 4")
        gi = (await stub.CreateGpuInstance(pb.GpuCreateGpuInstanceRequest(
            gpu=1, profile="3g.40gb", placement_start=4, default_compute_instance=True))).instance
        assert (gi.id, gi.placement_start, len(gi.compute_instances)) == (2, 4, 1)
        profiles = (await stub.ListMigProfiles(pb.GpuListMigProfilesRequest(gpu=1))).profiles
        free = {p.name: p.free_instances for p in profiles}
        assert free["1g.10gb"] == 4
        lease = (await stub.AcquireLease(pb.GpuAcquireLeaseRequest(job_id="train", gpus=[0, 2], utilization=90))).lease
        assert lease.env["CUDA_VISIBLE_DEVICES"] == "0,1" and lease.active
        await expect(grpc.StatusCode.FAILED_PRECONDITION,
                     stub.AcquireLease(pb.GpuAcquireLeaseRequest(job_id="other", gpus=[2])), lease.id, "job train")
        await expect(grpc.StatusCode.RESOURCE_EXHAUSTED,
                     stub.AcquireLease(pb.GpuAcquireLeaseRequest(job_id="x", count=8)))
        mig_lease = (await stub.AcquireLease(
            pb.GpuAcquireLeaseRequest(job_id="inf", mig_profile="3g.40gb", count=1))).lease
        assert mig_lease.devices[0].is_mig and mig_lease.devices[0].uuid.startswith("MIG-")
        leases = (await stub.ListLeases(pb.GpuListLeasesRequest())).leases
        assert {x.id for x in leases} == {lease.id, mig_lease.id}
        await expect(grpc.StatusCode.NOT_FOUND, stub.ReleaseLease(pb.GpuReleaseLeaseRequest(lease_id="nope")))
        await expect(grpc.StatusCode.INVALID_ARGUMENT, stub.InjectFault(pb.GpuInjectFaultRequest(gpu=0)))

    run(body)


def test_persist_is_awaited_before_the_reply() -> None:
    async def body(stub: pb_grpc.GpuNodeStub, servicer: GpuNodeServicer, log: list[str]) -> None:
        lease = (await stub.AcquireLease(pb.GpuAcquireLeaseRequest(job_id="j", count=1))).lease
        log.append("reply")
        await stub.ReleaseLease(pb.GpuReleaseLeaseRequest(lease_id=lease.id))
        log.append("reply")
        assert log == ["persist:lease_start", "reply", "persist:lease_end", "reply"]

    run(body)


def test_watch_receives_xid_after_inject_and_lost_gpu_is_an_error() -> None:
    async def body(stub: pb_grpc.GpuNodeStub, servicer: GpuNodeServicer, log: list[str]) -> None:
        lease = (await stub.AcquireLease(pb.GpuAcquireLeaseRequest(job_id="j", gpus=[3]))).lease
        watch = stub.WatchEvents(pb.GpuWatchEventsRequest(replay=True, after_seq=0))
        fault = (await stub.InjectFault(pb.GpuInjectFaultRequest(kind=pb.GPU_FAULT_KIND_XID, gpu=3, xid=79))).fault
        assert fault.active and "GPU lost" in fault.effect
        seen: list[pb.GpuEvent] = []
        async for response in watch:
            event = response.event
            seen.append(event)
            if event.kind == "health":
                break
        watch.cancel()
        kinds = [e.kind for e in seen]
        assert kinds[0] == "lease_start" and "xid" in kinds and "gpu_lost" in kinds and "lease_end" in kinds
        xid = next(e for e in seen if e.kind == "xid")
        assert xid.xid == 79 and xid.gpu == 3 and "fallen off the bus" in xid.message
        assert [e.seq for e in seen] == sorted({e.seq for e in seen})
        assert seen[-1].health == pb.GPU_HEALTH_FAIL
        assert not (await stub.ListLeases(pb.GpuListLeasesRequest(include_ended=True))).leases[0].active
        await expect(grpc.StatusCode.FAILED_PRECONDITION, stub.GetGpu(pb.GpuGetGpuRequest(gpu=3)), "GPU_IS_LOST")
        await expect(grpc.StatusCode.FAILED_PRECONDITION,
                     stub.InjectFault(pb.GpuInjectFaultRequest(kind=pb.GPU_FAULT_KIND_XID, gpu=3, xid=95)),
                     "GPU_IS_LOST")
        assert (await stub.GetNode(pb.GpuGetNodeRequest())).node.gpu_count == 7
        assert "79, pid='<unknown>'" in (await stub.KernelLog(pb.GpuKernelLogRequest())).lines[-1]
        node = (await stub.RebootNode(pb.GpuRebootNodeRequest())).node
        assert node.gpu_count == 8 and node.boot_id == 2
        assert lease.id

    run(body)


def test_live_watch_and_close() -> None:
    async def body(stub: pb_grpc.GpuNodeStub, servicer: GpuNodeServicer, log: list[str]) -> None:
        watch = stub.WatchEvents(pb.GpuWatchEventsRequest())
        # No fixed sleep: keep making changes until the live watcher has seen one.
        got: asyncio.Future[pb.GpuEvent] = asyncio.get_running_loop().create_future()

        async def reader() -> None:
            async for response in watch:
                if not got.done():
                    got.set_result(response.event)
            if not got.done():
                got.set_exception(AssertionError("stream ended early"))

        task = asyncio.create_task(reader())
        gpu = 0
        while not got.done():
            await stub.InjectFault(pb.GpuInjectFaultRequest(kind=pb.GPU_FAULT_KIND_ECC_SBE, gpu=gpu % 8, count=1))
            gpu += 1
            await asyncio.wait([got], timeout=0.05)
        assert got.result().kind == "fault"
        await servicer.close()
        await asyncio.wait_for(task, 5)  # close() ends the stream cleanly

    run(body)


async def pages(rpc: Callable[..., Any], request: Any, field: str) -> list[list[Any]]:
    """Every page of a List RPC, following next_page_token."""
    out = []
    while True:
        response = await rpc(request)
        out.append(list(getattr(response, field)))
        if not response.next_page_token:
            return out
        request.page_token = response.next_page_token


def test_list_rpcs_are_paginated() -> None:
    async def body(stub: pb_grpc.GpuNodeStub, servicer: GpuNodeServicer, log: list[str]) -> None:
        gpus = await pages(stub.ListGpus, pb.GpuListGpusRequest(page_size=3), "gpus")
        assert [[g.index for g in p] for p in gpus] == [[0, 1, 2], [3, 4, 5], [6, 7]]
        assert len((await stub.ListGpus(pb.GpuListGpusRequest())).gpus) == 8   # 0: the default page
        ids = [(await stub.AcquireLease(pb.GpuAcquireLeaseRequest(job_id=f"j{i}", gpus=[i]))).lease.id
               for i in range(5)]
        first = await stub.ListLeases(pb.GpuListLeasesRequest(page_size=2))
        assert [x.id for x in first.leases] == ids[:2] and first.next_page_token
        # A lease on the first page ends: the next page still starts after the last one returned.
        await stub.ReleaseLease(pb.GpuReleaseLeaseRequest(lease_id=ids[0]))
        rest = await pages(stub.ListLeases, pb.GpuListLeasesRequest(page_size=2, page_token=first.next_page_token),
                           "leases")
        assert [[x.id for x in p] for p in rest] == [ids[2:4], ids[4:]]
        profiles = await pages(stub.ListMigProfiles, pb.GpuListMigProfilesRequest(gpu=0, page_size=4), "profiles")
        assert [len(p) for p in profiles][:-1] == [4] * (len(profiles) - 1)
        assert [p.name for p in sum(profiles, [])] == \
            [p.name for p in (await stub.ListMigProfiles(pb.GpuListMigProfilesRequest(gpu=0))).profiles]

    run(body)


def test_bad_page_token_or_size_is_invalid_argument() -> None:
    async def body(stub: pb_grpc.GpuNodeStub, servicer: GpuNodeServicer, log: list[str]) -> None:
        gpus_token = (await stub.ListGpus(pb.GpuListGpusRequest(page_size=1))).next_page_token
        await expect(grpc.StatusCode.INVALID_ARGUMENT,
                     stub.ListFaults(pb.GpuListFaultsRequest(page_token=gpus_token)), "ListFaults", "page_token")
        for token in ("not a token", "!!!", "TGlzdEdwdXM6LTE="):   # the last: ListGpus:-1
            await expect(grpc.StatusCode.INVALID_ARGUMENT,
                         stub.ListGpus(pb.GpuListGpusRequest(page_token=token)), "invalid page_token")
        await expect(grpc.StatusCode.INVALID_ARGUMENT, stub.ListLeases(pb.GpuListLeasesRequest(page_size=-1)),
                     "page_size must not be negative")

    run(body)


def test_page_size_is_capped() -> None:
    items = list(range(2500))
    first, token = paging.page("ListX", items, 5000, "")
    assert len(first) == paging.MAX_PAGE_SIZE and token
    assert paging.page("ListX", items, 0, "")[0] == items[:paging.DEFAULT_PAGE_SIZE]
    assert paging.page("ListX", items, 5000, token)[0] == items[1000:2000]
