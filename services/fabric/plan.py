"""The fabric manager as a daemon: UFM's role, on the topology's UFM (or first management) node,
its gRPC API and UFM REST on that node's OOB address."""

from __future__ import annotations

from emulator.plan import MANAGEMENT_HOST_BASE
from emulator.service import PlanContext, ServicePlan
from emulator.topology import Topology
from services.fabric.daemon_spec import DEFAULT_UFM_PASSWORD, DEFAULT_UFM_USER, FabricSpec
from services.fabric.manifest import FabricEntry

FABRIC_GRPC_PORT = 50052
UFM_REST_PORT = 80


def fabric_host(topo: Topology) -> tuple[str, int]:
    """The management node the fabric manager (UFM) runs on, and its host index."""
    roles = [(m.name, m.role) for m in topo.spec.management_nodes]
    for wanted in ("ufm", "mgmt"):
        for i, (name, role) in enumerate(roles):
            if role == wanted:
                return name, MANAGEMENT_HOST_BASE + i
    return roles[0][0], MANAGEMENT_HOST_BASE


def plan(ctx: PlanContext) -> ServicePlan:
    host, index = fabric_host(ctx.topo)
    addrs = ctx.hosts.addresses(host, index)
    oob = addrs["oob"]
    cfg = ctx.config("fabric", "fabric", host, f"{oob}:{FABRIC_GRPC_PORT}",
                     spec=FabricSpec(topology_file=str(ctx.topo.source), ufm=f"{oob}:{UFM_REST_PORT}"))
    entry = FabricEntry(name="fabric", kind="fabric", host=host, grpc=cfg.grpc, addresses=addrs,
                        ufm=f"http://{oob}:{UFM_REST_PORT}/ufmRest", ufm_user=DEFAULT_UFM_USER,
                        ufm_password=DEFAULT_UFM_PASSWORD, service="clustertwin.v1.Fabric", netns=cfg.netns)
    return ServicePlan([cfg], [entry.model_dump()])
