"""The twin's Python client: typed access to every running daemon, for scripts and users' tests.

    from emulator.client import Twin

    with Twin.up("mini") as twin:                      # or Twin.connect(run_dir) for a running twin
        node = twin.gpu_node("gpu001")
        lease = node.lease("job-1", count=8)
        with twin.events() as events:
            node.inject_xid(gpu=3, xid=79)
            events.wait_for(lambda e: e["kind"] == "lease_end")
        assert not node.lease_info(lease.id).active

Calls return the generated protobuf messages (`clustertwin.v1.gpu_node_pb2`); failures raise
`TwinRpcError` with the gRPC status code and the daemon's message.
"""

from __future__ import annotations

import json
import queue
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import grpc
import paho.mqtt.client as mqtt

from clustertwin.v1 import gpu_node_pb2 as pb
from clustertwin.v1 import gpu_node_pb2_grpc as pb_grpc
from emulator import bus, lifecycle
from emulator.errors import TwinRpcError
from emulator.fabric_client import FabricClient
from emulator.rundir import RunDir

__all__ = ["EventSubscription", "FabricClient", "GpuNodeClient", "Twin", "TwinRpcError"]

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


class EventSubscription:
    """MQTT subscription to a twin's bus; messages arrive as dicts with their topic under '_topic'."""

    def __init__(self, host: str, port: int, topics: list[str], connect_timeout: float = 10.0) -> None:
        self.messages: queue.Queue[dict[str, Any]] = queue.Queue()
        self._subscribed = threading.Event()
        self._client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2)
        self._client.on_connect = lambda c, *_: c.subscribe([(t, 1) for t in topics])
        self._client.on_subscribe = lambda *_: self._subscribed.set()
        self._client.on_message = self._on_message
        self._client.connect(host, port)
        self._client.loop_start()
        if not self._subscribed.wait(connect_timeout):
            self.close()
            raise TimeoutError(f"could not subscribe at MQTT broker {host}:{port} within {connect_timeout:.0f}s")

    def _on_message(self, _client: Any, _userdata: Any, msg: mqtt.MQTTMessage) -> None:
        try:
            doc = json.loads(msg.payload) if msg.payload else {}
        except json.JSONDecodeError:
            doc = {"payload": msg.payload.decode(errors="replace")}
        if not isinstance(doc, dict):
            doc = {"payload": doc}
        doc["_topic"] = msg.topic
        self.messages.put(doc)

    def get(self, timeout: float) -> dict[str, Any]:
        return self.messages.get(timeout=timeout)

    def wait_for(self, predicate: Callable[[dict[str, Any]], bool], timeout: float = 10.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            try:
                msg = self.messages.get(timeout=left)
            except queue.Empty:
                break
            if predicate(msg):
                return msg
        raise TimeoutError(f"no matching message within {timeout:.1f}s")

    def wait_for_all(self, predicates: dict[str, Callable[[dict[str, Any]], bool]],
                     timeout: float = 10.0) -> dict[str, dict[str, Any]]:
        """The first message matching each predicate, whatever order they arrive in (events from
        different daemons race); {name: message}. Messages matching none are dropped."""
        found: dict[str, dict[str, Any]] = {}
        deadline = time.monotonic() + timeout
        while len(found) < len(predicates) and (left := deadline - time.monotonic()) > 0:
            try:
                msg = self.messages.get(timeout=left)
            except queue.Empty:
                break
            for name, predicate in predicates.items():
                if name not in found and predicate(msg):
                    found[name] = msg
        if len(found) < len(predicates):
            missing = sorted(set(predicates) - set(found))
            raise TimeoutError(f"no message for {', '.join(missing)} within {timeout:.1f}s")
        return found

    def close(self) -> None:
        self._client.loop_stop()
        self._client.disconnect()

    def __enter__(self) -> EventSubscription:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


class Twin:
    """A running twin, found through its run directory's manifest."""

    def __init__(self, run: RunDir, manifest: dict[str, Any], owned: bool = False) -> None:
        self.run, self.manifest, self._owned = run, manifest, owned
        self._nodes: dict[str, GpuNodeClient] = {}

    @classmethod
    def connect(cls, run_dir: str | Path | None = None) -> Twin:
        run = RunDir(run_dir)
        return cls(run, run.read(run.manifest))

    @classmethod
    def up(cls, topology: str = "mini", run_dir: str | Path | None = None, **options: Any) -> Twin:
        """Start a twin (stopped again by `down()` or by leaving a `with` block)."""
        run = RunDir(run_dir)
        return cls(run, lifecycle.up(topology, run, **options), owned=True)

    def down(self) -> None:
        for client in self._nodes.values():
            client.close()
        self._nodes.clear()
        lifecycle.down(self.run)

    def __enter__(self) -> Twin:
        return self

    def __exit__(self, *_: object) -> None:
        if self._owned:
            self.down()

    @property
    def name(self) -> str:
        return self.manifest["twin"]

    def daemons(self, kind: str | None = None) -> list[dict[str, Any]]:
        return [d for d in self.manifest["daemons"] if kind is None or d["kind"] == kind]

    @property
    def gpu_nodes(self) -> list[str]:
        return [d["name"] for d in self.daemons("gpu_node")]

    def daemon(self, name: str) -> dict[str, Any]:
        for d in self.manifest["daemons"]:
            if d["name"] == name:
                return d
        known = ", ".join(d["name"] for d in self.manifest["daemons"][:6])
        raise KeyError(f"no daemon named {name!r} in twin {self.name!r} (daemons: {known}, ...)")

    def gpu_node(self, name: str) -> GpuNodeClient:
        if name not in self._nodes:
            d = self.daemon(name)
            if d["kind"] != "gpu_node":
                raise KeyError(f"{name!r} is a {d['kind']}, not a GPU server")
            self._nodes[name] = GpuNodeClient(name, d["grpc"])
        return self._nodes[name]

    def fabric(self) -> FabricClient:
        """The fabric manager (a twin started with --fabric)."""
        found = self.daemons("fabric")
        if not found:
            raise KeyError(f"twin {self.name!r} runs no fabric manager: start it with `twin up --fabric`")
        return FabricClient(found[0]["grpc"], found[0]["name"])

    def status(self) -> dict[str, Any]:
        return lifecycle.status(self.run)

    def events(self, *patterns: str) -> EventSubscription:
        """Subscribe to bus topics under this twin's prefix (default: every event and fault)."""
        b = self.manifest["broker"]
        topics = [f"{b['topic_prefix']}/{p}" for p in (patterns or ("events/#", "faults/#"))]
        return EventSubscription(b["host"], b["port"], topics)

    def topic(self, *parts: str) -> str:
        return "/".join([bus.prefix(self.name), *parts])
