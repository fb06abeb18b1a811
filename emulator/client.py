"""The twin's Python client: typed access to every running daemon, for scripts and users' tests.

    from emulator.client import Twin

    with Twin.up("mini") as twin:                      # or Twin.connect(run_dir) for a running twin
        node = twin.gpu_node("gpu001")
        lease = node.lease("job-1", count=8)
        with twin.events() as events:
            node.inject_xid(gpu=3, xid=79)
            events.wait_for(lambda e: e["kind"] == "lease_end")
        assert not node.lease_info(lease.id).active

One accessor per service, each a client with documented methods (emulator/sdk/). A service's
accessors come from its registration (emulator/service.py, `Service.sdk`), so `Twin` names none:

    twin.gpu_node("gpu001"), twin.gpu_nodes()   GPU servers (GpuNodeClient)
    twin.fabric()                               the InfiniBand fabric manager (FabricClient)
    twin.ceph(), twin.ceph().rbd()              Ceph admin: status, OSDs, PGs, users, OSD faults; RBD
    twin.s3(access_key, secret_key)             a boto3 S3 client on the gateway
    twin.lustre()                               Lustre admin: statfs, OSS/OST faults, the client calls
    twin.network()                              the netns network: link, switch, host, partition faults
    twin.slurm()                                Slurm: up/down, env, sinfo/squeue
    twin.faults()                               every subsystem's faults in one list

Calls return the generated protobuf messages (`clustertwin.v1.*_pb2`); failures raise `TwinRpcError`
with the gRPC status code and the daemon's message. A service the twin does not run is a
`RunDirError` (or `NotFound` for an unknown daemon name) that says how to start it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from emulator import bus, lifecycle
from emulator.bus import Subscription as EventSubscription
from emulator.errors import TwinRpcError
from emulator.manifest import DaemonEntry, Manifest
from emulator.rundir import RunDir
from emulator.sdk.faults import FaultsClient
from emulator.sdk.gpu_node import FAULT_KINDS, GpuNodeClient
from emulator.sdk.network import NetworkClient
from emulator.service import services

__all__ = ["FAULT_KINDS", "EventSubscription", "FaultsClient", "GpuNodeClient", "NetworkClient", "Twin",
           "TwinRpcError"]

class Twin:
    """A running twin, found through its run directory's manifest."""

    def __init__(self, run: RunDir, manifest: Manifest, owned: bool = False) -> None:
        self.run, self.manifest, self._owned = run, manifest, owned
        self._clients: dict[str, Any] = {}

    @classmethod
    def connect(cls, run_dir: str | Path | None = None) -> Twin:
        run = RunDir(run_dir)
        return cls(run, run.load_manifest())

    @classmethod
    def up(cls, topology: str = "mini", run_dir: str | Path | None = None, **options: Any) -> Twin:
        """Start a twin (stopped again by `down()` or by leaving a `with` block)."""
        run = RunDir(run_dir)
        return cls(run, lifecycle.up(topology, run, **options), owned=True)

    def down(self) -> None:
        for client in self._clients.values():
            client.close()
        self._clients.clear()
        lifecycle.down(self.run)

    def __enter__(self) -> Twin:
        return self

    def __exit__(self, *_: object) -> None:
        if self._owned:
            self.down()

    @property
    def name(self) -> str:
        return self.manifest.twin

    def daemons(self, kind: str | None = None) -> list[DaemonEntry]:
        return list(self.manifest.daemons) if kind is None else self.manifest.daemons_of(kind)

    def daemon(self, name: str) -> DaemonEntry:
        """NotFound for a name the twin does not run."""
        return self.manifest.daemon(name)

    def cached(self, key: str, make: Callable[[], Any]) -> Any:
        """A client kept for the Twin's life (closed by `down()`), made on first use."""
        if key not in self._clients:
            self._clients[key] = make()
        return self._clients[key]

    def __getattr__(self, name: str) -> Any:
        """A service's SDK accessor (`twin.ceph()`, `twin.lustre()`, ...), found in the service registry."""
        for service in services().values():
            if name in service.sdk:
                return service.sdk[name](self)
        raise AttributeError(f"{type(self).__name__} has no attribute {name!r} and no installed service gives it "
                             f"(services: {', '.join(services())})")

    def __dir__(self) -> list[str]:
        return sorted(set(super().__dir__()) | {a for s in services().values() for a in s.sdk})

    def network(self) -> NetworkClient:
        """The emulated network's control (a twin started with --network netns)."""
        return NetworkClient(self.run, self.manifest, cable_ports=getattr(self, "fabric_cable_ports", None))

    def faults(self) -> FaultsClient:
        """Faults across GPU servers, Ceph, the network and Lustre."""
        return FaultsClient(self)

    def status(self) -> dict[str, Any]:
        return lifecycle.status(self.run)

    def events(self, *patterns: str) -> bus.Subscription:
        """Subscribe to bus topics under this twin's prefix (default: every event and fault)."""
        b = self.manifest.broker
        topics = [f"{b.topic_prefix}/{p}" for p in (patterns or ("events/#", "faults/#"))]
        return bus.Subscription(b.host, b.port, topics)

    def topic(self, *parts: str) -> str:
        return "/".join([bus.prefix(self.name), *parts])
