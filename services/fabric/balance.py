"""Fabric analysis over the real routes: how many flows of a traffic pattern cross each
switch-to-switch link (route balance), and each leaf's up/down capacity (the non-blocking check).
Pure: reads a `FabricState`, follows its LFTs with `FabricState.route`.

Patterns are lists of (source, destination) CA node descriptions ("gpu001 mlx5_0"):

- `ring_flows`: NCCL's ring over all rails, one ring per rail: rail r of server i sends to rail r
  of server i+1 (the last back to the first). Rail-aligned, so a ring crosses a spine only where
  consecutive servers sit on different leaf pairs;
- `all_to_all_flows`: every CA port to every other.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from services.fabric.model import SWITCH, FabricState, RouteError


@dataclass(frozen=True)
class LinkLoad:
    switch: str  # the sending end: "ib-leaf01"
    port: int
    peer: str  # "ib-spine01"
    peer_port: int
    direction: str  # "up" (leaf to spine) or "down" (spine to leaf)
    flows: int


@dataclass
class BalanceReport:
    pattern: str
    flows: int
    routed: int
    unroutable: list[str] = field(default_factory=list)  # "src -> dst: why"
    loads: list[LinkLoad] = field(default_factory=list)  # every Active switch-to-switch port, busy or not

    def busiest(self) -> int:
        return max((load.flows for load in self.loads), default=0)

    def spread(self, direction: str = "up") -> tuple[int, int]:
        """(least, most) flows over the Active links in `direction` that carry any flow of a leaf
        that sends any; (0, 0) if none do."""
        busy_switches = {load.switch for load in self.loads if load.direction == direction and load.flows}
        counts = [load.flows for load in self.loads if load.direction == direction and load.switch in busy_switches]
        return (min(counts), max(counts)) if counts else (0, 0)

    @property
    def balanced(self) -> bool:
        """No uplink of a sending leaf carries more than one flow more than another."""
        lo, hi = self.spread("up")
        return hi - lo <= 1


@dataclass(frozen=True)
class LeafCapacity:
    leaf: str
    down_ports: int  # Active ports to CAs
    up_ports: int  # Active ports to spines
    down_gbps: float
    up_gbps: float

    @property
    def non_blocking(self) -> bool:
        return self.up_gbps >= self.down_gbps


def ring_flows(servers: list[str], rails: int) -> list[tuple[str, str]]:
    n = len(servers)
    return [(f"{servers[i]} mlx5_{r}", f"{servers[(i + 1) % n]} mlx5_{r}")
            for r in range(rails) for i in range(n) if n > 1]


def all_to_all_flows(state: FabricState) -> list[tuple[str, str]]:
    names = sorted(state.systems[p.guid].description for p in state.ca_ports())
    return [(a, b) for a in names for b in names if a != b]


def route_balance(state: FabricState, flows: list[tuple[str, str]], pattern: str = "") -> BalanceReport:
    report = BalanceReport(pattern=pattern, flows=len(flows), routed=0)
    count: Counter[tuple[int, int]] = Counter()
    owners = state.lid_owner()
    lids = {state.systems[guid].description: lid for lid, (guid, port) in owners.items() if port or
            state.systems[guid].kind == SWITCH}
    for src, dst in flows:
        try:
            if src not in lids or dst not in lids:
                raise KeyError(f"no LID for {src if src not in lids else dst!r}")
            route = state.route(lids[src], lids[dst], owners)
        except (KeyError, RouteError) as e:
            report.unroutable.append(f"{src} -> {dst}: {e}")
            continue
        report.routed += 1
        for hop in route.hops:
            count[(hop.guid, hop.out_port)] += 1
    roles = switch_roles(state)
    for (guid, port), p in sorted(state.ports.items()):
        peer = state.peer(guid, port)
        if peer is None or not p.active or roles.get(guid) is None or roles.get(peer[0]) is None:
            continue
        direction = "up" if roles[guid] == "leaf" else "down"
        report.loads.append(LinkLoad(state.systems[guid].description, port, state.systems[peer[0]].description,
                                     peer[1], direction, count[(guid, port)]))
    return report


def leaf_capacity(state: FabricState) -> list[LeafCapacity]:
    roles = switch_roles(state)
    out = []
    for sw in state.switches:
        if roles.get(sw.guid) != "leaf":
            continue
        down = up = 0
        down_gbps = up_gbps = 0.0
        for link in state.links:
            for end, other in ((link.a, link.b), (link.b, link.a)):
                if end[0] != sw.guid:
                    continue
                p = state.ports.get(end)
                if p is None or not p.active:
                    continue
                rate = link.rate_gbps or 0.0
                if roles.get(other[0]) == "spine":
                    up, up_gbps = up + 1, up_gbps + rate
                elif state.systems[other[0]].kind != SWITCH:
                    down, down_gbps = down + 1, down_gbps + rate
        out.append(LeafCapacity(sw.description, down, up, down_gbps, up_gbps))
    return sorted(out, key=lambda c: c.leaf)


def switch_roles(state: FabricState) -> dict[int, str]:
    """Leaves are the switches with a CA cabled to them; the other switches are spines."""
    leaves = set()
    for link in state.links:
        for end, other in ((link.a, link.b), (link.b, link.a)):
            if state.systems[end[0]].kind == SWITCH and state.systems[other[0]].kind != SWITCH:
                leaves.add(end[0])
    return {s.guid: ("leaf" if s.guid in leaves else "spine") for s in state.switches}
