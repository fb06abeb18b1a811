"""The GPU servers of a topology as daemons: one gpu_node daemon per HGX server, its gRPC API and
its dcgm-exporter metrics on the server's OOB address."""

from __future__ import annotations

from emulator.service import PlanContext, ServicePlan
from services.gpu_node.daemon_spec import GpuNodeSpec

GPU_NODE_GRPC_PORT = 50051
DCGM_EXPORTER_PORT = 9400      # dcgm-exporter's default
GPU_SERVER_HOST_BASE = 16      # host index of the first GPU server (addresses stay stable as roles are added)


def plan(ctx: PlanContext) -> ServicePlan:
    out = ServicePlan()
    for server in ctx.topo.gpu_servers:
        addrs = ctx.hosts.addresses(server.name, GPU_SERVER_HOST_BASE + server.index)
        oob = addrs["oob"]
        spec = GpuNodeSpec(**server.to_dict(), twin=ctx.opts.twin)
        cfg = ctx.config(server.name, "gpu_node", server.name, f"{oob}:{GPU_NODE_GRPC_PORT}", spec=spec,
                         metrics=f"{oob}:{DCGM_EXPORTER_PORT}")
        out.daemons.append(cfg)
        out.entries.append({
            "name": server.name, "kind": "gpu_node", "host": server.name, "rack": server.rack,
            "grpc": cfg.grpc, "metrics": f"http://{cfg.metrics}/metrics", "addresses": addrs,
            "service": "clustertwin.v1.GpuNode", "netns": cfg.netns,
        })
    return out
