"""The `clustertwin.v1.Fabric` gRPC service over a `FabricManager`.

Errors: every refusal is a `FabricError`, aborted with the status its raiser chose (emulator/errors.py
maps it): an unknown system, port, node or LID is NOT_FOUND, a bad argument INVALID_ARGUMENT, no route
FAILED_PRECONDITION, SHARP out of trees RESOURCE_EXHAUSTED, a subnet manager that failed
UNAVAILABLE; each with the manager's message, and nothing changed.

The List RPCs are paginated by emulator/paging.py: alarms by id (one cleared between two pages moves
no other across the boundary), the other lists by position (they change only when the fabric does).
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc

from clustertwin.v1 import fabric_pb2 as pb
from clustertwin.v1 import fabric_pb2_grpc as pb_grpc
from emulator import paging
from emulator.errors import DaemonError
from emulator.event_ring import replay_then_stream
from services.fabric.errors import FabricError
from services.fabric.manager import FabricManager
from services.fabric.sharp import SharpJob

SERVICE_NAME = "clustertwin.v1.Fabric"


def _fields(message_cls: Any, d: dict[str, Any]) -> dict[str, Any]:
    names = set(message_cls.DESCRIPTOR.fields_by_name)
    return {k: v for k, v in d.items() if k in names and v is not None}


def port_pb(d: dict[str, Any]) -> pb.FabricPort:
    return pb.FabricPort(**_fields(pb.FabricPort, d))


def system_pb(d: dict[str, Any]) -> pb.FabricSystem:
    return pb.FabricSystem(**_fields(pb.FabricSystem, d))


def link_pb(d: dict[str, Any]) -> pb.FabricLink:
    return pb.FabricLink(**_fields(pb.FabricLink, d))


def event_pb(d: dict[str, Any]) -> pb.FabricEvent:
    return pb.FabricEvent(**_fields(pb.FabricEvent, d))


def _errors(fn: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
    @functools.wraps(fn)
    async def handler(self: FabricServicer, request: Any, context: grpc.aio.ServicerContext) -> Any:
        try:
            return await fn(self, request, context)
        except DaemonError as e:   # a FabricError, or a bad page_token/page_size
            await e.abort(context)
    return handler


def partition_pb(p: dict[str, Any]) -> pb.FabricPartition:
    return pb.FabricPartition(name=p["name"], pkey=p["pkey"], ip_over_ib=p["ip_over_ib"], all_ports=p["all_ports"],
                        members=[pb.FabricPartitionMember(**m) for m in p["members"]])


def unhealthy_pb(u: dict[str, Any]) -> pb.FabricUnhealthyPort:
    return pb.FabricUnhealthyPort(**_fields(pb.FabricUnhealthyPort, u))


def sharp_job_pb(job: SharpJob) -> pb.FabricSharpJob:
    trees = [pb.FabricSharpTree(tree_id=t.tree_id, rail=t.rail, root=t.root or "", leaves=t.leaves, hcas=t.hcas,
                          streaming=t.streaming, state=t.state, reason=t.reason) for t in job.trees]
    return pb.FabricSharpJob(job_id=job.job_id, hcas=job.hcas, streaming=job.streaming, trees=trees,
                       sharp_available=job.sharp_available)


class FabricServicer(pb_grpc.FabricServicer):
    def __init__(self, manager: FabricManager) -> None:
        self.m = manager

    @_errors
    async def ListSystems(self, request: pb.FabricListSystemsRequest, context: Any) -> pb.FabricListSystemsResponse:
        return paging.listed(pb.FabricListSystemsResponse, "systems", self.m.systems(request.type), request, system_pb)

    @_errors
    async def ListPorts(self, request: pb.FabricListPortsRequest, context: Any) -> pb.FabricListPortsResponse:
        return paging.listed(pb.FabricListPortsResponse, "ports", self.m.ports(request.system, request.computer_only),
                             request, port_pb)

    @_errors
    async def ListLinks(self, request: pb.FabricListLinksRequest, context: Any) -> pb.FabricListLinksResponse:
        return paging.listed(pb.FabricListLinksResponse, "links", self.m.links(), request, link_pb)

    @_errors
    async def GetRoute(self, request: pb.FabricGetRouteRequest, context: Any) -> pb.FabricGetRouteResponse:
        lids = []
        for name, ep in (("src", request.src), ("dst", request.dst)):
            try:
                lids.append(self.m.endpoint_lid(ep.node, ep.server, ep.rail, ep.lid))
            except FabricError as e:
                raise type(e)(f"{name}: {e.message}", e.code) from None
        r = self.m.route(*lids)
        return pb.FabricGetRouteResponse(src_lid=r["src_lid"], dst_lid=r["dst_lid"],
                                         hops=[pb.FabricRouteHop(**h) for h in r["hops"]])

    @_errors
    async def SetPortState(self, request: pb.FabricSetPortStateRequest,
                           context: Any) -> pb.FabricSetPortStateResponse:
        r = await self.m.set_port_state(request.system, request.port, request.enabled,
                                        more_ports=tuple(request.more_ports))
        return pb.FabricSetPortStateResponse(port=port_pb(r["port"]), changed=r["changed"],
                                             resweep_seconds=r["resweep_seconds"], trap_128=r["trap_128"])

    @_errors
    async def GetHealth(self, request: pb.FabricGetHealthRequest, context: Any) -> pb.FabricGetHealthResponse:
        h = self.m.health()
        return pb.FabricGetHealthResponse(**{**_fields(pb.FabricGetHealthResponse, h),
                                             "down_ports": [port_pb(p) for p in h["down_ports"]]})

    @_errors
    async def Analyze(self, request: pb.FabricAnalyzeRequest, context: Any) -> pb.FabricAnalyzeResponse:
        a = self.m.analyze(request.pattern)
        b = a["balance"]
        loads = [pb.FabricLinkLoad(**ld) for ld in b["loads"]]
        balance = pb.FabricBalance(**{**_fields(pb.FabricBalance, b), "loads": loads})
        return pb.FabricAnalyzeResponse(
            leaves=[pb.FabricLeafCapacity(**c) for c in a["leaves"]], non_blocking=a["non_blocking"], balance=balance,
            degraded_servers=[pb.FabricDegradedServer(**d) for d in a["degraded_servers"]],
            down_links=[link_pb(lk) for lk in a["down_links"]],
            degraded_paths=a["degraded_paths"])

    @_errors
    async def ResetPort(self, request: pb.FabricResetPortRequest, context: Any) -> pb.FabricResetPortResponse:
        r = await self.m.reset_port(request.system, request.port)
        return pb.FabricResetPortResponse(port=port_pb(r["port"]), changed=r["changed"],
                                          resweep_seconds=r["resweep_seconds"], trap_128=r["trap_128"])

    @_errors
    async def SetPortHealth(self, request: pb.FabricSetPortHealthRequest,
                            context: Any) -> pb.FabricSetPortHealthResponse:
        ports = await self.m.set_port_health(list(request.ports), request.healthy, request.action)
        return pb.FabricSetPortHealthResponse(ports=[unhealthy_pb(u) for u in ports])

    @_errors
    async def ListUnhealthyPorts(self, request: pb.FabricListUnhealthyPortsRequest,
                                 context: Any) -> pb.FabricListUnhealthyPortsResponse:
        return paging.listed(pb.FabricListUnhealthyPortsResponse, "ports", self.m.unhealthy_ports(), request,
                             unhealthy_pb)

    @_errors
    async def ListAlarms(self, request: pb.FabricListAlarmsRequest, context: Any) -> pb.FabricListAlarmsResponse:
        return paging.listed(pb.FabricListAlarmsResponse, "alarms", self.m.alarms.list(), request,
                             lambda a: pb.FabricAlarm(**a.to_dict()), key=lambda a: a.id)

    @_errors
    async def ListPartitions(self, request: pb.FabricListPartitionsRequest,
                             context: Any) -> pb.FabricListPartitionsResponse:
        return paging.listed(pb.FabricListPartitionsResponse, "partitions", self.m.partitions(), request, partition_pb)

    @_errors
    async def SetPartition(self, request: pb.FabricSetPartitionRequest,
                           context: Any) -> pb.FabricSetPartitionResponse:
        p = request.partition
        return pb.FabricSetPartitionResponse(partition=partition_pb(await self.m.set_partition(
            p.pkey, [(m.guid, m.membership) for m in p.members], p.name, p.ip_over_ib)))

    @_errors
    async def DeletePartition(self, request: pb.FabricDeletePartitionRequest,
                              context: Any) -> pb.FabricDeletePartitionResponse:
        return pb.FabricDeletePartitionResponse(partition=partition_pb(await self.m.delete_partition(request.pkey)))

    @_errors
    async def GetPKeys(self, request: pb.FabricGetPKeysRequest, context: Any) -> pb.FabricGetPKeysResponse:
        table = await self.m.pkeys(request.system, request.port)
        return pb.FabricGetPKeysResponse(pkeys=[pb.FabricPKeyEntry(pkey=k, full=full) for k, full in table])

    @_errors
    async def GetPortCounters(self, request: pb.FabricGetPortCountersRequest,
                              context: Any) -> pb.FabricGetPortCountersResponse:
        name, counters = await self.m.port_counters(request.system, request.port)
        return pb.FabricGetPortCountersResponse(port_name=name, counters=counters)

    @_errors
    async def SetPortCounter(self, request: pb.FabricSetPortCounterRequest,
                             context: Any) -> pb.FabricSetPortCounterResponse:
        name, counters = await self.m.set_port_counter(request.system, request.port, request.counter, request.value)
        return pb.FabricSetPortCounterResponse(port_name=name, counters=counters)

    @_errors
    async def CreateSharpJob(self, request: pb.FabricCreateSharpJobRequest,
                             context: Any) -> pb.FabricCreateSharpJobResponse:
        job = self.m.create_sharp_job(request.job_id, list(request.hcas), list(request.servers), request.streaming)
        return pb.FabricCreateSharpJobResponse(job=sharp_job_pb(job))

    @_errors
    async def ReleaseSharpJob(self, request: pb.FabricReleaseSharpJobRequest,
                              context: Any) -> pb.FabricReleaseSharpJobResponse:
        return pb.FabricReleaseSharpJobResponse(job=sharp_job_pb(self.m.release_sharp_job(request.job_id)))

    @_errors
    async def ListSharpJobs(self, request: pb.FabricListSharpJobsRequest,
                            context: Any) -> pb.FabricListSharpJobsResponse:
        am = self.m.sharp
        return paging.listed(pb.FabricListSharpJobsResponse, "jobs", am.jobs(), request, sharp_job_pb,
                             trees_in_use=am.in_use(), max_trees=am.max_trees, streaming_in_use=am.in_use(True),
                             max_streaming_trees=am.max_streaming_trees)

    @_errors
    async def EstimateCollective(self, request: pb.FabricEstimateCollectiveRequest,
                                 context: Any) -> pb.FabricEstimateCollectiveResponse:
        sharp = self.m.sharp_granted(request.sharp_job) if request.sharp_job else False
        est, view = self.m.estimate_collective(request.op, request.ranks, request.bytes, request.algorithm,
                                               list(request.servers), request.gpus_per_server, sharp)
        slowest, rails_up = view.slowest(0) if view.rails_up else (None, view.rails)
        return pb.FabricEstimateCollectiveResponse(
            op=est.op, ranks=est.gpus, bytes=est.size_bytes, algorithm=est.algorithm, time_s=est.time_s,
            algbw_gbps=est.algbw_gbps, busbw_gbps=est.busbw_gbps, bottleneck=est.bottleneck,
            terms=dict(est.terms), params={k: str(v) for k, v in est.params.items()}, modelled=True,
            slowest_server=slowest or "", slowest_rails_up=rails_up, congestion=view.congestion)

    async def WatchEvents(self, request: pb.FabricWatchEventsRequest,
                          context: Any) -> AsyncIterator[pb.FabricWatchEventsResponse]:
        q = self.m.watch()   # subscribe first, then read what is kept: nothing falls between
        try:
            kept = list(self.m.events)
            last_seq = kept[-1]["seq"] if kept else 0
            async for ev in replay_then_stream(q, kept, request.since_seq, last_seq):
                yield pb.FabricWatchEventsResponse(event=event_pb(ev))
        finally:
            self.m.unwatch(q)
