"""The `mininet` backend: the twin's nodes and links made by Mininet's Python API.

    build_network(topo, prefix="ct0", backend="mininet")      # the package chooses `create` below

`create` builds a `Topo` from the plan (`mininet_topo.TwinTopo`: hosts, routers as forwarding
nodes, OOB switches as LinuxBridges, every veth with the plan's interface names) and runs
`Mininet(topo, host=PlanHost, switch=PlanBridge, link=Link, intf=PlanIntf, controller=None)`; each node's
namespace gets the twin's name as the node is made (`ip netns attach <prefix>-<label> <pid>`), and
once built Mininet's shells end: the namespaces live on by name, and the rest of the build (sysctls, addresses, plane
guards, shaping, routes, congestion) is network.py's, the same as the netns backend's.

Links are Mininet's plain `Link`: shaping is the twin's HTB (handle 1:, which the congestion model
attaches to), not TCLink's (handle 5:, and it refuses more than 1000 Mbit/s).

    python -m emulator.network.mininet_build rack [--prefix mn]   # the plan spec, with per-node
                                                                  # setup (topologies/mininet.py)
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from emulator.network.faults import guard_script
from emulator.network.kernel import Job, run_jobs
from emulator.network.mininet_import import load_mininet
from emulator.network.network import HOST_SYSCTLS, QUIET_SYSCTLS, ROUTER_SYSCTLS, Network, bridge_args, phase1
from emulator.network.plan import OOB, NetworkPlan, make_network_plan
from emulator.network.routing import RouteTable, shortest_path_routes


def plan_spec(plan: NetworkPlan, setup: bool = False) -> dict[str, Any]:
    """The plan as `TwinTopo` takes it; with `setup`, what each host and router configures itself
    (sysctls, addresses, routes, plane guard: the bare planes, without the twin)."""
    nodes: list[dict[str, Any]] = [{"name": label, "kind": ns.kind} for label, ns in plan.namespaces.items()]
    oob = {w.a.ns: {"ifname": w.a.ifname, "address": w.a.address} for w in plan.wires if w.plane == OOB and w.a.address}
    for node in nodes:
        if node["name"] in oob:
            node["default"] = oob[node["name"]]
    links = [{"a": w.a.ns, "a_if": w.a.ifname, "b": w.b.ns, "b_if": w.b.ifname} for w in plan.wires]
    if setup:
        _add_setup(plan, nodes)
    return {"prefix": plan.prefix, "topology": plan.topology, "bridge_args": bridge_args(plan),
            "nodes": nodes, "links": links}


def _add_setup(plan: NetworkPlan, nodes: list[dict[str, Any]]) -> None:
    ends: dict[str, list[Any]] = {label: [] for label in plan.namespaces}
    plane_ifs: dict[str, dict[str, tuple[list[str], str]]] = {label: {} for label in plan.namespaces}
    for w in plan.wires:
        for e in (w.a, w.b):
            ends[e.ns].append(e)
            plane_ifs[e.ns].setdefault(w.plane, ([], plan.plane_prefix[w.plane]))[0].append(e.ifname)
    routes = shortest_path_routes(plan, lambda _w: True)
    for node in nodes:
        label, kind = node["name"], node["kind"]
        if kind == "bridge":
            continue
        lines = phase1(plan, label, ends[label]).splitlines()
        lines += RouteTable(plan.ns_name(label)).commands(routes.get(label, []), full=True)
        sysctls = {**QUIET_SYSCTLS, **(ROUTER_SYSCTLS if kind == "router" else HOST_SYSCTLS)}
        node["setup"] = {"sysctls": sysctls, "ip": "\n".join(lines) + "\n",
                         "nft": guard_script(plane_ifs[label]) if kind == "host" else ""}


def _naming_mininet(plan: NetworkPlan) -> Any:
    """Mininet, each node's namespace named `<prefix>-<label>` as soon as the node exists: if this
    process dies mid-build, `clean_network` finds (and its processes, ends) what was made."""
    from mininet.net import Mininet

    class NamingMininet(Mininet):
        def addHost(self, name: str, cls: Any = None, **params: Any) -> Any:
            return self._named(super().addHost(name, cls, **params))

        def addSwitch(self, name: str, cls: Any = None, **params: Any) -> Any:
            return self._named(super().addSwitch(name, cls, **params))

        @staticmethod
        def _named(node: Any) -> Any:
            run_jobs([Job("", "ip", f"netns attach {plan.ns_name(node.name)} {node.pid}\n")])
            return node

    return NamingMininet


def create(net: Network) -> None:
    """Make the plan's nodes and links with Mininet, each namespace named as the twin names it."""
    load_mininet()
    from mininet.link import Link

    from emulator.network.mininet_topo import PlanBridge, PlanHost, PlanIntf, TwinTopo, stop_made

    plan, t = net.plan, net.timings
    t0 = time.monotonic()
    mn = _naming_mininet(plan)(topo=TwinTopo(plan_spec(plan)), host=PlanHost, switch=PlanBridge, link=Link,
                               intf=PlanIntf, controller=None, build=False)
    try:
        mn.build()
        t["mininet_build"] = time.monotonic() - t0
        t0 = time.monotonic()
        for switch in mn.switches:
            switch.start([])
        t["mininet_switches"] = time.monotonic() - t0
    except BaseException:
        mn.stop()
        raise
    stop_made()   # the named namespaces keep the nodes; their shells are no longer needed


def main(argv: list[str] | None = None) -> int:
    from emulator.topology import load_topology

    p = argparse.ArgumentParser(prog="python -m emulator.network.mininet_build",
                                description="Print the twin's plan spec (JSON) for a Mininet Topo.")
    p.add_argument("topology", help="a topology name (rack, su-1024) or YAML file")
    p.add_argument("--prefix", default="mn", help="namespace-name prefix (routes name nexthops by it)")
    args = p.parse_args(argv)
    json.dump(plan_spec(make_network_plan(load_topology(args.topology), args.prefix), setup=True), sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
