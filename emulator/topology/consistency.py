"""Checks that relate several fields: does the design add up? Each returns Problems naming the
field a designer would change. Run after the schema accepted the file's shape."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

from emulator.topology import cabling, counts, naming
from emulator.topology.errors import Problem
from emulator.topology.mig_layouts import MIG_LAYOUTS
from emulator.topology.schema import TopologySpec


def check(spec: TopologySpec) -> list[Problem]:
    problems: list[Problem] = []
    for checker in (_servers, _gpu_server, _compute, _ethernet, _oob, _lustre, _ceph, _names):
        problems.extend(checker(spec))
    return problems


def _servers(spec: TopologySpec) -> Iterator[Problem]:
    s = spec.servers
    if s.count % s.per_rack:
        yield Problem(
            ("servers", "per_rack"),
            f"{s.count} servers do not fill racks of {s.per_rack} "
            f"({s.count % s.per_rack} left in a partial rack)",
        )
    if spec.mig:
        if spec.mig.last_servers > s.count:
            yield Problem(
                ("mig", "last_servers"), f"{spec.mig.last_servers} MIG servers but only {s.count} servers"
            )
        if spec.mig.layout not in MIG_LAYOUTS:
            yield Problem(
                ("mig", "layout"),
                f"unknown MIG layout {spec.mig.layout!r} (known: {', '.join(MIG_LAYOUTS)})",
            )


def _gpu_server(spec: TopologySpec) -> Iterator[Problem]:
    g = spec.gpu_server
    if len(g.pci_bus_ids) != g.gpus_per_server:
        yield Problem(
            ("gpu_server", "pci_bus_ids"),
            f"needs one bus id per GPU ({g.gpus_per_server}), got {len(g.pci_bus_ids)}",
        )
    for bus_id, n in Counter(g.pci_bus_ids).items():
        if n > 1:
            yield Problem(("gpu_server", "pci_bus_ids"), f"duplicate bus id {bus_id!r}")


def _compute(spec: TopologySpec) -> Iterator[Problem]:
    c, servers = spec.compute, spec.servers.count
    up = cabling.leaf_uplinks(c)
    per_leaf = cabling.nics_per_leaf(c)
    if up + per_leaf > c.leaf_radix:
        yield Problem(
            ("compute", "spines"),
            f"{c.spines} spines x {c.links_per_leaf_spine} links = {up} uplinks per leaf leave "
            f"no room for a server's {per_leaf} NICs in leaf_radix {c.leaf_radix}",
        )
        return
    per_pair = cabling.servers_per_leaf_pair(c)
    pairs = cabling.leaf_pairs_needed(c, servers) or 0
    if pairs > c.leaves // 2:
        yield Problem(
            ("compute", "leaves"),
            f"{servers} servers need {pairs} leaf pairs ({2 * pairs} leaves: {per_pair} servers "
            f"x {per_leaf} NICs + {up} uplinks per {c.leaf_radix}-port leaf), got {c.leaves}",
        )
    spine_ports = c.leaves * c.links_per_leaf_spine
    if spine_ports > c.spine_radix:
        yield Problem(
            ("compute", "spine_radix"),
            f"{c.leaves} leaves x {c.links_per_leaf_spine} links need {spine_ports} ports per "
            f"spine, got {c.spine_radix}",
        )
    down = min(servers, per_pair) * per_leaf  # the fullest leaf
    if c.non_blocking and down > up:
        yield Problem(
            ("compute", "non_blocking"),
            f"required, but the fullest leaf has {down} downlinks and {up} uplinks "
            f"({down}:{up}); add spines or links_per_leaf_spine",
        )


def _ethernet(spec: TopologySpec) -> Iterator[Problem]:
    e = spec.ethernet
    up = counts.ethernet_leaf_uplinks(spec)
    capacity = e.leaves * max(e.radix - up, 0)
    needed = counts.ethernet_host_ports(spec)
    if needed > capacity:
        yield Problem(
            ("ethernet", "leaves"),
            f"hosts need {needed} leaf ports, {e.leaves} leaves x ({e.radix} - {up} uplinks) "
            f"offer {capacity}",
        )
    if e.leaves * e.links_per_leaf_spine > e.radix:
        yield Problem(
            ("ethernet", "spines"),
            f"{e.leaves} leaves x {e.links_per_leaf_spine} links need "
            f"{e.leaves * e.links_per_leaf_spine} ports per spine, radix is {e.radix}",
        )
    yield from _segments(spec)


def _segments(spec: TopologySpec) -> Iterator[Problem]:
    e = spec.ethernet
    seen: dict[str, int] = {}
    vlans: dict[int, int] = {}
    for i, seg in enumerate(e.segments):
        if seg.name in seen:
            yield Problem(("ethernet", "segments", i, "name"), f"duplicate segment name {seg.name!r}")
        seen.setdefault(seg.name, i)
        if e.isolation == "vlan" and seg.vlan is None:
            yield Problem(("ethernet", "segments", i, "vlan"), "required when isolation is 'vlan'")
        if seg.vlan is not None:
            if seg.vlan in vlans:
                yield Problem(("ethernet", "segments", i, "vlan"), f"VLAN {seg.vlan} used twice")
            vlans.setdefault(seg.vlan, i)
        if "lustre-rdma" in seg.carries and not seg.lossless:
            yield Problem(
                ("ethernet", "segments", i, "lossless"),
                "must be true: the segment carries Lustre RDMA (RoCE needs PFC/ECN)",
            )
    if spec.lustre and not any("lustre-rdma" in s.carries for s in e.segments):
        yield Problem(("ethernet", "segments"), "no segment carries lustre-rdma, but lustre is defined")


def _oob(spec: TopologySpec) -> Iterator[Problem]:
    o = spec.oob
    if o.access_switches and o.radix <= o.core_switches:
        yield Problem(("oob", "radix"), f"access switches need more than {o.core_switches} ports")
        return
    needed, capacity = counts.oob_endpoints(spec), counts.oob_capacity(spec)
    if needed > capacity:
        yield Problem(
            ("oob", "access_switches"),
            f"{needed} endpoints (BMCs, switch management ports, PDUs) need ports, "
            f"{o.access_switches} access switches of radix {o.radix} offer {capacity}",
        )
    if o.access_switches > o.radix:
        yield Problem(("oob", "access_switches"), f"more than a core switch's {o.radix} ports")


def _lustre(spec: TopologySpec) -> Iterator[Problem]:
    lu = spec.lustre
    if lu is None:
        return
    if lu.mds_ha and lu.mds % 2:
        yield Problem(("lustre", "mds"), f"must be even with mds_ha (failover pairs), got {lu.mds}")
    if lu.oss_failover_pairs and lu.oss % 2:
        yield Problem(("lustre", "oss"), f"must be even with oss_failover_pairs, got {lu.oss}")


def _ceph(spec: TopologySpec) -> Iterator[Problem]:
    ce = spec.ceph
    if ce is None:
        return
    width = ce.ec.k + ce.ec.m
    domains = ce.hosts if ce.ec.failure_domain == "host" else ce.hosts * ce.hdd_per_host
    if width > domains:
        yield Problem(
            ("ceph", "ec"),
            f"EC {ce.ec.k}+{ce.ec.m} needs {width} {ce.ec.failure_domain}s (one per shard), got {domains}",
        )
    if ce.ssd_hosts > ce.hosts:
        yield Problem(("ceph", "ssd_hosts"), f"{ce.ssd_hosts} SSD hosts but only {ce.hosts} hosts")
    if (ce.ssd_hosts == 0) != (ce.ssd_per_host == 0):
        yield Problem(("ceph", "ssd_per_host"), "ssd_hosts and ssd_per_host must both be 0 or both > 0")
    if ce.rbd is not None:
        ssd_domains = ce.ssd_hosts if ce.rbd.failure_domain == "host" else ce.ssd_hosts * ce.ssd_per_host
        if ce.rbd.size > ssd_domains:
            yield Problem(
                ("ceph", "rbd", "size"),
                f"{ce.rbd.size} replicas need {ce.rbd.size} SSD {ce.rbd.failure_domain}s, "
                f"got {ssd_domains} (set ssd_hosts/ssd_per_host)",
            )


def _names(spec: TopologySpec) -> Iterator[Problem]:
    taken = naming.generated_names(spec)
    seen: set[str] = set()
    for i, node in enumerate(spec.management_nodes):
        if node.name in seen:
            yield Problem(("management_nodes", i, "name"), f"duplicate name {node.name!r}")
        elif node.name in taken:
            yield Problem(("management_nodes", i, "name"), f"{node.name!r} is a generated host name")
        seen.add(node.name)
