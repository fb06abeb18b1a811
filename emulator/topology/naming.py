"""Names of everything a topology creates: hosts, racks, switches.

Zero-padded so names sort in cabling order ("gpu001".."gpu128", "r01".."r32"); the width grows
only when a count outgrows it, so the seed's names stay as operators write them.
"""

from __future__ import annotations

from emulator.topology.schema import TopologySpec


def numbered(prefix: str, number: int, total: int, width: int) -> str:
    """`prefix` + 1-based `number`, padded to `width` digits or as many as `total` needs."""
    return f"{prefix}{number:0{max(width, len(str(total)))}d}"


def series(prefix: str, total: int, width: int = 2) -> list[str]:
    return [numbered(prefix, i + 1, total, width) for i in range(total)]


def gpu_server(index: int, total: int) -> str:
    return numbered("gpu", index + 1, total, 3)


def rack(index: int, total: int) -> str:
    return numbered("r", index + 1, total, 2)


# Prefixes of generated names, per role; management nodes must not collide with them.
COMPUTE_LEAF = "ib-leaf"
COMPUTE_SPINE = "ib-spine"
ETH_LEAF = "eth-leaf"
ETH_SPINE = "eth-spine"
OOB_CORE = "oob-core"
OOB_ACCESS = "oob-access"
LUSTRE_MDS = "mds"
LUSTRE_OSS = "oss"
CEPH_HOST = "ceph"


def generated_names(spec: TopologySpec) -> set[str]:
    """Every host and switch name the topology generates (management nodes are named by hand)."""
    names = {gpu_server(i, spec.servers.count) for i in range(spec.servers.count)}
    c, e, o = spec.compute, spec.ethernet, spec.oob
    for prefix, total in (
        (COMPUTE_LEAF, c.leaves),
        (COMPUTE_SPINE, c.spines),
        (ETH_LEAF, e.leaves),
        (ETH_SPINE, e.spines),
        (OOB_CORE, o.core_switches),
        (OOB_ACCESS, o.access_switches),
        (LUSTRE_MDS, spec.lustre.mds if spec.lustre else 0),
        (LUSTRE_OSS, spec.lustre.oss if spec.lustre else 0),
        (CEPH_HOST, spec.ceph.hosts if spec.ceph else 0),
    ):
        names.update(series(prefix, total))
    return names
