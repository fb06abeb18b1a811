"""The network plan: from a topology to namespaces, wires and addresses, per plane. Pure, no I/O.

Vocabulary (each a frozen dataclass below):

- a *node* is what the topology names: a host (`gpu001`, `oss03`, `k8s-cp01`, `pdu-r01-1`) or a
  switch (`ib-leaf01`, `eth-spine02`, `oob-core01`);
- a *namespace* is what the kernel holds: one per host, one per compute router, one per Ethernet
  switch *and segment* (`eth-leaf01-storage`, `eth-leaf01-business`: the kernel has no VRF, so a
  VRF is a namespace), one per OOB bridge. Its kernel name is `<prefix>-<label>`;
- a *wire* is one veth pair between two namespaces;
- a *link* is one physical cable between two nodes; a cable of the Ethernet fabric between two
  switches carries one wire per segment (what 802.1Q would multiplex on one port).

Addresses (only ever inside namespaces this package creates):

| plane | prefix | host address |
|---|---|---|
| compute | 10.100.0.0/16 | rail r of GPU server i: 10.100.(16r + i//250).(i%250+1)/32, rail block 10.100.16r.0/20 |
| segment s (storage, business) | 10.(101+s).0.0/16 | host h: 10.(101+s).(h//250).(h%250+1)/32 |
| oob | 10.103.0.0/16 (one L2 domain) | host h: 10.103.(h//250).(h%250+1)/16 |

Routers have a router id 10.P.255.k/32 on `lo`; routes use it as an on-link gateway, so fabric
links need no addresses of their own. `h` numbers hosts in the order GPU servers, Lustre MDS,
Lustre OSS, Ceph hosts, management nodes, PDUs.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field

from emulator.network.errors import NetworkError
from emulator.topology import Topology, naming

COMPUTE = "compute"
OOB = "oob"
COMPUTE_OCTET = 100
SEGMENT_OCTET = 101  # segment s (in topology order) uses 101 + s, skipping the OOB octet
OOB_OCTET = 103
HOSTS_PER_OCTET = 250
ROUTER_ID_OCTET = 255
MAX_ROUTERS_PER_PLANE = 254
RAIL_BLOCK = 16  # third-octet values per compute rail: 16 x 250 = 4000 servers
PREFIX_RE = re.compile(r"^[a-z][a-z0-9]{0,7}$")


FENCE_PROTO = "77"   # marks the operator port's fence routes as the twin's (ip route show proto 77)
IFNAMSIZ = 15


def operator_ifname(prefix: str) -> str:
    """The operator port's veth in the machine's own namespace (the one device a network puts there)."""
    return f"{prefix}-op"


# Which Ethernet segments a host role joins, by what the segment carries.
STORAGE_CARRIES = {"lustre-rdma", "ceph", "s3"}
BUSINESS_CARRIES = {"business", "management"}


@dataclass(frozen=True)
class Namespace:
    label: str  # unique within a twin: "gpu001", "ib-leaf01", "eth-leaf01-storage", "oob-core01"
    name: str  # the kernel's netns name: "<prefix>-<label>"
    node: str  # the topology node it belongs to ("eth-leaf01" for "eth-leaf01-storage")
    kind: str  # "host", "router" or "bridge"
    plane: str  # routers: "compute" or a segment name; bridges: "oob"; hosts: "host"
    router_id: str | None = None


@dataclass(frozen=True)
class End:
    ns: str  # namespace label
    ifname: str
    address: str | None = None  # with its prefix length: "10.100.0.1/32"

    @property
    def ip(self) -> str | None:
        return self.address.split("/")[0] if self.address else None


@dataclass(frozen=True)
class Wire:
    id: int
    plane: str  # "compute", a segment name, or "oob"
    a: End
    b: End
    rate_gbps: int
    host_route: str | None = None  # host wires of routed planes: the prefix the host sends down it


@dataclass(frozen=True)
class Link:
    """One cable between two nodes; `index` tells parallel cables of the same pair apart."""

    a: str
    b: str
    index: int
    fabric: str  # "compute", "ethernet" or "oob"
    wires: tuple[int, ...]

    @property
    def id(self) -> str:
        return f"{self.a}:{self.b}:{self.index}"


@dataclass(frozen=True)
class Host:
    name: str
    role: str  # "gpu", "mds", "oss", "ceph", "mgmt", "pdu"
    addresses: dict[str, str]  # plane -> address (compute: rail 0)
    rails: tuple[str, ...] = ()  # compute address per rail


@dataclass
class NetworkPlan:
    prefix: str
    topology: str
    segments: list[str]  # Ethernet segment names, in topology order
    namespaces: dict[str, Namespace] = field(default_factory=dict)
    wires: list[Wire] = field(default_factory=list)
    links: list[Link] = field(default_factory=list)
    hosts: dict[str, Host] = field(default_factory=dict)
    nodes: dict[str, list[str]] = field(default_factory=dict)  # node -> its namespace labels
    plane_prefix: dict[str, str] = field(default_factory=dict)
    oob_stp: bool = False

    @property
    def planes(self) -> list[str]:
        return [OOB, COMPUTE, *self.segments]

    def ns_name(self, label: str) -> str:
        return self.namespaces[label].name

    def links_between(self, a: str, b: str) -> list[Link]:
        return [link for link in self.links if {link.a, link.b} == {a, b}]

    def links_of(self, node: str) -> list[Link]:
        return [link for link in self.links if node in (link.a, link.b)]


def ifname(name: str) -> str:
    """A kernel interface name (at most 15 bytes): `name`, or a stable shortening of it."""
    if len(name) <= IFNAMSIZ:
        return name
    digest = hashlib.sha1(name.encode()).hexdigest()[:4]
    return f"{name[:IFNAMSIZ - 5]}-{digest}"


def _host_address(octet: int, h: int, plen: int = 32) -> str:
    third = h // HOSTS_PER_OCTET
    if third >= ROUTER_ID_OCTET:
        raise NetworkError(f"too many hosts for the 10.{octet}.0.0/16 plane ({h + 1})")
    return f"10.{octet}.{third}.{h % HOSTS_PER_OCTET + 1}/{plen}"


def _rail_address(rail: int, i: int) -> str:
    if i >= RAIL_BLOCK * HOSTS_PER_OCTET:
        raise NetworkError(f"too many GPU servers for the compute addressing ({i + 1})")
    return f"10.{COMPUTE_OCTET}.{rail * RAIL_BLOCK + i // HOSTS_PER_OCTET}.{i % HOSTS_PER_OCTET + 1}/32"


def _router_id(octet: int, k: int, plane: str) -> str:
    if k >= MAX_ROUTERS_PER_PLANE:
        raise NetworkError(f"too many routers on the {plane} plane (at most {MAX_ROUTERS_PER_PLANE})")
    return f"10.{octet}.{ROUTER_ID_OCTET}.{k + 1}"


def segment_octet(index: int) -> int:
    octet = SEGMENT_OCTET + index
    return octet + 1 if octet >= OOB_OCTET else octet


class _Builder:
    def __init__(self, plan: NetworkPlan) -> None:
        self.plan = plan

    def ns(self, label: str, node: str, kind: str, plane: str, router_id: str | None = None) -> None:
        if label in self.plan.namespaces:
            raise NetworkError(f"two network nodes are both named {label!r}")
        self.plan.namespaces[label] = Namespace(label, f"{self.plan.prefix}-{label}", node, kind, plane, router_id)
        self.plan.nodes.setdefault(node, []).append(label)

    def wire(self, plane: str, a: End, b: End, rate: int, host_route: str | None = None) -> int:
        wid = len(self.plan.wires)
        self.plan.wires.append(Wire(wid, plane, a, b, rate, host_route))
        return wid

    def link(self, a: str, b: str, fabric: str, wires: list[int]) -> None:
        index = sum(1 for link in self.plan.links if (link.a, link.b) == (a, b))
        self.plan.links.append(Link(a, b, index, fabric, tuple(wires)))


def make_network_plan(topo: Topology, prefix: str) -> NetworkPlan:
    """Every namespace, wire and address of the twin's three planes. Raises NetworkError."""
    if not PREFIX_RE.match(prefix):
        raise NetworkError(f"network prefix {prefix!r} must be 1-8 lower-case letters and digits, "
                           "starting with a letter")
    spec = topo.spec
    segments = [s.name for s in spec.ethernet.segments]
    for seg in segments:
        if seg in (COMPUTE, OOB):
            raise NetworkError(f"Ethernet segment name {seg!r} clashes with a plane name")
    plan = NetworkPlan(prefix=prefix, topology=topo.name, segments=segments)
    plan.plane_prefix = {COMPUTE: f"10.{COMPUTE_OCTET}.0.0/16", OOB: f"10.{OOB_OCTET}.0.0/16"}
    for s, seg in enumerate(segments):
        plan.plane_prefix[seg] = f"10.{segment_octet(s)}.0.0/16"
    b = _Builder(plan)
    roles = _host_roles(topo)
    host_addrs = _add_hosts(b, topo, roles)
    rail_addrs = _add_compute(b, topo)
    _add_ethernet(b, topo, roles, host_addrs)
    _add_oob(b, topo, roles, host_addrs)
    for name, role in roles:
        addrs = dict(host_addrs[name])
        rails_of = tuple(rail_addrs.get(name, ()))
        if rails_of:
            addrs[COMPUTE] = rails_of[0]
        plan.hosts[name] = Host(name, role, {k: v.split("/")[0] for k, v in addrs.items()},
                                tuple(a.split("/")[0] for a in rails_of))
    return plan


def _host_roles(topo: Topology) -> list[tuple[str, str]]:
    """(host, role) in the order that numbers the hosts (h): GPU servers, Lustre MDS and OSS, Ceph
    hosts, management nodes, PDUs."""
    spec = topo.spec
    roles: list[tuple[str, str]] = [(s.name, "gpu") for s in topo.gpu_servers]
    if spec.lustre:
        roles += [(n, "mds") for n in naming.series(naming.LUSTRE_MDS, spec.lustre.mds)]
        roles += [(n, "oss") for n in naming.series(naming.LUSTRE_OSS, spec.lustre.oss)]
    if spec.ceph:
        roles += [(n, "ceph") for n in naming.series(naming.CEPH_HOST, spec.ceph.hosts)]
    roles += [(n, "mgmt") for n in topo.management_nodes]
    racks = sorted({s.rack for s in topo.gpu_servers})
    roles += [(f"pdu-{rack}-{j + 1}", "pdu") for rack in racks for j in range(spec.oob.pdus_per_rack)]
    return roles


def _segments_of(topo: Topology, role: str) -> list[int]:
    """The Ethernet segments (their indexes) a host of `role` joins, by what each segment carries."""
    segments = topo.spec.ethernet.segments
    if role == "pdu":
        return []
    if role == "gpu":
        return list(range(len(segments)))
    wanted = STORAGE_CARRIES if role in ("mds", "oss", "ceph") else BUSINESS_CARRIES
    chosen = [i for i, s in enumerate(segments) if wanted & set(s.carries)]
    return chosen or [0]


def _add_hosts(b: _Builder, topo: Topology, roles: list[tuple[str, str]]) -> dict[str, dict[str, str]]:
    """A namespace per host; returns each host's OOB and segment addresses (with prefix length)."""
    host_addrs: dict[str, dict[str, str]] = {}
    for h, (name, role) in enumerate(roles):
        b.ns(name, name, "host", "host")
        addrs = {OOB: _host_address(OOB_OCTET, h, 16)}
        for s in _segments_of(topo, role):
            addrs[b.plan.segments[s]] = _host_address(segment_octet(s), h)
        host_addrs[name] = addrs
    return host_addrs


def _add_compute(b: _Builder, topo: Topology) -> dict[str, list[str]]:
    """Compute fabric: leaf and spine routers, hosts' rails to their leaf pair. Returns each GPU
    server's rail addresses."""
    c = topo.spec.compute
    leaves = naming.series(naming.COMPUTE_LEAF, c.leaves)
    spines = naming.series(naming.COMPUTE_SPINE, c.spines)
    for k, name in enumerate(leaves + spines):
        b.ns(name, name, "router", COMPUTE, _router_id(COMPUTE_OCTET, k, COMPUTE))
    rails = c.nics_per_server
    if rails > ROUTER_ID_OCTET // RAIL_BLOCK:
        raise NetworkError(f"at most {ROUTER_ID_OCTET // RAIL_BLOCK} compute rails are addressable, not {rails}")
    rail_addrs: dict[str, list[str]] = {}
    for server in topo.gpu_servers:
        rail_addrs[server.name] = []
        for r in range(rails):
            leaf = server.leaf_pair[0] if r < rails // 2 else server.leaf_pair[1]
            addr = _rail_address(r, server.index)
            rail_addrs[server.name].append(addr)
            w = b.wire(COMPUTE, End(server.name, f"rail{r}", addr), End(leaf, ifname(f"{server.name}-{r}")),
                       c.rate_gbps, host_route=f"10.{COMPUTE_OCTET}.{r * RAIL_BLOCK}.0/20")
            b.link(server.name, leaf, COMPUTE, [w])
    for leaf in leaves:
        for spine in spines:
            for i in range(c.links_per_leaf_spine):
                w = b.wire(COMPUTE, End(leaf, ifname(f"{spine}-{i}")), End(spine, ifname(f"{leaf}-{i}")), c.rate_gbps)
                b.link(leaf, spine, COMPUTE, [w])
    return rail_addrs


def _add_ethernet(b: _Builder, topo: Topology, roles: list[tuple[str, str]],
                  host_addrs: dict[str, dict[str, str]]) -> None:
    """Ethernet: per segment, a router namespace for every switch (a VRF each)."""
    e, segments = topo.spec.ethernet, b.plan.segments
    eleaves = naming.series(naming.ETH_LEAF, e.leaves)
    espines = naming.series(naming.ETH_SPINE, e.spines)
    for s, seg in enumerate(segments):
        for k, name in enumerate(eleaves + espines):
            b.ns(f"{name}-{seg}", name, "router", seg, _router_id(segment_octet(s), k, seg))
    ports = [(name, s) for name, role in roles for s in _segments_of(topo, role)]
    for p, (name, s) in enumerate(ports):
        leaf = eleaves[p * e.leaves // len(ports)]
        seg = segments[s]
        hif = ifname(seg) if len(segments) < 10 else f"seg{s}"
        w = b.wire(seg, End(name, hif, host_addrs[name][seg]), End(f"{leaf}-{seg}", ifname(name)),
                   e.rate_gbps, host_route=b.plan.plane_prefix[seg])
        b.link(name, leaf, "ethernet", [w])
    for leaf in eleaves:
        for spine in espines:
            for i in range(e.links_per_leaf_spine):
                wires = [b.wire(seg, End(f"{leaf}-{seg}", ifname(f"{spine}-{i}")),
                                End(f"{spine}-{seg}", ifname(f"{leaf}-{i}")), e.rate_gbps)
                         for seg in segments]
                b.link(leaf, spine, "ethernet", wires)


def _add_oob(b: _Builder, topo: Topology, roles: list[tuple[str, str]], host_addrs: dict[str, dict[str, str]]) -> None:
    """Out-of-band: Linux bridges; the core pair joined by one cable; a star on the cores, or
    access switches with an uplink to each core (a loop, so STP is on)."""
    o = topo.spec.oob
    cores = naming.series(naming.OOB_CORE, o.core_switches)
    access = naming.series(naming.OOB_ACCESS, o.access_switches)
    for name in cores + access:
        b.ns(name, name, "bridge", OOB)
    w = b.wire(OOB, End(cores[0], ifname(cores[1])), End(cores[1], ifname(cores[0])), o.rate_gbps)
    b.link(cores[0], cores[1], "oob", [w])
    for sw in access:
        for core in cores:
            w = b.wire(OOB, End(sw, ifname(core)), End(core, ifname(sw)), o.rate_gbps)
            b.link(sw, core, "oob", [w])
    b.plan.oob_stp = bool(access)
    edge = access or cores
    for h, (name, _role) in enumerate(roles):
        sw = edge[h % len(edge)] if not access else edge[h * len(edge) // len(roles)]
        w = b.wire(OOB, End(name, "oob0", host_addrs[name][OOB]), End(sw, ifname(name)), o.rate_gbps)
        b.link(name, sw, "oob", [w])
