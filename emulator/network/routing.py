"""Routes: the one interface through which routes reach the kernel, and shortest-path ECMP.

`RouteTable` is the routing table of one namespace. Whoever computes routes (today
`shortest_path_routes` below; later the fabric manager, from OpenSM's forwarding tables) hands it
the whole table as `[(prefix, [Nexthop, ...])]` and it installs the difference as nexthop objects,
nexthop groups (ECMP) and `route replace` lines in one `ip -batch`.

    table.set([("10.100.0.4/32", [Nexthop("ib-spine01-0", "10.100.255.3"),
                                   Nexthop("ib-spine02-0", "10.100.255.4")])])
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from emulator.network.kernel import Job, run_jobs
from emulator.network.plan import NetworkPlan, Wire

GROUP_ID_BASE = 1 << 20


class Nexthop(NamedTuple):
    dev: str
    via: str | None = None  # an on-link gateway (a router id); None: the destination is on the wire


def _canonical(nhs: Iterable[Nexthop]) -> tuple[Nexthop, ...]:
    return tuple(sorted(set(nhs), key=lambda n: (n.dev, n.via or "")))


@dataclass(frozen=True)
class Route:
    prefix: str
    nexthops: tuple[Nexthop, ...]
    src: str | None = None  # preferred source address


RouteSpec = Route | tuple[str, Sequence[Nexthop | tuple[str | None, str]]]


def as_route(spec: RouteSpec) -> Route:
    """A `Route` is taken as given (its nexthops sorted and unique, as `shortest_path_routes`
    makes them); a `(prefix, [(via, dev) | Nexthop, ...])` pair is put in that form."""
    if isinstance(spec, Route):
        return spec
    prefix, hops = spec
    return Route(prefix, _canonical(h if isinstance(h, Nexthop) else Nexthop(dev=h[1], via=h[0]) for h in hops))


class RouteTable:
    """The routes of one namespace, as last installed by this object."""

    def __init__(self, netns: str) -> None:
        self.netns = netns
        self._nh_ids: dict[Nexthop, int] = {}
        self._group_ids: dict[tuple[Nexthop, ...], int] = {}
        self._routes: dict[str, tuple[tuple[Nexthop, ...], str | None]] = {}
        self._next_nh = 1
        self._next_group = GROUP_ID_BASE
        self._intern: dict[tuple[Nexthop, ...], tuple[Nexthop, ...]] = {}
        self.known = True  # False: the kernel may differ from what we last installed; rewrite all

    @property
    def routes(self) -> list[Route]:
        return [Route(p, nhs, src) for p, (nhs, src) in sorted(self._routes.items())]

    def commands(self, routes: Iterable[RouteSpec], full: bool = False) -> list[str]:
        """`ip -batch` lines taking the kernel from the last installed table to `routes`.

        `full` rewrites every entry (`replace` is idempotent): for a namespace where the kernel
        dropped nexthops by itself (a device went down) or whose state is unknown."""
        full = full or not self.known
        desired = {}
        # Routes to one destination share one nexthop tuple: intern them (by identity first), so
        # comparing tables costs one hash per distinct tuple, not one per route.
        # The cache holds the original tuple too: that keeps it alive, so its id cannot be reused
        # by a later tuple while this loop runs (routes may be built one at a time, e.g. decoded).
        by_id: dict[int, tuple[tuple[Nexthop, ...], tuple[Nexthop, ...]]] = {}
        intern: dict[tuple[Nexthop, ...], tuple[Nexthop, ...]] = {}
        for spec in routes:
            r = as_route(spec)
            if not r.nexthops:
                continue
            cached = by_id.get(id(r.nexthops))
            if cached is not None and cached[0] is r.nexthops:
                nhs = cached[1]
            else:
                nhs = intern.setdefault(r.nexthops, self._intern.get(r.nexthops, r.nexthops))
                by_id[id(r.nexthops)] = (r.nexthops, nhs)
            desired[r.prefix] = (nhs, r.src)
        self._intern = intern
        lines: list[str] = []
        distinct = list(intern)
        need_nh = {nh for nhs in distinct for nh in nhs}
        need_groups = {nhs for nhs in distinct if len(nhs) > 1}
        for nh in sorted(need_nh, key=lambda n: (n.dev, n.via or "")):
            if nh not in self._nh_ids:
                self._nh_ids[nh] = self._next_nh
                self._next_nh += 1
            elif not full:
                continue
            gw = f"via {nh.via} " if nh.via else ""
            onlink = " onlink" if nh.via else ""
            lines.append(f"nexthop replace id {self._nh_ids[nh]} {gw}dev {nh.dev}{onlink}")
        for nhs in sorted(need_groups, key=lambda g: [(n.dev, n.via or "") for n in g]):
            if nhs not in self._group_ids:
                self._group_ids[nhs] = self._next_group
                self._next_group += 1
            elif not full:
                continue
            members = "/".join(str(self._nh_ids[nh]) for nh in nhs)
            lines.append(f"nexthop replace id {self._group_ids[nhs]} group {members}")
        for prefix, (nhs, src) in desired.items():
            if not full and self._routes.get(prefix) == (nhs, src):
                continue
            nhid = self._group_ids[nhs] if len(nhs) > 1 else self._nh_ids[nhs[0]]
            lines.append(f"route replace {prefix} nhid {nhid}" + (f" src {src}" if src else ""))
        for prefix in sorted(set(self._routes) - set(desired)):
            lines.append(f"route del {prefix}")
        for nhs in set(self._group_ids) - need_groups:
            lines.append(f"nexthop del id {self._group_ids.pop(nhs)}")
        for nh in set(self._nh_ids) - need_nh:
            lines.append(f"nexthop del id {self._nh_ids.pop(nh)}")
        self._routes = desired
        self.known = True
        return lines

    def set(self, routes: Iterable[RouteSpec], full: bool = False) -> list[str]:
        """Install `routes` as this namespace's whole table; returns the kernel's complaints
        about entries it had already removed by itself (a repair is allowed to meet those)."""
        lines = self.commands(routes, full)
        return run_jobs([Job(self.netns, "ip", "\n".join(lines) + "\n", force=True)]) if lines else []


def shortest_path_routes(plan: NetworkPlan, up: Callable[[Wire], bool]) -> dict[str, list[Route]]:
    """Every router's and host's routes on the routed planes, over the wires that are `up`:
    for each destination router, every neighbour one hop closer is an ECMP nexthop (plain BFS)."""
    out: dict[str, list[Route]] = {label: [] for label, ns in plan.namespaces.items() if ns.kind != "bridge"}
    for plane in [p for p in plan.planes if p != "oob"]:
        routers = {label: ns for label, ns in plan.namespaces.items() if ns.kind == "router" and ns.plane == plane}
        adj: dict[str, list[tuple[str, str]]] = {r: [] for r in routers}  # router -> [(local if, peer)]
        attached: dict[str, list[str]] = {r: [f"{ns.router_id}/32"] for r, ns in routers.items()}
        for w in plan.wires:
            if w.plane != plane or not up(w):
                continue
            a_router, b_router = w.a.ns in routers, w.b.ns in routers
            if a_router and b_router:
                adj[w.a.ns].append((w.a.ifname, w.b.ns))
                adj[w.b.ns].append((w.b.ifname, w.a.ns))
                continue
            host, router = (w.a, w.b) if b_router else (w.b, w.a)
            if not (a_router or b_router) or host.address is None:
                continue
            attached[router.ns].append(f"{host.ip}/32")
            out[router.ns].append(Route(f"{host.ip}/32", (Nexthop(router.ifname),)))
            out[host.ns].append(Route(w.host_route or "", (Nexthop(host.ifname, routers[router.ns].router_id),),
                                      host.ip))
        for dest in routers:
            dist = {dest: 0}
            queue = deque([dest])
            while queue:
                node = queue.popleft()
                for _, peer in adj[node]:
                    if peer not in dist:
                        dist[peer] = dist[node] + 1
                        queue.append(peer)
            for r in routers:
                if r == dest or r not in dist:
                    continue
                nhs = _canonical(Nexthop(dev, routers[peer].router_id)
                                 for dev, peer in adj[r] if dist.get(peer) == dist[r] - 1)
                out[r].extend(Route(p, nhs) for p in attached[dest])
    return out
