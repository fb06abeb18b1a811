"""The InfiniBand fabric manager as a service of the twin (`twin up --fabric`)."""

from __future__ import annotations

import os

from emulator.service import Service, ServiceError
from services.fabric.plan import plan


def check(opts, topo) -> None:  # noqa: ANN001 - emulator.plan.Options, emulator.topology.Topology
    if "fabric" not in opts.services:
        return
    if os.geteuid() != 0:
        raise ServiceError("--fabric needs root (the simulated InfiniBand fabric and OpenSM run as root)")
    from services.fabric.subnet import missing_tools
    if missing := missing_tools():
        raise ServiceError(f"--fabric needs {', '.join(missing)}: run `make install`")


def fabric_client(twin):  # noqa: ANN001, ANN201 - emulator.client.Twin -> emulator.fabric_client.FabricClient
    """The fabric manager's client (a twin started with --fabric)."""
    from emulator.fabric_client import FabricClient
    found = twin.daemons("fabric")
    if not found:
        raise KeyError(f"twin {twin.name!r} runs no fabric manager: start it with `twin up --fabric`")
    return FabricClient(found[0]["grpc"], found[0]["name"])


SERVICE = Service(
    name="fabric", summary="Also run the fabric manager: ibsim + OpenSM, gRPC and UFM REST (root).",
    order=20, daemons={"fabric": "services.fabric.daemon:run"}, plan=plan, check=check,
    cli={"fabric": "emulator.cli.fabric:app", "ib": "emulator.cli.ib:app"},
    sdk={"fabric": lambda twin: lambda: fabric_client(twin)},
)
