"""OpenSM's forwarding tables as the routes of the namespace compute plane. Pure, no I/O.

The fabric plan (netfile.py) and the network plan (emulator/network/plan.py) cable the compute
fabric identically; `ComputeMap` pairs them port by port:

- HCA `gpu001-mlx5_3` port 1 is host `gpu001`'s `rail3` veth, its leaf port the leaf-side end of
  that veth;
- the i-th cable between a leaf and a spine (in port order) is network link `leaf:spine:i`.

`routes(state)` turns a `FabricState`'s LFTs into whole route tables for every leaf and spine
router namespace: for each destination (every HCA rail address, every other switch's router id)
the one nexthop out of the port the switch's LFT names for that LID — the peer router's id as an
on-link gateway, or, for a host port, the host's rail on the wire. An entry whose out port is not
Active, or a destination without a LID, gets no route (what the fabric itself would drop).
`link_args(node, port)` names the network cable an ibsim port is on, for `Network.link_down`.
"""

from __future__ import annotations

from dataclasses import dataclass

from emulator.network.plan import COMPUTE, NetworkPlan
from emulator.network.routing import Nexthop, Route
from services.fabric.model import FabricState
from services.fabric.netfile import HCA, SWITCH, FabricPlan


@dataclass(frozen=True)
class PortEnd:
    """Where an ibsim port is in the namespace network."""

    ns: str  # namespace label of this end ("ib-leaf01", "gpu001")
    ifname: str  # its interface there
    link: tuple[str, str, int]  # the network link (a, b, index) the cable is


class ComputeMap:
    """The fabric plan's ports paired with the network plan's compute-plane veths."""

    def __init__(self, fabric: FabricPlan, net: NetworkPlan) -> None:
        self.fabric = fabric
        self.net = net
        self.ends: dict[tuple[str, int], PortEnd] = {}
        self.router_id: dict[str, str] = {}
        for sw in fabric.switches:
            ns = net.namespaces.get(sw.id)
            if ns is None or ns.kind != "router" or ns.plane != COMPUTE:
                raise ValueError(f"switch {sw.id} of the fabric has no compute router in the network plan")
            assert ns.router_id is not None
            self.router_id[sw.id] = ns.router_id
        wire_link = {w: lk for lk in net.links if lk.fabric == COMPUTE for w in lk.wires}
        by_end = {}
        for w in net.wires:
            if w.plane == COMPUTE:
                by_end[(w.a.ns, w.a.ifname)] = w
        for cable in fabric.cables:
            if cable.kind == "hca-leaf":
                hca = fabric.nodes[cable.a]
                w = by_end.get((hca.system, f"rail{hca.rail}"))
                if w is None or w.b.ns != cable.b:
                    raise ValueError(f"{hca.id} is cabled to {cable.b}, the network plan disagrees")
                lk = wire_link[w.id]
                self.ends[(cable.a, cable.a_port)] = PortEnd(w.a.ns, w.a.ifname, (lk.a, lk.b, lk.index))
                self.ends[(cable.b, cable.b_port)] = PortEnd(w.b.ns, w.b.ifname, (lk.a, lk.b, lk.index))
        pairs = {(c.a, c.b) for c in fabric.cables if c.kind == "leaf-spine"}
        for leaf, spine in sorted(pairs):
            cables = sorted(fabric.cables_between(leaf, spine), key=lambda c: c.a_port)
            links = sorted((lk for lk in net.links_between(leaf, spine) if lk.fabric == COMPUTE), key=lambda k: k.index)
            if len(cables) != len(links):
                raise ValueError(f"{leaf}-{spine}: {len(cables)} fabric cables but {len(links)} network links")
            for cable, lk in zip(cables, links, strict=True):
                w = net.wires[lk.wires[0]]
                la, lb = (w.a, w.b) if w.a.ns == cable.a else (w.b, w.a)
                self.ends[(cable.a, cable.a_port)] = PortEnd(la.ns, la.ifname, (lk.a, lk.b, lk.index))
                self.ends[(cable.b, cable.b_port)] = PortEnd(lb.ns, lb.ifname, (lk.a, lk.b, lk.index))

    @property
    def routers(self) -> list[str]:
        return list(self.router_id)

    def link_args(self, node: str, port: int) -> tuple[str, str, int]:
        """(a, b, index) of the network cable ibsim's `node` `port` is on: `link_down(*these)`."""
        end = self.ends.get((node, port))
        if end is None:
            raise KeyError(f"{node} port {port} has no cable in the compute network")
        return end.link

    def ports_of_link(self, a: str, b: str, index: int | None = None) -> list[tuple[str, int]]:
        """The fabric ports (one end each) of the network cable(s) between `a` and `b` (all of
        them, or parallel cable `index`), in index order: what `link_down(a, b, index)` cuts."""
        found: dict[int, tuple[str, int]] = {}
        for (node, port), end in self.ends.items():
            la, lb, i = end.link
            if {la, lb} == {a, b} and (index is None or i == index) and i not in found:
                found[i] = (node, port)
        return [found[i] for i in sorted(found)]

    def namespaces_of(self, node: str, port: int) -> list[str]:
        """The namespace labels at both ends of that cable."""
        peer = self.fabric.peer(node, port)
        return [self.ends[e].ns for e in ((node, port), peer) if e is not None and e in self.ends]

    def destinations(self, state: FabricState) -> list[tuple[str, int]]:
        """(prefix, LID) of every HCA rail address and switch router id that has a LID now."""
        out = []
        for hca in self.fabric.hcas:
            p = state.ports.get((hca.guid, 1))
            host = self.net.hosts.get(hca.system)
            if p is None or not p.lid or host is None or hca.rail is None or hca.rail >= len(host.rails):
                continue
            out.append((f"{host.rails[hca.rail]}/32", p.lid))
        for sw in self.fabric.switches:
            system = state.systems.get(sw.guid)
            if system is not None and system.lid:
                out.append((f"{self.router_id[sw.id]}/32", system.lid))
        return out

    def routes(self, state: FabricState) -> dict[str, list[Route]]:
        """{router label: [Route]} for every leaf and spine, from the LFTs in `state`."""
        dests = self.destinations(state)
        hops: dict[tuple[str, int], tuple[Nexthop, ...] | None] = {}
        out: dict[str, list[Route]] = {}
        for sw in self.fabric.switches:
            lft = state.lfts.get(sw.guid, {})
            table: list[Route] = []
            for prefix, lid in dests:
                port = lft.get(lid)
                if not port:  # no entry, or 0: the switch itself
                    continue
                key = (sw.id, port)
                if key not in hops:
                    hops[key] = self._nexthop(state, sw.id, sw.guid, port)
                nh = hops[key]
                if nh is not None:
                    table.append(Route(prefix, nh))
            out[sw.id] = table
        return out

    def _nexthop(self, state: FabricState, switch: str, guid: int, port: int) -> tuple[Nexthop, ...] | None:
        p = state.ports.get((guid, port))
        end = self.ends.get((switch, port))
        peer = self.fabric.peer(switch, port)
        if p is None or not p.active or end is None or peer is None:
            return None
        node = self.fabric.nodes[peer[0]]
        if node.kind == SWITCH:
            return (Nexthop(end.ifname, self.router_id[node.id]),)
        assert node.kind == HCA
        return (Nexthop(end.ifname),)


def uses(routes: list[Route], ifname: str) -> list[str]:
    """The prefixes of `routes` with a nexthop out of `ifname`."""
    return [r.prefix for r in routes if any(nh.dev == ifname for nh in r.nexthops)]
