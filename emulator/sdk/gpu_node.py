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
from emulator.errors import TwinRpcError

FAULT_KINDS = {
    "xid": pb.FAULT_KIND_XID,
    "thermal": pb.FAULT_KIND_THERMAL_SLOWDOWN,
    "ecc-sbe": pb.FAULT_KIND_ECC_SBE,
    "ecc-dbe": pb.FAULT_KIND_ECC_DBE,
    "nvlink-down": pb.FAULT_KIND_NVLINK_DOWN,
}


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

    def close(self) -> None:
        self._channel.close()

    # queries
    def node(self) -> pb.NodeInfo:
        return self._call("GetNode", pb.GetNodeRequest())

    def gpus(self) -> list[pb.GpuInfo]:
        return list(self._call("ListGpus", pb.ListGpusRequest()).gpus)

    def gpu(self, index: int) -> pb.GpuInfo:
        return self._call("GetGpu", pb.GpuRequest(gpu=index))

    def topology(self) -> pb.TopologyMatrix:
        return self._call("GetTopology", pb.GetNodeRequest())

    def kernel_log(self) -> list[str]:
        return list(self._call("KernelLog", pb.KernelLogRequest()).lines)

    # MIG
    def set_mig(self, gpu: int, enabled: bool) -> pb.GpuInfo:
        return self._call("SetMigMode", pb.SetMigModeRequest(gpu=gpu, enabled=enabled))

    def mig_profiles(self, gpu: int) -> list[pb.MigProfile]:
        return list(self._call("ListMigProfiles", pb.GpuRequest(gpu=gpu)).profiles)

    def gpu_instances(self, gpu: int) -> list[pb.GpuInstance]:
        return list(self._call("ListGpuInstances", pb.GpuRequest(gpu=gpu)).instances)

    def create_gpu_instance(self, gpu: int, profile: str, placement: int | None = None,
                            default_compute_instance: bool = True) -> pb.GpuInstance:
        return self._call("CreateGpuInstance", pb.CreateGpuInstanceRequest(
            gpu=gpu, profile=profile, has_placement=placement is not None, placement_start=placement or 0,
            default_compute_instance=default_compute_instance))

    def destroy_gpu_instance(self, gpu: int, gi_id: int) -> None:
        self._call("DestroyGpuInstance", pb.DestroyGpuInstanceRequest(gpu=gpu, gi_id=gi_id))

    def create_compute_instance(self, gpu: int, gi_id: int, slices: int) -> pb.ComputeInstance:
        return self._call("CreateComputeInstance", pb.CreateComputeInstanceRequest(gpu=gpu, gi_id=gi_id, slices=slices))

    def destroy_compute_instance(self, gpu: int, gi_id: int, ci_id: int) -> None:
        self._call("DestroyComputeInstance", pb.DestroyComputeInstanceRequest(gpu=gpu, gi_id=gi_id, ci_id=ci_id))

    # leases
    def lease(self, job_id: str, count: int = 0, gpus: list[int] | None = None, mig_profile: str = "",
              utilization: int = 0) -> pb.Lease:
        return self._call("AcquireLease", pb.LeaseRequest(job_id=job_id, count=count, gpus=gpus or [],
                                                          mig_profile=mig_profile, utilization=utilization))

    def release(self, lease_id: str) -> pb.Lease:
        return self._call("ReleaseLease", pb.LeaseId(lease_id=lease_id))

    def leases(self, include_ended: bool = False) -> list[pb.Lease]:
        return list(self._call("ListLeases", pb.ListLeasesRequest(include_ended=include_ended)).leases)

    def lease_info(self, lease_id: str) -> pb.Lease:
        for lease in self.leases(include_ended=True):
            if lease.id == lease_id:
                return lease
        raise TwinRpcError(self.name, grpc.StatusCode.NOT_FOUND, f"no lease {lease_id!r}")

    def report_load(self, lease_id: str, utilization: int) -> pb.Lease:
        return self._call("ReportLoad", pb.ReportLoadRequest(lease_id=lease_id, utilization=utilization))

    # faults
    def inject_fault(self, kind: str, gpu: int, xid: int = 0, link: int = 0, count: int = 0,
                     lease_id: str = "") -> pb.Fault:
        if kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault kind {kind!r}; choose one of {', '.join(FAULT_KINDS)}")
        return self._call("InjectFault", pb.InjectFaultRequest(kind=FAULT_KINDS[kind], gpu=gpu, xid=xid, link=link,
                                                               count=count, lease_id=lease_id))

    def inject_xid(self, gpu: int, xid: int, lease_id: str = "") -> pb.Fault:
        return self.inject_fault("xid", gpu, xid=xid, lease_id=lease_id)

    def clear_fault(self, fault_id: str) -> pb.Fault:
        return self._call("ClearFault", pb.FaultId(fault_id=fault_id))

    def faults(self, include_cleared: bool = False) -> list[pb.Fault]:
        return list(self._call("ListFaults", pb.ListFaultsRequest(include_cleared=include_cleared)).faults)

    def reset_gpu(self, gpu: int) -> pb.GpuInfo:
        return self._call("ResetGpu", pb.GpuRequest(gpu=gpu))

    def reboot(self) -> pb.NodeInfo:
        return self._call("RebootNode", pb.GetNodeRequest())

    def stop_fabric_manager(self) -> pb.NodeInfo:
        return self._call("StopFabricManager", pb.GetNodeRequest())

    def start_fabric_manager(self) -> pb.NodeInfo:
        return self._call("StartFabricManager", pb.GetNodeRequest())

    def watch_events(self, after_seq: int = 0, replay: bool = True) -> Iterator[pb.Event]:
        """Events from the daemon's gRPC stream; iterate, and call .cancel() on it to stop."""
        return self._stub.WatchEvents(pb.WatchEventsRequest(after_seq=after_seq, replay=replay))


class NodeNames(list):
    """GPU-server names, as `Twin.gpu_nodes` always gave them; calling the list gives their clients
    (`twin.gpu_nodes()`), so that both old and new callers read naturally."""

    def __init__(self, names: Iterable[str], client: Callable[[str], GpuNodeClient]) -> None:
        super().__init__(names)
        self._client = client

    def __call__(self) -> list[GpuNodeClient]:
        return [self._client(name) for name in self]
