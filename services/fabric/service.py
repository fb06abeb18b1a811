"""The InfiniBand fabric manager as a service of the twin (`twin up --fabric`)."""

from __future__ import annotations

import os

from emulator.errors import NotFound
from emulator.service import DaemonKind, Service, ServiceError
from services.fabric.daemon_spec import FabricSpec
from services.fabric.plan import plan


def check(opts, topo) -> None:  # noqa: ANN001 - emulator.plan.Options, emulator.topology.Topology
    if "fabric" not in opts.services:
        return
    if os.geteuid() != 0:
        raise ServiceError("--fabric needs root (the simulated InfiniBand fabric and OpenSM run as root)")
    from services.fabric.subnet import missing_tools
    if missing := missing_tools():
        raise ServiceError(f"--fabric needs {', '.join(missing)}: run `make install`")


def fabric_client(twin):  # noqa: ANN001, ANN201 - emulator.client.Twin -> services.fabric.sdk.FabricClient
    """The fabric manager's client (a twin started with --fabric)."""
    from services.fabric.sdk import FabricClient
    found = twin.daemons("fabric")
    if not found:
        raise NotFound(f"twin {twin.name!r} runs no fabric manager: start it with `twin up --fabric`")
    return FabricClient(found[0].grpc, found[0].name)


def cable_ports(twin, a: str, b: str, index: int | None):  # noqa: ANN001, ANN201 - emulator.client.Twin
    """`twin.fabric_cable_ports(a, b)`: per switch, the ports of the compute cable(s) between a and b."""
    from services.fabric.cables import cable_ports as ports
    return ports(twin.run.read(twin.run.config)["topology_file"], a, b, index)


SERVICE = Service(
    name="fabric", summary="Also run the fabric manager: ibsim + OpenSM, gRPC and UFM REST (root).",
    order=20, daemons={"fabric": DaemonKind("services.fabric.daemon:run", FabricSpec)}, plan=plan, check=check,
    cli={"fabric": "services.fabric.cli:app", "ib": "services.fabric.cli_ib:app"},
    sdk={"fabric": lambda twin: lambda: fabric_client(twin),
         "fabric_cable_ports": lambda twin: lambda a, b, index=None: cable_ports(twin, a, b, index)},
)
