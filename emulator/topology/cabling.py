"""How servers are cabled to the compute fabric: the one rule both names and figures follow.

Each server splits its NICs evenly across a leaf pair (leaves 2p+1 and 2p+2 form pair p): NIC
0..n/2-1 to the first leaf, the rest to the second. Servers fill leaf pairs in order, as many per
pair as a leaf has ports left after its spine uplinks, so consecutive servers (and so whole racks)
share a pair. For the seed's SU: 64 ports - 32 uplinks = 32 down ports / 4 NICs = 8 servers (two
racks) per pair, 16 pairs, 32 leaves.
"""

from __future__ import annotations

from emulator.topology.schema import ComputeFabric


def leaf_uplinks(compute: ComputeFabric) -> int:
    """Uplinks per leaf: every leaf reaches every spine over `links_per_leaf_spine` cables."""
    return compute.spines * compute.links_per_leaf_spine


def nics_per_leaf(compute: ComputeFabric) -> int:
    """NICs one server plugs into each leaf of its pair."""
    return compute.nics_per_server // 2


def servers_per_leaf_pair(compute: ComputeFabric) -> int:
    down_ports = max(compute.leaf_radix - leaf_uplinks(compute), 0)
    return down_ports // nics_per_leaf(compute)


def leaf_pairs_needed(compute: ComputeFabric, servers: int) -> int | None:
    """Leaf pairs the servers fill; None if a leaf has no room for even one server."""
    per_pair = servers_per_leaf_pair(compute)
    return None if per_pair == 0 else -(-servers // per_pair)


def servers_on_pair(compute: ComputeFabric, servers: int, pair: int) -> int:
    per_pair = servers_per_leaf_pair(compute)
    return max(0, min(per_pair, servers - pair * per_pair))


def leaf_pair_of(compute: ComputeFabric, server_index: int) -> int:
    return server_index // servers_per_leaf_pair(compute)
