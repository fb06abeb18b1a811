"""The GPU servers as a service of the twin (registered in pyproject.toml's clustertwin.services)."""

from __future__ import annotations

from typing import Any

from emulator.errors import NotFound
from emulator.service import DaemonKind, Service
from services.gpu_node.daemon_spec import GpuNodeSpec
from services.gpu_node.plan import plan


def node_client(twin: Any, name: str) -> Any:
    """`twin.gpu_node(name)`: the server's client (emulator.sdk.gpu_node.GpuNodeClient), kept by the Twin."""
    from emulator.sdk.gpu_node import GpuNodeClient

    def make() -> GpuNodeClient:
        d = twin.daemon(name)
        if d.kind != "gpu_node":
            raise NotFound(f"{name!r} is a {d.kind}, not a GPU server")
        return GpuNodeClient(name, d.grpc)
    return twin.cached(f"gpu_node/{name}", make)


def node_names(twin: Any) -> Any:
    """`twin.gpu_nodes`: the servers' names; called, their clients."""
    from emulator.sdk.gpu_node import NodeNames
    return NodeNames((d.name for d in twin.daemons("gpu_node")), lambda name: node_client(twin, name))


SERVICE = Service(
    name="gpu_node", summary="HGX H100 servers: GPUs, NVML/DCGM views, MIG, XID faults, telemetry.",
    order=10, always_on=True, daemons={"gpu_node": DaemonKind("services.gpu_node.daemon:run", GpuNodeSpec)}, plan=plan,
    cli={"gpu": "services.gpu_node.cli:app", "nvml": "services.gpu_node.nvml_cli:app"},
    sdk={"gpu_node": lambda twin: lambda name: node_client(twin, name), "gpu_nodes": node_names},
)
