"""Derived figures: what a designer asks of a topology, as pure functions of the spec.

Units are in the field names (kw, mw, gbps, tbps, tb = 10^12 bytes as drive vendors count).
Power is the GPU servers' IT load only, as the seed counts it; storage and switches are not in it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from emulator.topology import cabling, counts
from emulator.topology.schema import Ceph, Lustre, TopologySpec


def _r(value: float) -> float:
    return round(value, 3)  # no 1305.6000000000001 in output


def ratio(down: int, up: int) -> str:
    """Oversubscription as operators write it: "1:1", "2:1", "0.5:1"."""
    return f"{_r(down / up):g}:1" if up else "inf"


@dataclass(frozen=True)
class PowerFigures:
    per_server_kw: float
    per_rack_kw: float
    total_kw: float
    total_mw: float


@dataclass(frozen=True)
class ComputeFigures:
    rate_gbps: int
    leaves: int
    spines: int
    leaf_pairs: int
    servers_per_leaf_pair: int
    server_leaf_links: int
    leaf_spine_links: int
    leaf_downlinks: int  # on the fullest leaf
    leaf_uplinks: int
    leaf_down_gbps: int
    leaf_up_gbps: int
    oversubscription: str  # down:up on the fullest leaf
    non_blocking: bool
    bisection_tbps: float  # one direction, across the worst cut into two halves
    leaf_ports_used: int  # on the fullest leaf
    leaf_radix: int
    spine_ports_used: int
    spine_radix: int
    sharp: bool


@dataclass(frozen=True)
class EthernetFigures:
    rate_gbps: int
    leaves: int
    spines: int
    host_ports: int
    host_ports_available: int
    leaf_spine_links: int
    leaf_uplinks: int
    oversubscription: str  # all host ports : all uplinks, averaged over leaves
    spine_ports_used: int
    radix: int
    isolation: str
    segments: list[str]


@dataclass(frozen=True)
class OobFigures:
    rate_gbps: int
    core_switches: int
    access_switches: int
    switches: int
    endpoints: int
    endpoint_ports: int


@dataclass(frozen=True)
class LustreFigures:
    fsname: str
    mds: int
    mdts: int
    oss: int
    osts: int
    ost_size_tb: float
    raw_tb: float


@dataclass(frozen=True)
class CephFigures:
    hosts: int
    hdd_osds: int
    hdd_raw_tb: float
    ec_profile: str  # "8+3"
    ec_failure_domain: str
    ec_overhead: float  # raw bytes per user byte: (k+m)/k
    ec_usable_tb: float
    ec_spare_host: bool  # k+m+1 hosts: a lost host can be rebuilt elsewhere
    ssd_osds: int
    ssd_raw_tb: float
    rbd_size: int | None
    rbd_usable_tb: float | None


@dataclass(frozen=True)
class DerivedFigures:
    name: str
    gpus: int
    servers: int
    racks: int
    servers_per_rack: int
    mig_servers: int
    management_nodes: int
    switches: int  # compute + Ethernet + OOB
    power: PowerFigures
    compute: ComputeFigures
    ethernet: EthernetFigures
    oob: OobFigures
    lustre: LustreFigures | None
    ceph: CephFigures | None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def derive(spec: TopologySpec) -> DerivedFigures:
    """Assumes `spec` passed the consistency checks (no zero divisions, cabling fits)."""
    s = spec.servers
    compute, ethernet, oob = _compute(spec), _ethernet(spec), _oob(spec)
    return DerivedFigures(
        name=spec.name,
        gpus=s.count * spec.gpu_server.gpus_per_server,
        servers=s.count,
        racks=counts.racks(spec),
        servers_per_rack=s.per_rack,
        mig_servers=spec.mig.last_servers if spec.mig else 0,
        management_nodes=len(spec.management_nodes),
        switches=compute.leaves + compute.spines + ethernet.leaves + ethernet.spines + oob.switches,
        power=_power(spec),
        compute=compute,
        ethernet=ethernet,
        oob=oob,
        lustre=_lustre(spec.lustre) if spec.lustre else None,
        ceph=_ceph(spec.ceph) if spec.ceph else None,
    )


def _power(spec: TopologySpec) -> PowerFigures:
    kw = spec.gpu_server.power_kw
    total = kw * spec.servers.count
    return PowerFigures(kw, _r(kw * spec.servers.per_rack), _r(total), round(total / 1000, 4))


def _compute(spec: TopologySpec) -> ComputeFigures:
    c, servers = spec.compute, spec.servers.count
    up, per_leaf = cabling.leaf_uplinks(c), cabling.nics_per_leaf(c)
    pairs = c.leaves // 2
    # Both leaves of a pair carry the same servers, so count per pair and double.
    downs = [cabling.servers_on_pair(c, servers, p) * per_leaf for p in range(pairs) for _ in (0, 1)]
    fullest = max(downs)
    # A cut splitting the servers in half crosses the spines; each leaf passes at most
    # min(down, up) links' worth through it, and half of that traffic crosses the cut.
    bisection_links = sum(min(d, up) for d in downs) / 2
    return ComputeFigures(
        rate_gbps=c.rate_gbps,
        leaves=c.leaves,
        spines=c.spines,
        leaf_pairs=pairs,
        servers_per_leaf_pair=cabling.servers_per_leaf_pair(c),
        server_leaf_links=servers * c.nics_per_server,
        leaf_spine_links=c.leaves * up,
        leaf_downlinks=fullest,
        leaf_uplinks=up,
        leaf_down_gbps=fullest * c.rate_gbps,
        leaf_up_gbps=up * c.rate_gbps,
        oversubscription=ratio(fullest, up),
        non_blocking=fullest <= up,
        bisection_tbps=_r(bisection_links * c.rate_gbps / 1000),
        leaf_ports_used=fullest + up,
        leaf_radix=c.leaf_radix,
        spine_ports_used=c.leaves * c.links_per_leaf_spine,
        spine_radix=c.spine_radix,
        sharp=c.sharp,
    )


def _ethernet(spec: TopologySpec) -> EthernetFigures:
    e = spec.ethernet
    up = counts.ethernet_leaf_uplinks(spec)
    host_ports = counts.ethernet_host_ports(spec)
    return EthernetFigures(
        rate_gbps=e.rate_gbps,
        leaves=e.leaves,
        spines=e.spines,
        host_ports=host_ports,
        host_ports_available=e.leaves * (e.radix - up),
        leaf_spine_links=e.leaves * up,
        leaf_uplinks=up,
        oversubscription=ratio(host_ports, e.leaves * up),
        spine_ports_used=e.leaves * e.links_per_leaf_spine,
        radix=e.radix,
        isolation=e.isolation,
        segments=[seg.name for seg in e.segments],
    )


def _oob(spec: TopologySpec) -> OobFigures:
    o = spec.oob
    return OobFigures(
        rate_gbps=o.rate_gbps,
        core_switches=o.core_switches,
        access_switches=o.access_switches,
        switches=o.core_switches + o.access_switches,
        endpoints=counts.oob_endpoints(spec),
        endpoint_ports=counts.oob_capacity(spec),
    )


def _lustre(lu: Lustre) -> LustreFigures:
    osts = lu.oss * lu.osts_per_oss
    return LustreFigures(
        fsname=lu.fsname,
        mds=lu.mds,
        mdts=lu.mds * lu.mdts_per_mds,
        oss=lu.oss,
        osts=osts,
        ost_size_tb=lu.ost_size_tb,
        raw_tb=_r(osts * lu.ost_size_tb),
    )


def _ceph(ce: Ceph) -> CephFigures:
    hdd_osds = ce.hosts * ce.hdd_per_host
    hdd_raw = hdd_osds * ce.hdd_size_tb
    overhead = (ce.ec.k + ce.ec.m) / ce.ec.k
    ssd_osds = ce.ssd_hosts * ce.ssd_per_host
    ssd_raw = ssd_osds * ce.ssd_size_tb
    return CephFigures(
        hosts=ce.hosts,
        hdd_osds=hdd_osds,
        hdd_raw_tb=_r(hdd_raw),
        ec_profile=f"{ce.ec.k}+{ce.ec.m}",
        ec_failure_domain=ce.ec.failure_domain,
        ec_overhead=_r(overhead),
        ec_usable_tb=_r(hdd_raw / overhead),
        ec_spare_host=ce.hosts >= ce.ec.k + ce.ec.m + 1,
        ssd_osds=ssd_osds,
        ssd_raw_tb=_r(ssd_raw),
        rbd_size=ce.rbd.size if ce.rbd else None,
        rbd_usable_tb=_r(ssd_raw / ce.rbd.size) if ce.rbd else None,
    )
