"""The `clustertwin.v1.Fabric` gRPC service over a `FabricManager`.

Errors: every refusal is a `FabricError`, aborted with the status its raiser chose (emulator/errors.py
maps it): an unknown system, port, node or LID is NOT_FOUND, a bad argument INVALID_ARGUMENT, no route
FAILED_PRECONDITION, SHARP out of trees RESOURCE_EXHAUSTED, a subnet manager that failed
UNAVAILABLE; each with the manager's message, and nothing changed.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc

from clustertwin.v1 import fabric_pb2 as pb
from clustertwin.v1 import fabric_pb2_grpc as pb_grpc
from services.fabric.errors import FabricError
from services.fabric.manager import FabricManager
from services.fabric.sharp import SharpJob

SERVICE_NAME = "clustertwin.v1.Fabric"


def _fields(message_cls: Any, d: dict[str, Any]) -> dict[str, Any]:
    names = set(message_cls.DESCRIPTOR.fields_by_name)
    return {k: v for k, v in d.items() if k in names and v is not None}


def port_pb(d: dict[str, Any]) -> pb.FabricPort:
    return pb.FabricPort(**_fields(pb.FabricPort, d))


def event_pb(d: dict[str, Any]) -> pb.FabricEvent:
    return pb.FabricEvent(**_fields(pb.FabricEvent, d))


def _errors(fn: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
    @functools.wraps(fn)
    async def handler(self: FabricServicer, request: Any, context: grpc.aio.ServicerContext) -> Any:
        try:
            return await fn(self, request, context)
        except FabricError as e:
            await e.abort(context)
    return handler


def partition_pb(p: dict[str, Any]) -> pb.Partition:
    return pb.Partition(name=p["name"], pkey=p["pkey"], ip_over_ib=p["ip_over_ib"], all_ports=p["all_ports"],
                        members=[pb.PartitionMember(**m) for m in p["members"]])


def sharp_job_pb(job: SharpJob) -> pb.SharpJob:
    trees = [pb.SharpTree(tree_id=t.tree_id, rail=t.rail, root=t.root or "", leaves=t.leaves, hcas=t.hcas,
                          streaming=t.streaming, state=t.state, reason=t.reason) for t in job.trees]
    return pb.SharpJob(job_id=job.job_id, hcas=job.hcas, streaming=job.streaming, trees=trees,
                       sharp_available=job.sharp_available)


class FabricServicer(pb_grpc.FabricServicer):
    def __init__(self, manager: FabricManager) -> None:
        self.m = manager

    @_errors
    async def ListSystems(self, request: pb.ListSystemsRequest, context: Any) -> pb.ListSystemsResponse:
        return pb.ListSystemsResponse(systems=[pb.FabricSystem(**_fields(pb.FabricSystem, s))
                                               for s in self.m.systems(request.type)])

    @_errors
    async def ListPorts(self, request: pb.ListPortsRequest, context: Any) -> pb.ListPortsResponse:
        return pb.ListPortsResponse(ports=[port_pb(p) for p in self.m.ports(request.system, request.computer_only)])

    @_errors
    async def ListLinks(self, request: pb.ListLinksRequest, context: Any) -> pb.ListLinksResponse:
        return pb.ListLinksResponse(links=[pb.FabricLink(**_fields(pb.FabricLink, lk)) for lk in self.m.links()])

    @_errors
    async def GetRoute(self, request: pb.GetRouteRequest, context: Any) -> pb.FabricRoute:
        lids = []
        for name, ep in (("src", request.src), ("dst", request.dst)):
            try:
                lids.append(self.m.endpoint_lid(ep.node, ep.server, ep.rail, ep.lid))
            except FabricError as e:
                raise type(e)(f"{name}: {e.message}", e.code) from None
        r = self.m.route(*lids)
        return pb.FabricRoute(src_lid=r["src_lid"], dst_lid=r["dst_lid"], hops=[pb.RouteHop(**h) for h in r["hops"]])

    @_errors
    async def SetPortState(self, request: pb.SetPortStateRequest, context: Any) -> pb.SetPortStateResponse:
        r = await self.m.set_port_state(request.system, request.port, request.enabled,
                                        more_ports=tuple(request.more_ports))
        return pb.SetPortStateResponse(port=port_pb(r["port"]), changed=r["changed"],
                                       resweep_seconds=r["resweep_seconds"], trap_128=r["trap_128"])

    @_errors
    async def GetHealth(self, request: pb.GetHealthRequest, context: Any) -> pb.FabricHealth:
        h = self.m.health()
        return pb.FabricHealth(**{**_fields(pb.FabricHealth, h), "down_ports": [port_pb(p) for p in h["down_ports"]]})

    @_errors
    async def Analyze(self, request: pb.AnalyzeRequest, context: Any) -> pb.AnalyzeResponse:
        a = self.m.analyze(request.pattern)
        b = a["balance"]
        loads = [pb.LinkLoadInfo(**ld) for ld in b["loads"]]
        balance = pb.BalanceInfo(**{**_fields(pb.BalanceInfo, b), "loads": loads})
        return pb.AnalyzeResponse(leaves=[pb.LeafCapacityInfo(**c) for c in a["leaves"]],
                                  non_blocking=a["non_blocking"], balance=balance,
                                  degraded_servers=[pb.DegradedServer(**d) for d in a["degraded_servers"]],
                                  down_links=[pb.FabricLink(**_fields(pb.FabricLink, lk)) for lk in a["down_links"]],
                                  degraded_paths=a["degraded_paths"])

    @_errors
    async def ResetPort(self, request: pb.ResetPortRequest, context: Any) -> pb.SetPortStateResponse:
        r = await self.m.reset_port(request.system, request.port)
        return pb.SetPortStateResponse(port=port_pb(r["port"]), changed=r["changed"],
                                       resweep_seconds=r["resweep_seconds"], trap_128=r["trap_128"])

    @_errors
    async def SetPortHealth(self, request: pb.SetPortHealthRequest, context: Any) -> pb.UnhealthyPortsResponse:
        ports = await self.m.set_port_health(list(request.ports), request.healthy, request.action)
        return pb.UnhealthyPortsResponse(ports=[pb.UnhealthyPort(**_fields(pb.UnhealthyPort, u)) for u in ports])

    @_errors
    async def ListUnhealthyPorts(self, request: pb.ListUnhealthyPortsRequest,
                                 context: Any) -> pb.UnhealthyPortsResponse:
        return pb.UnhealthyPortsResponse(ports=[pb.UnhealthyPort(**_fields(pb.UnhealthyPort, u))
                                                for u in self.m.unhealthy_ports()])

    @_errors
    async def ListAlarms(self, request: pb.ListAlarmsRequest, context: Any) -> pb.ListAlarmsResponse:
        return pb.ListAlarmsResponse(alarms=[pb.FabricAlarm(**a.to_dict()) for a in self.m.alarms.list()])

    @_errors
    async def ListPartitions(self, request: pb.ListPartitionsRequest, context: Any) -> pb.ListPartitionsResponse:
        return pb.ListPartitionsResponse(partitions=[partition_pb(p) for p in self.m.partitions()])

    @_errors
    async def SetPartition(self, request: pb.SetPartitionRequest, context: Any) -> pb.Partition:
        p = request.partition
        return partition_pb(await self.m.set_partition(p.pkey, [(m.guid, m.membership) for m in p.members],
                                                       p.name, p.ip_over_ib))

    @_errors
    async def DeletePartition(self, request: pb.DeletePartitionRequest, context: Any) -> pb.DeletePartitionResponse:
        return pb.DeletePartitionResponse(partition=partition_pb(await self.m.delete_partition(request.pkey)))

    @_errors
    async def GetPKeys(self, request: pb.GetPKeysRequest, context: Any) -> pb.GetPKeysResponse:
        table = await self.m.pkeys(request.system, request.port)
        return pb.GetPKeysResponse(pkeys=[pb.PKeyEntry(pkey=k, full=full) for k, full in table])

    @_errors
    async def GetPortCounters(self, request: pb.GetPortCountersRequest, context: Any) -> pb.PortCounters:
        name, counters = await self.m.port_counters(request.system, request.port)
        return pb.PortCounters(port_name=name, counters=counters)

    @_errors
    async def SetPortCounter(self, request: pb.SetPortCounterRequest, context: Any) -> pb.PortCounters:
        name, counters = await self.m.set_port_counter(request.system, request.port, request.counter, request.value)
        return pb.PortCounters(port_name=name, counters=counters)

    @_errors
    async def CreateSharpJob(self, request: pb.CreateSharpJobRequest, context: Any) -> pb.SharpJob:
        return sharp_job_pb(self.m.create_sharp_job(request.job_id, list(request.hcas), list(request.servers),
                                                    request.streaming))

    @_errors
    async def ReleaseSharpJob(self, request: pb.ReleaseSharpJobRequest, context: Any) -> pb.SharpJob:
        return sharp_job_pb(self.m.release_sharp_job(request.job_id))

    @_errors
    async def ListSharpJobs(self, request: pb.ListSharpJobsRequest, context: Any) -> pb.ListSharpJobsResponse:
        am = self.m.sharp
        return pb.ListSharpJobsResponse(jobs=[sharp_job_pb(j) for j in am.jobs()], trees_in_use=am.in_use(),
                                        max_trees=am.max_trees, streaming_in_use=am.in_use(True),
                                        max_streaming_trees=am.max_streaming_trees)

    @_errors
    async def EstimateCollective(self, request: pb.EstimateCollectiveRequest, context: Any) -> pb.CollectiveEstimate:
        sharp = self.m.sharp_granted(request.sharp_job) if request.sharp_job else False
        est, view = self.m.estimate_collective(request.op, request.ranks, request.bytes, request.algorithm,
                                               list(request.servers), request.gpus_per_server, sharp)
        slowest, rails_up = view.slowest(0) if view.rails_up else (None, view.rails)
        return pb.CollectiveEstimate(
            op=est.op, ranks=est.gpus, bytes=est.size_bytes, algorithm=est.algorithm, time_s=est.time_s,
            algbw_gbps=est.algbw_gbps, busbw_gbps=est.busbw_gbps, bottleneck=est.bottleneck,
            terms=dict(est.terms), params={k: str(v) for k, v in est.params.items()}, modelled=True,
            slowest_server=slowest or "", slowest_rails_up=rails_up, congestion=view.congestion)

    async def WatchEvents(self, request: pb.WatchFabricEventsRequest, context: Any) -> AsyncIterator[pb.FabricEvent]:
        q = self.m.watch()   # subscribe first, then replay: nothing falls between
        try:
            # Replay what is kept after since_seq, then everything new (a since_seq from the
            # future, e.g. after a restart, means "from now on").
            last = min(request.since_seq, self.m.events[-1]["seq"] if self.m.events else 0)
            for ev in list(self.m.events):
                if ev["seq"] > last:
                    last = ev["seq"]
                    yield event_pb(ev)
            while True:
                ev = await q.get()
                if ev["seq"] > last:
                    last = ev["seq"]
                    yield event_pb(ev)
        finally:
            self.m.unwatch(q)
