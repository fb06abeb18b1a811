"""The GpuNode gRPC service (grpc.aio): a thin adapter over `NodeModel`.

Each RPC translates the request, calls the model with `now=clock()` and translates the answer.
Mutations run under one asyncio.Lock and end with `commit()`: drain the model's events, await
`persist(events)` (the daemon saves state and publishes there), then fan the events out to
WatchEvents subscribers. So a reply is only sent once its change is durable, and watchers never
see an event that was not persisted.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc

from clustertwin.v1 import gpu_node_pb2 as pb
from clustertwin.v1 import gpu_node_pb2_grpc as pb_grpc
from emulator import paging
from emulator.errors import DaemonError
from services.gpu_node import convert
from services.gpu_node.errors import ModelError
from services.gpu_node.model import NodeModel

Persist = Callable[[list[dict[str, Any]]], Awaitable[None]]

REBOOT_POLL_S = 0.05      # wall seconds between fabric-training checks while RebootNode waits
REBOOT_WAIT_MAX_S = 60.0  # wall seconds: reply anyway (GPUs still training) if the clock stalls
WATCH_QUEUE_MAX = 10_000  # a watcher this far behind is cut off and told where to resume

_CLOSE = object()
_OVERFLOW = object()


class PersistError(Exception):
    """persist() failed: the change is applied in memory and will be retried with the next commit."""


def _rpc(mutating: bool) -> Callable[[Callable[..., Any]], Callable[..., Awaitable[Any]]]:
    """Wrap `fn(self, request, now) -> reply` as a grpc.aio handler with error mapping."""

    def wrap(fn: Callable[..., Any]) -> Callable[..., Awaitable[Any]]:
        @functools.wraps(fn)
        async def handler(self: GpuNodeServicer, request: Any, context: grpc.aio.ServicerContext) -> Any:
            try:
                if not mutating:
                    return fn(self, request, self._clock())
                async with self._lock:
                    reply = fn(self, request, self._clock())
                    await self._commit_locked()
                    return reply
            except DaemonError as e:   # the model's ModelError, or a bad page_token/page_size (emulator/paging.py)
                await e.abort(context)
            except PersistError as e:
                await context.abort(grpc.StatusCode.UNAVAILABLE, str(e))

        return handler

    return wrap


def _serial(record: Any) -> int:
    """A lease's or fault's sequence number (the N of its id `<node>-lease-N` / `<node>-fault-N`): the
    key its List RPC pages by."""
    return int(record.id.rsplit("-", 1)[1])


class GpuNodeServicer(pb_grpc.GpuNodeServicer):
    def __init__(self, model: NodeModel, clock: Callable[[], float], persist: Persist) -> None:
        self._model = model
        self._clock = clock
        self._persist = persist
        self._lock = asyncio.Lock()
        self._watchers: set[asyncio.Queue[object]] = set()
        self._closed = False

    # ------------------------------------------------------------------ commit and fan-out

    async def commit(self) -> None:
        """Persist and publish whatever the model changed (the daemon calls this after `tick`)."""
        async with self._lock:
            await self._commit_locked()

    async def apply(self, change: Callable[[float], Any]) -> Any:
        """A change from outside gRPC (NVML's set calls, nvml_control.py) under the same lock and
        commit as an RPC's: its answer once the change is durable."""
        async with self._lock:
            result = change(self._clock())
            await self._commit_locked()
            return result

    async def _commit_locked(self) -> None:
        events = self._model.drain_events()
        try:
            await self._persist(events)
        except Exception as exc:  # the daemon's storage or broker failed, not the caller
            self._model.requeue_events(events)
            raise PersistError(f"{self._model.spec.name}: change applied but not yet persisted: {exc}") from exc
        for q in list(self._watchers):
            for e in events:
                try:
                    q.put_nowait(e)
                except asyncio.QueueFull:
                    while not q.empty():
                        q.get_nowait()
                    q.put_nowait(_OVERFLOW)
                    break

    async def close(self) -> None:
        """End every WatchEvents stream (server shutdown)."""
        self._closed = True
        for q in list(self._watchers):
            while not q.empty():
                q.get_nowait()
            q.put_nowait(_CLOSE)

    # ------------------------------------------------------------------ queries

    @_rpc(mutating=False)
    def GetNode(self, request: pb.GpuGetNodeRequest, now: float) -> pb.GpuGetNodeResponse:
        return pb.GpuGetNodeResponse(node=convert.node(self._model.node_info(now)))

    @_rpc(mutating=False)
    def ListGpus(self, request: pb.GpuListGpusRequest, now: float) -> pb.GpuListGpusResponse:
        return paging.listed(pb.GpuListGpusResponse, "gpus", self._model.list_gpus(), request, convert.gpu,
                             key=lambda g: g.index)

    @_rpc(mutating=False)
    def GetGpu(self, request: pb.GpuGetGpuRequest, now: float) -> pb.GpuGetGpuResponse:
        return pb.GpuGetGpuResponse(gpu=convert.gpu(self._model.gpu_info(request.gpu)))

    @_rpc(mutating=False)
    def GetTopology(self, request: pb.GpuGetTopologyRequest, now: float) -> pb.GpuGetTopologyResponse:
        return pb.GpuGetTopologyResponse(topology=convert.topology(self._model.topology()))

    @_rpc(mutating=False)
    def ListMigProfiles(self, request: pb.GpuListMigProfilesRequest, now: float) -> pb.GpuListMigProfilesResponse:
        return paging.listed(pb.GpuListMigProfilesResponse, "profiles", self._model.mig_profiles(request.gpu), request,
                             convert.mig_profile)

    @_rpc(mutating=False)
    def ListGpuInstances(self, request: pb.GpuListGpuInstancesRequest, now: float) -> pb.GpuListGpuInstancesResponse:
        return paging.listed(pb.GpuListGpuInstancesResponse, "instances", self._model.gpu_instances(request.gpu),
                             request, convert.gpu_instance)

    @_rpc(mutating=False)
    def ListLeases(self, request: pb.GpuListLeasesRequest, now: float) -> pb.GpuListLeasesResponse:
        return paging.listed(pb.GpuListLeasesResponse, "leases", self._model.leases(request.include_ended), request,
                             convert.lease, key=_serial)

    @_rpc(mutating=False)
    def ListFaults(self, request: pb.GpuListFaultsRequest, now: float) -> pb.GpuListFaultsResponse:
        return paging.listed(pb.GpuListFaultsResponse, "faults", self._model.faults(request.include_cleared), request,
                             convert.fault, key=_serial)

    @_rpc(mutating=False)
    def KernelLog(self, request: pb.GpuKernelLogRequest, now: float) -> pb.GpuKernelLogResponse:
        return pb.GpuKernelLogResponse(lines=self._model.kernel_log())

    # ------------------------------------------------------------------ MIG

    @_rpc(mutating=True)
    def SetMigMode(self, request: pb.GpuSetMigModeRequest, now: float) -> pb.GpuSetMigModeResponse:
        return pb.GpuSetMigModeResponse(gpu=convert.gpu(self._model.set_mig_mode(request.gpu, request.enabled, now)))

    @_rpc(mutating=True)
    def CreateGpuInstance(self, request: pb.GpuCreateGpuInstanceRequest, now: float) -> pb.GpuCreateGpuInstanceResponse:
        start = request.placement_start if request.HasField("placement_start") else None
        view = self._model.create_gpu_instance(
            request.gpu, request.profile, now, placement_start=start,
            default_compute_instance=request.default_compute_instance,
        )
        return pb.GpuCreateGpuInstanceResponse(instance=convert.gpu_instance(view))

    @_rpc(mutating=True)
    def DestroyGpuInstance(self, request: pb.GpuDestroyGpuInstanceRequest,
                           now: float) -> pb.GpuDestroyGpuInstanceResponse:
        self._model.destroy_gpu_instance(request.gpu, request.gi_id, now)
        return pb.GpuDestroyGpuInstanceResponse()

    @_rpc(mutating=True)
    def CreateComputeInstance(self, request: pb.GpuCreateComputeInstanceRequest,
                              now: float) -> pb.GpuCreateComputeInstanceResponse:
        view = self._model.create_compute_instance(request.gpu, request.gi_id, request.slices, now)
        return pb.GpuCreateComputeInstanceResponse(instance=convert.compute_instance(view))

    @_rpc(mutating=True)
    def DestroyComputeInstance(self, request: pb.GpuDestroyComputeInstanceRequest,
                               now: float) -> pb.GpuDestroyComputeInstanceResponse:
        self._model.destroy_compute_instance(request.gpu, request.gi_id, request.ci_id, now)
        return pb.GpuDestroyComputeInstanceResponse()

    # ------------------------------------------------------------------ leases

    @_rpc(mutating=True)
    def AcquireLease(self, request: pb.GpuAcquireLeaseRequest, now: float) -> pb.GpuAcquireLeaseResponse:
        lease = self._model.acquire(
            request.job_id, now, count=request.count, gpus=list(request.gpus),
            mig_profile=request.mig_profile, utilization=request.utilization,
        )
        return pb.GpuAcquireLeaseResponse(lease=convert.lease(lease))

    @_rpc(mutating=True)
    def ReleaseLease(self, request: pb.GpuReleaseLeaseRequest, now: float) -> pb.GpuReleaseLeaseResponse:
        return pb.GpuReleaseLeaseResponse(lease=convert.lease(self._model.release(request.lease_id, now)))

    @_rpc(mutating=True)
    def ReportLoad(self, request: pb.GpuReportLoadRequest, now: float) -> pb.GpuReportLoadResponse:
        lease = self._model.report_load(request.lease_id, request.utilization, now)
        return pb.GpuReportLoadResponse(lease=convert.lease(lease))

    @_rpc(mutating=True)
    def SetLeasePid(self, request: pb.GpuSetLeasePidRequest, now: float) -> pb.GpuSetLeasePidResponse:
        return pb.GpuSetLeasePidResponse(lease=convert.lease(self._model.set_pid(request.lease_id, request.pid, now)))

    # ------------------------------------------------------------------ faults

    @_rpc(mutating=True)
    def InjectFault(self, request: pb.GpuInjectFaultRequest, now: float) -> pb.GpuInjectFaultResponse:
        fault = self._model.inject_fault(
            convert.fault_kind(request.kind), request.gpu, now, xid=request.xid, link=request.link,
            count=request.count, lease_id=request.lease_id,
        )
        return pb.GpuInjectFaultResponse(fault=convert.fault(fault))

    @_rpc(mutating=True)
    def ClearFault(self, request: pb.GpuClearFaultRequest, now: float) -> pb.GpuClearFaultResponse:
        return pb.GpuClearFaultResponse(fault=convert.fault(self._model.clear_fault(request.fault_id, now)))

    @_rpc(mutating=True)
    def ResetGpu(self, request: pb.GpuResetGpuRequest, now: float) -> pb.GpuResetGpuResponse:
        return pb.GpuResetGpuResponse(gpu=convert.gpu(self._model.reset_gpu(request.gpu, now)))

    async def RebootNode(self, request: pb.GpuRebootNodeRequest,
                         context: grpc.aio.ServicerContext) -> pb.GpuRebootNodeResponse:
        """Reboot and wait for the node to come back: the reply is sent once the fabric manager has
        trained every GPU's NVLinks (about `spec.fabric_training_s` twin seconds), ticking the model
        meanwhile so the training events are persisted and published as they happen. Other RPCs
        are served during the wait and see the GPUs training (leases refused)."""
        try:
            async with self._lock:
                self._model.reboot(self._clock())
                await self._commit_locked()
            give_up = time.monotonic() + REBOOT_WAIT_MAX_S
            while True:
                async with self._lock:
                    now = self._clock()
                    self._model.tick(now)
                    await self._commit_locked()
                    if self._model.fabric_ready_at() is None or time.monotonic() >= give_up:
                        return pb.GpuRebootNodeResponse(node=convert.node(self._model.node_info(now)))
                await asyncio.sleep(REBOOT_POLL_S)
        except ModelError as e:
            await e.abort(context)
        except PersistError as e:
            await context.abort(grpc.StatusCode.UNAVAILABLE, str(e))
            raise  # not reached: abort raises

    @_rpc(mutating=True)
    def StopFabricManager(self, request: pb.GpuStopFabricManagerRequest, now: float) -> pb.GpuStopFabricManagerResponse:
        return pb.GpuStopFabricManagerResponse(node=convert.node(self._model.stop_fabric_manager(now)))

    @_rpc(mutating=True)
    def StartFabricManager(self, request: pb.GpuStartFabricManagerRequest,
                           now: float) -> pb.GpuStartFabricManagerResponse:
        return pb.GpuStartFabricManagerResponse(node=convert.node(self._model.start_fabric_manager(now)))

    # ------------------------------------------------------------------ events

    async def WatchEvents(
        self, request: pb.GpuWatchEventsRequest, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[pb.GpuWatchEventsResponse]:
        queue: asyncio.Queue[object] = asyncio.Queue(maxsize=WATCH_QUEUE_MAX)
        # Under the lock no commit is half done, so backlog + live events have no gap.
        async with self._lock:
            backlog = self._model.events_after(request.after_seq) if request.replay else []
            if self._closed:
                queue.put_nowait(_CLOSE)
            self._watchers.add(queue)
        last = request.after_seq
        try:
            for e in backlog:
                last = e["seq"]
                yield pb.GpuWatchEventsResponse(event=convert.event(e))
            while True:
                item = await queue.get()
                if item is _CLOSE:
                    return
                if item is _OVERFLOW:
                    await context.abort(
                        grpc.StatusCode.RESOURCE_EXHAUSTED,
                        f"{self._model.spec.name}: watcher fell behind; resume with replay after_seq={last}",
                    )
                assert isinstance(item, dict)
                if item["seq"] <= last:
                    continue
                last = item["seq"]
                yield pb.GpuWatchEventsResponse(event=convert.event(item))
        finally:
            self._watchers.discard(queue)
