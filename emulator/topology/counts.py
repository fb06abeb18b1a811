"""Counts that both the consistency checks and the derived figures need."""

from __future__ import annotations

from emulator.topology.schema import TopologySpec


def racks(spec: TopologySpec) -> int:
    return spec.servers.count // spec.servers.per_rack


def storage_nodes(spec: TopologySpec) -> int:
    """Lustre MDS + OSS and Ceph hosts: every one has a BMC and Ethernet ports."""
    lustre = spec.lustre.mds + spec.lustre.oss if spec.lustre else 0
    return lustre + (spec.ceph.hosts if spec.ceph else 0)


def ethernet_host_ports(spec: TopologySpec) -> int:
    e = spec.ethernet
    return (
        spec.servers.count * e.nics_per_server
        + storage_nodes(spec) * e.nics_per_storage_node
        + len(spec.management_nodes) * e.nics_per_management_node
    )


def ethernet_leaf_uplinks(spec: TopologySpec) -> int:
    return spec.ethernet.spines * spec.ethernet.links_per_leaf_spine


def data_switches(spec: TopologySpec) -> int:
    """Compute and Ethernet switches: each has a management port on the OOB network."""
    c, e = spec.compute, spec.ethernet
    return c.leaves + c.spines + e.leaves + e.spines


def oob_endpoints(spec: TopologySpec) -> int:
    """BMCs of every host, data-switch management ports and the GPU racks' PDUs."""
    bmcs = spec.servers.count + storage_nodes(spec) + len(spec.management_nodes)
    return bmcs + data_switches(spec) + racks(spec) * spec.oob.pdus_per_rack


def oob_capacity(spec: TopologySpec) -> int:
    """Endpoint ports: the core pair's own (a star) or the access switches' downlinks."""
    o = spec.oob
    if o.access_switches == 0:
        return o.core_switches * o.radix
    return o.access_switches * (o.radix - o.core_switches)
