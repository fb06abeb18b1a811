"""Which switch ports carry a compute cable: what `twin net` asks the fabric when its fabric manager
drives the compute plane (a cable named by its two ends on the network plan is ports in ibsim)."""

from __future__ import annotations

from emulator.network.plan import make_network_plan
from emulator.topology import load_topology
from services.fabric.lft_routes import ComputeMap
from services.fabric.netfile import SWITCH, make_fabric_plan


def cable_ports(topology_file: str, a: str, b: str, index: int | None = None) -> dict[str, list[int]] | None:
    """Per switch, the ports of the compute cable(s) between a and b (index None: every parallel
    one) on that switch; None when these are not compute cables of the fabric."""
    topo = load_topology(topology_file)
    plan = make_fabric_plan(topo)
    if a not in plan.nodes and a not in {n.system for n in plan.hcas}:
        return None
    switch = a if a in plan.nodes and plan.nodes[a].kind == SWITCH else b
    per_switch: dict[str, list[int]] = {}
    for node, port in ComputeMap(plan, make_network_plan(topo, "ct0")).ports_of_link(a, b, index):
        if node != switch:   # the request names one switch: its end of every cable
            node, port = plan.peer(node, port) or (node, port)
        per_switch.setdefault(node, []).append(port)
    return per_switch or None
