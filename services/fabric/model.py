"""The fabric as the subnet manager left it: systems, ports, links and linear forwarding tables
(LFTs), as read back from the simulated switches by infiniband-diags. Pure: no I/O.

`FabricState.route(src_lid, dst_lid)` follows the LFTs hop by hop, exactly as a packet would: from
the source port over its cable to a switch, then at each switch out of the port its LFT names for
the destination LID, until the port that owns that LID. It refuses (RouteError, naming where) a
route that meets a missing LFT entry, a port that is not Active, or a loop.
"""

from __future__ import annotations

from dataclasses import dataclass, field

SWITCH = "switch"
CA = "ca"
ACTIVE = "Active"
MAX_HOPS = 64

# Per-lane data rate (Gb/s) by IB speed name, for a port's nominal rate.
LANE_GBPS = {"SDR": 2.5, "DDR": 5.0, "QDR": 10.0, "FDR10": 10.0, "FDR": 14.0, "EDR": 25.0, "HDR": 50.0,
             "NDR": 100.0}


class RouteError(LookupError):
    """No route: what stopped it, and where."""


@dataclass(frozen=True)
class System:
    guid: int  # node GUID
    kind: str  # SWITCH or CA
    description: str  # NodeDescription: "ib-leaf01", "gpu001 mlx5_3"
    ports: int
    system_guid: int
    device_id: int
    lid: int | None = None  # switches: the LID of port 0


@dataclass(frozen=True)
class Port:
    guid: int  # node GUID of its system
    port: int
    lid: int  # CA ports: their own LID; switch ports: the switch's
    state: str  # "Active", "Down", "Init", "Armed"
    phys: str  # "LinkUp", "Polling", "Disabled", ...
    width: str | None = None  # "4X" when linked
    lane_gbps: float | None = None  # as iblinkinfo prints it (53.125 for HDR)

    @property
    def active(self) -> bool:
        return self.state == ACTIVE


@dataclass(frozen=True)
class Link:
    a: tuple[int, int]  # (node GUID, port)
    b: tuple[int, int]
    speed: str = ""  # "4xHDR", as ibnetdiscover prints it

    @property
    def rate_gbps(self) -> float | None:
        lanes, _, name = self.speed.partition("x")
        if not lanes.isdigit() or name not in LANE_GBPS:
            return None
        return int(lanes) * LANE_GBPS[name]


@dataclass(frozen=True)
class Hop:
    guid: int  # the switch
    in_port: int
    out_port: int


@dataclass(frozen=True)
class Route:
    src_lid: int
    dst_lid: int
    hops: tuple[Hop, ...]  # one per switch crossed

    def switches(self) -> list[int]:
        return [h.guid for h in self.hops]


@dataclass
class FabricState:
    systems: dict[int, System] = field(default_factory=dict)
    ports: dict[tuple[int, int], Port] = field(default_factory=dict)
    links: list[Link] = field(default_factory=list)
    lfts: dict[int, dict[int, int]] = field(default_factory=dict)  # switch GUID -> {LID: out port}
    _peer: dict[tuple[int, int], tuple[int, int]] = field(default_factory=dict, repr=False)

    def add_link(self, link: Link) -> None:
        if link.a in self._peer or link.b in self._peer:
            return  # each cable appears from both ends in the diags' output
        self.links.append(link)
        self._peer[link.a] = link.b
        self._peer[link.b] = link.a

    def peer(self, guid: int, port: int) -> tuple[int, int] | None:
        return self._peer.get((guid, port))

    @property
    def switches(self) -> list[System]:
        return [s for s in self.systems.values() if s.kind == SWITCH]

    @property
    def cas(self) -> list[System]:
        return [s for s in self.systems.values() if s.kind == CA]

    def ca_ports(self) -> list[Port]:
        return [p for (guid, _), p in self.ports.items() if self.systems[guid].kind == CA]

    def by_description(self, description: str) -> System:
        for system in self.systems.values():
            if system.description == description:
                return system
        raise KeyError(f"no system described {description!r} in the fabric")

    def lid_of(self, description: str, port: int = 1) -> int:
        """A CA port's LID, or a switch's, by node description."""
        system = self.by_description(description)
        if system.kind == SWITCH:
            if system.lid is None:
                raise KeyError(f"switch {description!r} has no LID")
            return system.lid
        p = self.ports.get((system.guid, port))
        if p is None or not p.lid:
            raise KeyError(f"{description!r} port {port} has no LID")
        return p.lid

    def lid_owner(self) -> dict[int, tuple[int, int]]:
        """LID -> (node GUID, port): CA ports and switches' port 0."""
        owners: dict[int, tuple[int, int]] = {}
        for s in self.switches:
            if s.lid:
                owners[s.lid] = (s.guid, 0)
        for p in self.ca_ports():
            if p.lid:
                owners[p.lid] = (p.guid, p.port)
        return owners

    def route(self, src_lid: int, dst_lid: int, owners: dict[int, tuple[int, int]] | None = None) -> Route:
        """Follow the LFTs from `src_lid` to `dst_lid`. Pass `owners` (`lid_owner()`) when routing
        many pairs over one state, to compute it once."""
        owners = self.lid_owner() if owners is None else owners
        if src_lid not in owners:
            raise RouteError(f"source LID {src_lid} is not assigned")
        if dst_lid not in owners:
            raise RouteError(f"destination LID {dst_lid} is not assigned")
        guid, port = owners[src_lid]
        dst = owners[dst_lid]
        hops: list[Hop] = []
        if self.systems[guid].kind == CA:
            if (guid, port) == dst:
                return Route(src_lid, dst_lid, ())
            guid, port = self._cross(guid, port)
        else:
            port = 0
        seen: set[int] = set()
        while len(hops) < MAX_HOPS:
            if guid in seen:
                raise RouteError(f"LID {dst_lid} loops back to {self.systems[guid].description}")
            seen.add(guid)
            out = self.lfts.get(guid, {}).get(dst_lid)
            name = self.systems[guid].description
            if out is None:
                raise RouteError(f"{name} has no LFT entry for LID {dst_lid}")
            hops.append(Hop(guid, port, out))
            if out == 0:
                if dst != (guid, 0):
                    raise RouteError(f"{name} delivers LID {dst_lid} to itself, but it is not its LID")
                return Route(src_lid, dst_lid, tuple(hops))
            guid, port = self._cross(guid, out)
            if (guid, port) == dst:
                return Route(src_lid, dst_lid, tuple(hops))
            if self.systems[guid].kind != SWITCH:
                raise RouteError(f"LID {dst_lid} is sent from {name} port {out} to "
                                 f"{self.systems[guid].description}, which does not own it")
        raise RouteError(f"no route from LID {src_lid} to {dst_lid} within {MAX_HOPS} hops")

    def _cross(self, guid: int, port: int) -> tuple[int, int]:
        """Over the cable from (guid, port); the port must be Active."""
        name = self.systems[guid].description
        p = self.ports.get((guid, port))
        if p is None or not p.active:
            state = p.state if p else "unknown"
            raise RouteError(f"{name} port {port} is {state}, not Active")
        peer = self.peer(guid, port)
        if peer is None:
            raise RouteError(f"{name} port {port} has no cable")
        return peer
