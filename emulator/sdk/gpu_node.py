"""Client of one emulated HGX H100 server (`clustertwin.v1.GpuNode`): `Twin.gpu_node(name)`.

Calls return the generated protobuf messages (`clustertwin.v1.gpu_node_pb2`); failures raise
`TwinRpcError` with the gRPC status code and the daemon's message.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

import grpc

from clustertwin.v1 import gpu_node_pb2 as pb
from clustertwin.v1 import gpu_node_pb2_grpc as pb_grpc
from emulator import paging
from emulator.errors import BadInput, TwinRpcError

FAULT_KINDS = {
    "xid": pb.GPU_FAULT_KIND_XID,
    "thermal": pb.GPU_FAULT_KIND_THERMAL_SLOWDOWN,
    "ecc-sbe": pb.GPU_FAULT_KIND_ECC_SBE,
    "ecc-dbe": pb.GPU_FAULT_KIND_ECC_DBE,
    "nvlink-down": pb.GPU_FAULT_KIND_NVLINK_DOWN,
}


class EventStream:
    """The daemon's WatchEvents stream as its GpuEvent messages; .cancel() ends it."""

    def __init__(self, call: Any) -> None:
        self._call = call

    def __iter__(self) -> Iterator[pb.GpuEvent]:
        return (response.event for response in self._call)

    def cancel(self) -> bool:
        return self._call.cancel()


class GpuNodeClient:
    """One emulated HGX H100 server."""

    def __init__(self, name: str, address: str, timeout: float = 10.0) -> None:
        self.name, self.address, self.timeout = name, address, timeout
        self._channel = grpc.insecure_channel(address)
        self._stub = pb_grpc.GpuNodeStub(self._channel)

    def _call(self, method: str, request: Any) -> Any:
        try:
            return getattr(self._stub, method)(request, timeout=self.timeout)
        except grpc.RpcError as e:
            raise TwinRpcError(self.name, e.code(), e.details() or "") from None

    def _all(self, method: str, field: str, request: Any) -> list[Any]:
        """Every item of a paginated List RPC: follow next_page_token to the end."""
        return paging.every_page(lambda r: self._call(method, r), request, field)

    def close(self) -> None:
        self._channel.close()

    # queries
    def node(self) -> pb.GpuNodeInfo:
        return self._call("GetNode", pb.GpuGetNodeRequest()).node

    def gpus(self) -> list[pb.GpuInfo]:
        return self._all("ListGpus", "gpus", pb.GpuListGpusRequest())

    def gpu(self, index: int) -> pb.GpuInfo:
        return self._call("GetGpu", pb.GpuGetGpuRequest(gpu=index)).gpu

    def topology(self) -> pb.GpuTopologyMatrix:
        return self._call("GetTopology", pb.GpuGetTopologyRequest()).topology

    def kernel_log(self) -> list[str]:
        return list(self._call("KernelLog", pb.GpuKernelLogRequest()).lines)

    # MIG
    def set_mig(self, gpu: int, enabled: bool) -> pb.GpuInfo:
        return self._call("SetMigMode", pb.GpuSetMigModeRequest(gpu=gpu, enabled=enabled)).gpu

    def mig_profiles(self, gpu: int) -> list[pb.GpuMigProfile]:
        return self._all("ListMigProfiles", "profiles", pb.GpuListMigProfilesRequest(gpu=gpu))

    def gpu_instances(self, gpu: int) -> list[pb.GpuInstance]:
        return self._all("ListGpuInstances", "instances", pb.GpuListGpuInstancesRequest(gpu=gpu))

    def create_gpu_instance(self, gpu: int, profile: str, placement: int | None = None,
                            default_compute_instance: bool = True) -> pb.GpuInstance:
        return self._call("CreateGpuInstance", pb.GpuCreateGpuInstanceRequest(
            gpu=gpu, profile=profile, placement_start=placement,
            default_compute_instance=default_compute_instance)).instance

    def destroy_gpu_instance(self, gpu: int, gi_id: int) -> None:
        self._call("DestroyGpuInstance", pb.GpuDestroyGpuInstanceRequest(gpu=gpu, gi_id=gi_id))

    def create_compute_instance(self, gpu: int, gi_id: int, slices: int) -> pb.GpuComputeInstance:
        return self._call("CreateComputeInstance",
                          pb.GpuCreateComputeInstanceRequest(gpu=gpu, gi_id=gi_id, slices=slices)).instance

    def destroy_compute_instance(self, gpu: int, gi_id: int, ci_id: int) -> None:
        self._call("DestroyComputeInstance", pb.GpuDestroyComputeInstanceRequest(gpu=gpu, gi_id=gi_id, ci_id=ci_id))

    # leases
    def lease(self, job_id: str, count: int = 0, gpus: list[int] | None = None, mig_profile: str = "",
              utilization: int = 0) -> pb.GpuLease:
        return self._call("AcquireLease", pb.GpuAcquireLeaseRequest(
            job_id=job_id, count=count, gpus=gpus or [], mig_profile=mig_profile, utilization=utilization)).lease

    def release(self, lease_id: str) -> pb.GpuLease:
        return self._call("ReleaseLease", pb.GpuReleaseLeaseRequest(lease_id=lease_id)).lease

    def leases(self, include_ended: bool = False) -> list[pb.GpuLease]:
        return self._all("ListLeases", "leases", pb.GpuListLeasesRequest(include_ended=include_ended))

    def lease_info(self, lease_id: str) -> pb.GpuLease:
        for lease in self.leases(include_ended=True):
            if lease.id == lease_id:
                return lease
        raise TwinRpcError(self.name, grpc.StatusCode.NOT_FOUND, f"no lease {lease_id!r}")

    def report_load(self, lease_id: str, utilization: int) -> pb.GpuLease:
        return self._call("ReportLoad", pb.GpuReportLoadRequest(lease_id=lease_id, utilization=utilization)).lease

    def set_lease_pid(self, lease_id: str, pid: int) -> pb.GpuLease:
        return self._call("SetLeasePid", pb.GpuSetLeasePidRequest(lease_id=lease_id, pid=pid)).lease

    # faults
    def inject_fault(self, kind: str, gpu: int, xid: int = 0, link: int = 0, count: int = 0,
                     lease_id: str = "") -> pb.GpuFault:
        if kind not in FAULT_KINDS:
            raise BadInput(f"unknown fault kind {kind!r}; choose one of {', '.join(FAULT_KINDS)}")
        return self._call("InjectFault", pb.GpuInjectFaultRequest(
            kind=FAULT_KINDS[kind], gpu=gpu, xid=xid, link=link, count=count, lease_id=lease_id)).fault

    def inject_xid(self, gpu: int, xid: int, lease_id: str = "") -> pb.GpuFault:
        return self.inject_fault("xid", gpu, xid=xid, lease_id=lease_id)

    def clear_fault(self, fault_id: str) -> pb.GpuFault:
        return self._call("ClearFault", pb.GpuClearFaultRequest(fault_id=fault_id)).fault

    def faults(self, include_cleared: bool = False) -> list[pb.GpuFault]:
        return self._all("ListFaults", "faults", pb.GpuListFaultsRequest(include_cleared=include_cleared))

    def reset_gpu(self, gpu: int) -> pb.GpuInfo:
        return self._call("ResetGpu", pb.GpuResetGpuRequest(gpu=gpu)).gpu

    def reboot(self) -> pb.GpuNodeInfo:
        return self._call("RebootNode", pb.GpuRebootNodeRequest()).node

    def stop_fabric_manager(self) -> pb.GpuNodeInfo:
        return self._call("StopFabricManager", pb.GpuStopFabricManagerRequest()).node

    def start_fabric_manager(self) -> pb.GpuNodeInfo:
        return self._call("StartFabricManager", pb.GpuStartFabricManagerRequest()).node

    def watch_events(self, after_seq: int = 0, replay: bool = True) -> EventStream:
        """Events from the daemon's gRPC stream; iterate, and call .cancel() on it to stop."""
        return EventStream(self._stub.WatchEvents(pb.GpuWatchEventsRequest(after_seq=after_seq, replay=replay)))


class NodeNames(list):
    """GPU-server names, as `Twin.gpu_nodes` always gave them; calling the list gives their clients
    (`twin.gpu_nodes()`), so that both old and new callers read naturally."""

    def __init__(self, names: Iterable[str], client: Callable[[str], GpuNodeClient]) -> None:
        super().__init__(names)
        self._client = client

    def __call__(self) -> list[GpuNodeClient]:
        return [self._client(name) for name in self]
