"""`Network`: a twin's three planes built in real network namespaces, and the faults on them.

    net = build_network(topo, prefix="ct0", state_dir=run_dir / "network")
    net.exec("gpu001", ["ping", "-c", "1", net.address("gpu004", "compute")])
    fault = net.link_down("ib-leaf01", "ib-spine01")
    net.link_up("ib-leaf01", "ib-spine01")
    net.stop()

How each plane is built (see `show()` for the same, at run time):

- compute: a router namespace per leaf and spine, one veth per cable, every host rail a /32 on a
  veth to its leaf; routes are ECMP nexthop groups (fib_multipath_hash_policy=1) from
  `shortest_path_routes`, installed through `RouteTable` (the fabric manager's future entry point);
- Ethernet: the same, once per segment: every switch is one router namespace per segment (a VRF
  is a namespace, as the kernel has neither VRF nor 802.1Q); segments share no namespace,
  interface or route, so no packet can cross between them;
- out-of-band: Linux bridges (each in its own namespace); no router at all;
- hosts: one namespace each, on several planes but forwarding nothing (ip_forward=0), answering
  ARP only on the interface that owns the address (arp_ignore=1) and with an nftables plane guard.

Nothing is created in the root namespace: deleting the twin's namespaces removes every
interface, bridge, route and nftables table with them, which is what makes cleanup exact.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from emulator.network import congestion, kernel
from emulator.network.cleanup import STATE_FILE, clean_network
from emulator.network.errors import NetworkError
from emulator.network.faults import (
    LOSS_TABLE,
    FaultLog,
    NetFault,
    guard_script,
    loss_script,
    partition_script,
    unpartition_script,
)
from emulator.network.kernel import Job, run_jobs
from emulator.network.plan import COMPUTE, OOB, End, Host, Link, NetworkPlan, Wire, make_network_plan
from emulator.network.routing import RouteSpec, RouteTable, shortest_path_routes
from emulator.topology import Topology, load_topology

DEFAULT_STATE_ROOT = Path("/run/clustertwin-net")
DEFAULT_BANDWIDTH_SCALE = 1 / 1000

ROUTER_SYSCTLS = {"net.ipv4.ip_forward": "1", "net.ipv4.fib_multipath_hash_policy": "1",
                  "net.ipv4.conf.all.rp_filter": "0", "net.ipv4.conf.default.rp_filter": "0"}
HOST_SYSCTLS = {"net.ipv4.ip_forward": "0", "net.ipv4.conf.all.arp_ignore": "1",
                "net.ipv4.conf.all.arp_announce": "2", "net.ipv4.conf.all.rp_filter": "0"}
QUIET_SYSCTLS = {"net.ipv6.conf.all.disable_ipv6": "1", "net.ipv6.conf.default.disable_ipv6": "1"}


def state_path(state_dir: Path | str) -> Path:
    return Path(state_dir) / STATE_FILE


class Network:
    """A built network. Get one from `build_network` or, in another process, `Network.attach`."""

    def __init__(self, plan: NetworkPlan, state_dir: Path, topology_source: str,
                 bandwidth_scale: float | None, netem: bool, backend: str = "netns") -> None:
        self.plan = plan
        self.backend = backend   # what made the namespaces and links: "netns" (ip -batch) or "mininet"
        self.prefix = plan.prefix
        self.state_dir = state_dir
        self.topology_source = topology_source
        self.bandwidth_scale = bandwidth_scale
        self.netem = netem
        self.auto_routes = True  # False once an external fabric manager drives the route tables
        self.timings: dict[str, float] = {}
        self.log = FaultLog()
        self._down_links: set[str] = set()
        self._down_nodes: set[str] = set()
        self._loss: dict[str, float] = {}  # link id -> percent
        self._wire_link: dict[int, Link] = {w: link for link in plan.links for w in link.wires}
        self._tables = {label: RouteTable(ns.name) for label, ns in plan.namespaces.items() if ns.kind != "bridge"}
        self._down_ends: set[tuple[str, str]] = set()
        self._stopped = False
        self.congestion: dict[str, Any] = {}  # segment -> how it behaves under congestion (congestion.py)
        self.root_routes: list[str] = []  # routes made in the machine's namespace (operator.fence_routes)

    # --- names and addresses -------------------------------------------------------------

    @property
    def hosts(self) -> list[str]:
        return list(self.plan.hosts)

    @property
    def switches(self) -> list[str]:
        return [n for n, labels in self.plan.nodes.items() if self.plan.namespaces[labels[0]].kind != "host"]

    @property
    def namespaces(self) -> list[str]:
        return [ns.name for ns in self.plan.namespaces.values()]

    def address(self, host: str, plane: str) -> str:
        h = self._host(host)
        if plane not in h.addresses:
            planes = ", ".join(h.addresses)
            raise NetworkError(f"host {host!r} has no address on plane {plane!r} (it is on: {planes})")
        return h.addresses[plane]

    def rail_addresses(self, host: str) -> list[str]:
        return list(self._host(host).rails)

    def rails_up(self, host: str) -> list[int]:
        """The compute rails of a host whose cable and switch are up (its HCA ports Active)."""
        ifnames = {e.ifname for w in self.plan.wires if w.plane == COMPUTE and self.wire_up(w)
                   for e in (w.a, w.b) if e.ns == host}
        return [r for r in range(len(self._host(host).rails)) if f"rail{r}" in ifnames]

    def netns(self, name: str) -> str:
        """The kernel namespace of a host, or of a switch namespace label (`ib-leaf01`,
        `eth-leaf01-storage`, `oob-core01`): setns into /run/netns/<this>."""
        ns = self.plan.namespaces.get(name)
        if ns is None:
            raise NetworkError(f"no host or switch namespace {name!r} in network {self.prefix!r}")
        return ns.name

    def exec(self, host: str, argv: Sequence[str], timeout: float | None = 30,
             input: str | None = None) -> Any:
        """`subprocess.run` of `argv` inside the host's namespace (output captured, text)."""
        return kernel.exec_in(self.netns(host), list(argv), timeout=timeout, input=input)

    def _host(self, host: str) -> Host:
        h = self.plan.hosts.get(host)
        if h is None:
            raise NetworkError(f"no host {host!r} in network {self.prefix!r} (hosts are e.g. "
                               f"{', '.join(list(self.plan.hosts)[:3])})")
        return h

    # --- routes ----------------------------------------------------------------------------

    def route_table(self, label: str) -> RouteTable:
        """The route table of a router or host namespace; `set([(prefix, [Nexthop...])])` it."""
        if label not in self._tables:
            raise NetworkError(f"no routed namespace {label!r} in network {self.prefix!r}")
        return self._tables[label]

    def set_routes(self, tables: dict[str, Iterable[RouteSpec]], full: Iterable[str] = ()) -> list[str]:
        """Install whole route tables for several namespaces at once (one process each, in parallel)."""
        full = set(full)
        jobs = []
        for label, routes in tables.items():
            table = self.route_table(label)
            lines = table.commands(routes, full=label in full)
            if lines:
                jobs.append(Job(table.netns, "ip", "\n".join(lines) + "\n", force=True))
        return run_jobs(jobs)

    def wire_up(self, w: Wire) -> bool:
        link = self._wire_link[w.id]
        if link.id in self._down_links:
            return False
        return all(self.plan.namespaces[e.ns].node not in self._down_nodes for e in (w.a, w.b))

    def _reroute(self, touched: set[str]) -> None:
        if self.auto_routes:
            self.set_routes(shortest_path_routes(self.plan, self.wire_up), full=touched)

    # --- faults ----------------------------------------------------------------------------

    def _links(self, a: str, b: str, index: int | None) -> list[Link]:
        for node in (a, b):
            if node not in self.plan.nodes:
                raise NetworkError(f"no host or switch {node!r} in network {self.prefix!r}")
        links = self.plan.links_between(a, b)
        if not links:
            peers = sorted({lk.b if lk.a == a else lk.a for lk in self.plan.links_of(a)})
            shown = ", ".join(peers[:8]) + (", ..." if len(peers) > 8 else "")
            raise NetworkError(f"no link between {a!r} and {b!r}; {a} is cabled to: {shown}")
        if index is not None:
            links = [lk for lk in links if lk.index == index]
            if not links:
                raise NetworkError(f"no link {index} between {a!r} and {b!r} (there are "
                                   f"{len(self.plan.links_between(a, b))})")
        return links

    def _admin_down(self) -> set[tuple[str, str]]:
        """The interface ends the active faults want administratively down."""
        down = set()
        for w in self.plan.wires:
            link_down = self._wire_link[w.id].id in self._down_links
            for end in (w.a, w.b):
                if link_down or self.plan.namespaces[end.ns].node in self._down_nodes:
                    down.add((end.ns, end.ifname))
        return down

    def _apply_state(self, before: dict[int, bool]) -> None:
        """Put interfaces in the admin state the faults ask for, then reroute. If the kernel refuses
        a step, every interface this touched is put back as it was and NetworkError says which."""
        want = self._admin_down()
        per_ns: dict[str, list[str]] = {}
        back: dict[str, list[str]] = {}
        for ns, ifname in want - self._down_ends:
            per_ns.setdefault(ns, []).append(f"link set {ifname} down")
            back.setdefault(ns, []).append(f"link set {ifname} up")
        for ns, ifname in self._down_ends - want:
            per_ns.setdefault(ns, []).append(f"link set {ifname} up")
            back.setdefault(ns, []).append(f"link set {ifname} down")
        try:
            run_jobs([Job(self.plan.ns_name(ns), "ip", "\n".join(lines) + "\n")
                      for ns, lines in sorted(per_ns.items())])
        except NetworkError:
            # Other namespaces' jobs may have run: undo them all (force: past the one that failed).
            run_jobs([Job(self.plan.ns_name(ns), "ip", "\n".join(lines) + "\n", force=True)
                      for ns, lines in sorted(back.items())])
            raise
        went_up = self._down_ends - want
        self._down_ends = want
        touched = {e.ns for w in self.plan.wires if self.wire_up(w) != before[w.id] for e in (w.a, w.b)}
        self._reroute(touched | set(per_ns))
        if went_up:
            # Both ends: the peer's carrier comes back too. Poll, so the first packets are not lost.
            ends = {(e.ns, e.ifname): w for w in self.plan.wires for e in (w.a, w.b)}
            kernel.wait_operational(self.plan.ns_name(e.ns) for key in went_up for e in (ends[key].a, ends[key].b))

    def _change(self, down_links: set[str], down_nodes: set[str]) -> None:
        """Make these the links and nodes that are down, in the kernel too; all or nothing."""
        before = self._snapshot()
        saved = self._down_links, self._down_nodes
        self._down_links, self._down_nodes = set(down_links), set(down_nodes)
        try:
            self._apply_state(before)
        except NetworkError:
            self._down_links, self._down_nodes = saved
            raise

    def _snapshot(self) -> dict[int, bool]:
        return {w.id: self.wire_up(w) for w in self.plan.wires}

    def link_down(self, a: str, b: str, index: int | None = None) -> NetFault:
        """Cut the cable(s) between nodes `a` and `b` (all parallel ones, or only `index`)."""
        return self._cut(self._links(a, b, index))

    def link_up(self, a: str, b: str, index: int | None = None) -> list[NetFault]:
        """Reconnect cable(s); returns the link-down faults this clears."""
        return self._mend(self._links(a, b, index))

    def cables_down(self, cables: list[tuple[str, str, int]]) -> NetFault:
        """Cut several cables (a, b, index) at once: one fault, one change of the kernel's state."""
        return self._cut(self._cables(cables))

    def cables_up(self, cables: list[tuple[str, str, int]]) -> list[NetFault]:
        """Reconnect several cables (a, b, index) at once; returns the link-down faults this clears."""
        return self._mend(self._cables(cables))

    def _cables(self, cables: list[tuple[str, str, int]]) -> list[Link]:
        if not cables:
            raise NetworkError("which cables? none given")
        return [lk for a, b, index in cables for lk in self._links(a, b, index)]

    def _cut(self, links: list[Link]) -> NetFault:
        self._change(self._down_links | {lk.id for lk in links}, self._down_nodes)
        return self._record("link-down", self._target(links), links=[lk.id for lk in links])

    def _mend(self, links: list[Link]) -> list[NetFault]:
        self._change(self._down_links - {lk.id for lk in links}, self._down_nodes)
        cleared = [self.log.clear(f) for f in self.log.active("link-down")
                   if not set(f.detail["links"]) & self._down_links]
        self._save()
        return cleared

    def mark(self) -> dict[str, Any]:
        """The links and nodes down and the fault log now: `restore(mark)` undoes what came after
        (a change another plane could not follow, rolled back)."""
        return {"down_links": sorted(self._down_links), "down_nodes": sorted(self._down_nodes),
                "faults": [f.to_dict() for f in self.log.faults]}

    def restore(self, mark: dict[str, Any]) -> None:
        """Back to a `mark()`: interfaces as they were then, the faults raised since forgotten and
        the ones cleared since active again. Loss and partitions are not part of a mark."""
        self._change(set(mark["down_links"]), set(mark["down_nodes"]))
        self.log = FaultLog([NetFault.from_dict(f) for f in mark["faults"]])
        self._save()

    def switch_down(self, name: str) -> NetFault:
        """Power a switch off: its ports go down, its peers see no carrier, routes move away."""
        return self._node_down(self._switch(name), "switch-down")

    def switch_up(self, name: str) -> list[NetFault]:
        return self._node_up(self._switch(name), "switch-down")

    def cut_off(self, host: str) -> NetFault:
        """Unplug every cable of a host, on every plane."""
        return self._node_down(self._host(host).name, "node-cut")

    def reconnect(self, host: str) -> list[NetFault]:
        return self._node_up(self._host(host).name, "node-cut")

    def _switch(self, name: str) -> str:
        labels = self.plan.nodes.get(name)
        if not labels or self.plan.namespaces[labels[0]].kind == "host":
            raise NetworkError(f"no switch {name!r} in network {self.prefix!r} (switches are e.g. "
                               f"{', '.join(self.switches[:3])})")
        return name

    def _node_down(self, name: str, kind: str) -> NetFault:
        self._change(self._down_links, self._down_nodes | {name})
        return self._record(kind, name)

    def _node_up(self, name: str, kind: str) -> list[NetFault]:
        self._change(self._down_links, self._down_nodes - {name})
        cleared = [self.log.clear(f) for f in self.log.active(kind) if f.target == name]
        self._save()
        return cleared

    def set_loss(self, a: str, b: str, percent: float, index: int | None = None) -> NetFault | None:
        """Drop `percent` % of packets in each direction on the cable(s) between `a` and `b`
        (nftables numgen on ingress at both ends). 0 clears; returns None then."""
        if not 0 <= percent <= 100:
            raise NetworkError(f"loss must be between 0 and 100 percent, not {percent}")
        links = self._links(a, b, index)
        self._set_loss(links, percent)
        ids = {lk.id for lk in links}
        permille = round(percent * 10)
        for f in self.log.active("loss"):
            if set(f.detail["links"]) <= ids:
                self.log.clear(f)
        if not permille:
            self._save()
            return None
        return self._record("loss", self._target(links), links=sorted(ids), percent=percent)

    def _set_loss(self, links: list[Link], percent: float) -> None:
        permille = round(percent * 10)
        after = dict(self._loss)
        for lk in links:
            if permille:
                after[lk.id] = percent
            else:
                after.pop(lk.id, None)
        ends = {lk.id: [e for wid in lk.wires for e in (self.plan.wires[wid].a, self.plan.wires[wid].b)]
                for lk in self.plan.links if lk.id in after or lk in links}
        lossy = {e.ns for lid in after for e in ends[lid]}
        per_ns: dict[str, list[str]] = {}
        for lk in links:
            for e in ends[lk.id]:
                per_ns.setdefault(e.ns, []).append(loss_script(e.ifname, permille))
        for ns, lines in per_ns.items():
            if ns not in lossy:   # no loss left here: no table either, as before the first
                lines.append(f"add table netdev {LOSS_TABLE}\ndelete table netdev {LOSS_TABLE}\n")
        run_jobs([Job(self.plan.ns_name(ns), "nft", "".join(lines)) for ns, lines in sorted(per_ns.items())])
        self._loss = after

    def partition(self, group_a: Iterable[str], group_b: Iterable[str]) -> NetFault:
        """No packet between any host of `group_a` and any of `group_b`, on any plane."""
        a, b = sorted(set(group_a)), sorted(set(group_b))
        for host in a + b:
            self._host(host)
        if not a or not b:
            raise NetworkError("a partition needs two non-empty groups of hosts")
        if set(a) & set(b):
            raise NetworkError(f"hosts in both groups of a partition: {', '.join(sorted(set(a) & set(b)))}")
        fault = self.log.new("partition", f"{','.join(a)}|{','.join(b)}", group_a=a, group_b=b)
        addrs = {h: self._all_addresses(h) for h in a + b}
        jobs = [Job(self.netns(h), "nft", partition_script(fault.id, [x for o in others for x in addrs[o]]))
                for mine, others in ((a, b), (b, a)) for h in mine]
        try:
            run_jobs(jobs)
        except NetworkError:
            self.log.faults.remove(fault)
            run_jobs([Job(self.netns(h), "nft", unpartition_script(fault.id)) for h in a + b])
            raise
        self._save()
        return fault

    def heal(self, fault_id: str | None = None) -> list[NetFault]:
        """Lift one partition (by its fault id) or, with no id, every partition."""
        active = self.log.active("partition")
        if fault_id is not None:
            active = [f for f in active if f.id == fault_id]
            if not active:
                raise NetworkError(f"no active partition {fault_id!r}")
        jobs = [Job(self.netns(h), "nft", unpartition_script(f.id))
                for f in active for h in f.detail["group_a"] + f.detail["group_b"]]
        run_jobs(jobs)
        cleared = [self.log.clear(f) for f in active]
        self._save()
        return cleared

    def clear(self, fault_id: str) -> list[NetFault]:
        """Clear any active network fault by id: the kernel state it made is undone (links and
        nodes up, loss rules and partition tables gone) unless another active fault still wants
        it. NetworkError if the fault is not active, or still is afterwards."""
        match = [f for f in self.log.active() if f.id == fault_id]
        if not match:
            known = [f for f in self.log.faults if f.id == fault_id]
            raise NetworkError(f"network fault {fault_id!r} was cleared already" if known else
                               f"no active network fault {fault_id!r} (see `twin net faults`)")
        f = match[0]
        if f.kind == "partition":
            cleared = self.heal(f.id)
        elif f.kind in ("switch-down", "node-cut"):
            cleared = self._node_up(f.target, f.kind)
        elif f.kind == "loss":
            others = {lk for g in self.log.active("loss") if g is not f for lk in g.detail["links"]}
            self._set_loss([lk for lk in self.plan.links if lk.id in set(f.detail["links"]) - others], 0)
            cleared = [self.log.clear(f)]
            self._save()
        elif f.kind == "link-down":
            others = {lk for g in self.log.active("link-down") if g is not f for lk in g.detail["links"]}
            self._change(self._down_links - (set(f.detail["links"]) - others), self._down_nodes)
            cleared = [self.log.clear(f)]
            self._save()
        else:
            raise NetworkError(f"cannot clear a network fault of kind {f.kind!r}")
        if f.active:
            raise NetworkError(f"network fault {f.id} ({f.kind} {f.target}) is still active after clearing it")
        return cleared

    def faults(self, include_cleared: bool = False) -> list[NetFault]:
        return list(self.log.faults) if include_cleared else self.log.active()

    def _all_addresses(self, host: str) -> list[str]:
        h = self._host(host)
        return sorted(set(h.addresses.values()) | set(h.rails))

    @staticmethod
    def _target(links: list[Link]) -> str:
        return links[0].id if len(links) == 1 else f"{links[0].a}:{links[0].b}:*"

    def _record(self, kind: str, target: str, **detail: Any) -> NetFault:
        fault = self.log.new(kind, target, **detail)
        self._save()
        return fault

    # --- inspection ------------------------------------------------------------------------

    def show(self) -> dict[str, Any]:
        """Per plane: what is emulated, and how."""
        plan = self.plan
        if self.bandwidth_scale:
            bw = f"HTB on both ends of every link, real rate x {self.bandwidth_scale:g}"
        else:
            bw = "off (not shaped; link rates are modelled)"
        latency = ("modelled, not emulated (netem is available but unused)" if self.netem
                   else "modelled, not emulated (this kernel has no netem)")
        loss = "nftables numgen random drop on ingress at both ends of a link, per direction, on demand"

        def count(kind: str, plane: str) -> int:
            return sum(1 for ns in plan.namespaces.values() if ns.kind == kind and ns.plane == plane)

        def wires(plane: str) -> int:
            return sum(1 for w in plan.wires if w.plane == plane)

        def hosts_on(plane: str) -> int:
            return sum(1 for h in plan.hosts.values() if plane in h.addresses)

        def rate(plane: str) -> int:
            return next((w.rate_gbps for w in plan.wires if w.plane == plane), 0)

        def scaled(plane: str) -> str | None:
            return f"{rate(plane) * 1000 * self.bandwidth_scale:g} Mbit/s" if self.bandwidth_scale else None

        planes: dict[str, Any] = {
            COMPUTE: {
                "prefix": plan.plane_prefix[COMPUTE],
                "hosts": hosts_on(COMPUTE), "routers": count("router", COMPUTE), "links": wires(COMPUTE),
                "addressing": "rail r of server i: 10.100.(16r + i//250).(i%250+1)/32; routers 10.100.255.k",
                "forwarding": "leaf and spine routers in namespaces; shortest-path ECMP nexthop groups, "
                              "fib_multipath_hash_policy=1, installed through RouteTable",
                "routing": "built-in shortest path" if self.auto_routes else "external (fabric manager)",
                "rate": f"{rate(COMPUTE)} Gbit/s", "emulated_rate": scaled(COMPUTE),
                "bandwidth": bw, "loss": loss, "latency": latency,
                "isolation": "its own routers and wires; hosts do not forward",
            },
        }
        for seg in plan.segments:
            planes[seg] = {
                "prefix": plan.plane_prefix[seg],
                "hosts": hosts_on(seg), "routers": count("router", seg), "links": wires(seg),
                "forwarding": "Ethernet leaf and spine routers, one namespace per switch for this segment; "
                              "shortest-path ECMP nexthop groups",
                "rate": f"{rate(seg)} Gbit/s", "emulated_rate": scaled(seg),
                "bandwidth": bw, "loss": loss, "latency": latency,
                "isolation": "namespace per VRF: every Ethernet switch is one router namespace per segment "
                             "and every cable one veth per segment (this kernel has no VRF or 802.1Q); "
                             "segments share no namespace, interface or route",
                "congestion": self.congestion.get(seg, {"applied": False, "why": "not recorded"}),
            }
        planes[OOB] = {
            "prefix": plan.plane_prefix[OOB],
            "hosts": hosts_on(OOB), "switches": count("bridge", OOB), "links": wires(OOB),
            "forwarding": "Linux bridges (one L2 domain), redundant core pair"
                          + (", access switches dual-homed, kernel STP" if plan.oob_stp else ", star, no loop"),
            "rate": f"{rate(OOB)} Gbit/s", "emulated_rate": scaled(OOB),
            "bandwidth": bw, "loss": loss, "latency": latency,
            "isolation": "no router anywhere on the plane; hosts do not forward, answer ARP only on the "
                         "owning interface and drop other planes' addresses (nftables plane guard)",
        }
        return {
            "prefix": self.prefix, "topology": plan.topology, "state_file": str(state_path(self.state_dir)),
            "built_by": ("Mininet's Python API (Topo, Mininet(controller=None), LinuxBridge for OOB), then "
                         "the same addresses, routes, guards and shaping as netns") if self.backend == "mininet"
                        else "ip -batch",
            "namespaces": len(plan.namespaces), "veth_pairs": len(plan.wires), "cables": len(plan.links),
            "planes": planes,
            "faults": [f.to_dict() for f in self.log.active()],
            "build_seconds": self.timings,
        }

    # --- lifecycle -------------------------------------------------------------------------

    def stop(self) -> None:
        """Remove everything this network created. Idempotent."""
        clean_network(self.state_dir)
        self._stopped = True

    def _state(self) -> dict[str, Any]:
        return {
            "version": 1, "prefix": self.prefix, "topology": self.plan.topology, "backend": self.backend,
            "topology_source": self.topology_source, "bandwidth_scale": self.bandwidth_scale,
            "netem": self.netem, "pid": os.getpid(),
            "namespaces": self.namespaces,
            "down_links": sorted(self._down_links), "down_nodes": sorted(self._down_nodes),
            "loss": self._loss, "faults": [f.to_dict() for f in self.log.faults],
            "timings": self.timings, "congestion": self.congestion, "root_routes": self.root_routes,
        }

    def _save(self, status: str = "up") -> None:
        if self._stopped:
            return
        self.state_dir.mkdir(parents=True, exist_ok=True)
        path = state_path(self.state_dir)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps({**self._state(), "status": status}, indent=1))
        tmp.replace(path)

    @classmethod
    def attach(cls, state_dir: Path | str) -> Network:
        """The network a state file describes (built by another process), to inspect or fault."""
        path = state_path(state_dir)
        try:
            state = json.loads(path.read_text())
        except FileNotFoundError:
            raise NetworkError(f"no emulated network recorded in {path}") from None
        except ValueError as e:
            raise NetworkError(f"unreadable network state file {path}: {e}") from None
        plan = make_network_plan(load_topology(state["topology_source"]), state["prefix"])
        net = cls(plan, Path(state_dir), state["topology_source"], state.get("bandwidth_scale"),
                  bool(state.get("netem")), state.get("backend", "netns"))
        net._down_links = set(state.get("down_links", []))
        net._down_nodes = set(state.get("down_nodes", []))
        net._loss = dict(state.get("loss", {}))
        net.log = FaultLog([NetFault.from_dict(f) for f in state.get("faults", [])])
        net.timings = state.get("timings", {})
        net.congestion = state.get("congestion", {})
        net.root_routes = list(state.get("root_routes", []))
        net._down_ends = net._admin_down()
        for table in net._tables.values():
            table.known = False
        return net


def bridge_args(plan: NetworkPlan) -> str:
    """`ip link add br0 type bridge ...` options of an OOB bridge."""
    return "stp_state 1 forward_delay 200 hello_time 100 max_age 600" if plan.oob_stp else "stp_state 0"


def phase1(plan: NetworkPlan, ns_label: str, ends: list[End], make_bridge: bool = True) -> str:
    """A namespace's `ip -batch`: lo, router id, the OOB bridge (unless already made), addresses."""
    ns = plan.namespaces[ns_label]
    lines = ["link set lo up"]
    if ns.kind == "router":
        lines.append(f"addr add {ns.router_id}/32 dev lo")
    if ns.kind == "bridge" and make_bridge:
        lines.append(f"link add br0 type bridge {bridge_args(plan)} mcast_snooping 0")
        lines += [f"link set {e.ifname} master br0" for e in ends]
        lines.append("link set br0 up")
    for e in ends:
        if e.address:
            lines.append(f"addr add {e.address} dev {e.ifname}")
        lines.append(f"link set {e.ifname} up")
    return "\n".join(lines) + "\n"


def _shaping(ends: list[tuple[End, int]], scale: float) -> str:
    lines = []
    for e, rate_gbps in ends:
        kbit = max(8, round(rate_gbps * 1e6 * scale))
        lines.append(f"qdisc replace dev {e.ifname} root handle 1: htb default 1")
        lines.append(f"class replace dev {e.ifname} parent 1: classid 1:1 htb rate {kbit}kbit ceil {kbit}kbit")
    return "\n".join(lines) + "\n"


def build_network(topo: Topology | str, prefix: str = "ct0", bandwidth_scale: float | None = None,
                  state_dir: Path | str | None = None, backend: str = "netns",
                  make_nodes: Callable[[Network], None] | None = None) -> Network:
    """Build every plane of `topo` in namespaces named `<prefix>-...` (their nodes and links made by
    `make_nodes`: by default `ip -batch`; the package's build_network passes Mininet's for
    backend="mininet"); record it in
    `<state_dir>/network.json` (default /run/clustertwin-net/<prefix>) before touching the kernel,
    so `clean_network(state_dir)` works even after a crash mid-build."""
    if isinstance(topo, str):
        topo = load_topology(topo)
    if os.geteuid() != 0:
        raise NetworkError("building the emulated network needs root (network namespaces)")
    missing = kernel.missing_tools()
    if missing:
        raise NetworkError(f"missing tools: {', '.join(missing)} (apt-get install iproute2 nftables util-linux)")
    if bandwidth_scale is not None and not 0 < bandwidth_scale <= 1:
        raise NetworkError(f"bandwidth_scale must be in (0, 1], not {bandwidth_scale}")
    plan = make_network_plan(topo, prefix)
    existing = [n for n in kernel.netns_list() if n.startswith(prefix + "-")]
    if existing:
        raise NetworkError(f"a network with prefix {prefix!r} already exists ({len(existing)} namespaces, e.g. "
                           f"{existing[0]}); stop it or run `twin net clean` first")
    state_dir = Path(state_dir) if state_dir is not None else DEFAULT_STATE_ROOT / prefix
    old = state_path(state_dir)
    if old.exists():
        try:
            old_prefix = json.loads(old.read_text()).get("prefix")
        except ValueError:
            old_prefix = None
        if old_prefix and old_prefix != prefix and any(n.startswith(old_prefix + "-") for n in kernel.netns_list()):
            raise NetworkError(f"{old} records network {old_prefix!r}, which still exists; clean it first")
    if backend not in ("netns", "mininet"):
        raise NetworkError(f"unknown network backend {backend!r} (netns or mininet)")
    if (backend == "mininet") != (make_nodes is not None):
        raise ValueError("backend='mininet' is built by emulator.network.build_network, which passes its maker")
    net = Network(plan, state_dir, str(topo.source), bandwidth_scale, netem=False, backend=backend)
    net._save(status="building")
    try:
        _build(net, make_nodes or _create)
        t0 = time.monotonic()
        lossless = {s.name: s.lossless for s in topo.spec.ethernet.segments}
        net.congestion = congestion.apply(plan, bandwidth_scale, lossless)
        net.timings["congestion"] = time.monotonic() - t0
    except BaseException:
        clean_network(state_dir)
        raise
    net._save()
    return net


def _create(net: Network) -> None:
    """The netns backend: every namespace and veth pair, in one `ip -batch`."""
    plan = net.plan
    t0 = time.monotonic()
    root = [f"netns add {ns.name}" for ns in plan.namespaces.values()]
    root += [f"link add {w.a.ifname} netns {plan.ns_name(w.a.ns)} type veth peer name {w.b.ifname} "
             f"netns {plan.ns_name(w.b.ns)}" for w in plan.wires]
    run_jobs([Job("", "ip", "\n".join(root) + "\n")])
    net.timings["namespaces_and_veths"] = time.monotonic() - t0


def _build(net: Network, make_nodes: Callable[[Network], None]) -> None:
    plan, t = net.plan, net.timings
    make_nodes(net)

    t0 = time.monotonic()
    sysctls = {}
    for ns in plan.namespaces.values():
        extra = ROUTER_SYSCTLS if ns.kind == "router" else HOST_SYSCTLS if ns.kind == "host" else {}
        sysctls[ns.name] = {**QUIET_SYSCTLS, **extra}
    kernel.set_sysctls(sysctls)
    t["sysctls"] = time.monotonic() - t0

    ends: dict[str, list[tuple[End, Wire]]] = {label: [] for label in plan.namespaces}
    for w in plan.wires:
        ends[w.a.ns].append((w.a, w))
        ends[w.b.ns].append((w.b, w))

    t0 = time.monotonic()
    made = net.backend == "netns"   # Mininet's switches made their bridges
    run_jobs([Job(plan.ns_name(label), "ip", phase1(plan, label, [e for e, _ in es], make_bridge=made))
              for label, es in ends.items()])
    t["interfaces_and_addresses"] = time.monotonic() - t0

    first = next(iter(plan.namespaces.values())).name
    net.netem = kernel.netem_available(first)
    if net.bandwidth_scale:
        t0 = time.monotonic()
        run_jobs([Job(plan.ns_name(label), "tc", _shaping([(e, w.rate_gbps) for e, w in es], net.bandwidth_scale))
                  for label, es in ends.items() if es])
        t["shaping"] = time.monotonic() - t0

    t0 = time.monotonic()
    guards = []
    for label, es in ends.items():
        if plan.namespaces[label].kind != "host":
            continue
        plane_ifs: dict[str, tuple[list[str], str]] = {}
        for e, w in es:
            plane_ifs.setdefault(w.plane, ([], plan.plane_prefix[w.plane]))[0].append(e.ifname)
        guards.append(Job(plan.ns_name(label), "nft", guard_script(plane_ifs)))
    run_jobs(guards)
    t["plane_guards"] = time.monotonic() - t0

    t0 = time.monotonic()
    tables = shortest_path_routes(plan, net.wire_up)
    t["route_computation"] = time.monotonic() - t0
    t0 = time.monotonic()
    jobs = []
    for label, routes in tables.items():
        lines = net._tables[label].commands(routes, full=True)
        if lines:
            jobs.append(Job(plan.ns_name(label), "ip", "\n".join(lines) + "\n"))
    run_jobs(jobs)
    t["routes"] = time.monotonic() - t0

    t0 = time.monotonic()
    kernel.wait_operational(ns.name for ns in plan.namespaces.values())
    t["wait_operational"] = time.monotonic() - t0
    if plan.oob_stp:
        t0 = time.monotonic()
        kernel.wait_stp(ns.name for ns in plan.namespaces.values() if ns.kind == "bridge")
        t["wait_oob_spanning_tree"] = time.monotonic() - t0
