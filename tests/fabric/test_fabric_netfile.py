"""The generated ibsim fabric: counts, cabling, GUIDs, node descriptions (pure, no processes)."""

from __future__ import annotations

import re

import pytest

from emulator.topology import load_topology
from services.fabric.netfile import (
    HCA,
    SWITCH,
    FabricPlan,
    make_fabric_plan,
    render_netfile,
    render_root_guids,
)


def test_rack_counts(rack_plan: FabricPlan) -> None:
    c = load_topology("rack").spec.compute
    servers = len(load_topology("rack").gpu_servers)
    assert len(rack_plan.switches) == c.leaves + c.spines == 4
    assert len(rack_plan.hcas) == servers * c.nics_per_server == 32
    up = c.leaves * c.spines * c.links_per_leaf_spine
    assert len(rack_plan.cables) == 32 + up
    text = render_netfile(rack_plan)
    assert len(re.findall(r"^Switch\t64 ", text, re.M)) == 4
    assert len(re.findall(r"^Ca\t1 ", text, re.M)) == 32
    # every cable is written from both ends
    assert len(re.findall(r"^\[\d+\]\t\"", text, re.M)) == 2 * len(rack_plan.cables)


def test_cabling_follows_the_rails(rack_plan: FabricPlan) -> None:
    for server in load_topology("rack").gpu_servers:
        for rail in range(8):
            peer = rack_plan.peer(rack_plan.hca(server.name, rail).id, 1)
            assert peer is not None
            assert peer[0] == server.leaf_pair[0 if rail < 4 else 1]
    assert rack_plan.hca("gpu001", 3).description == "gpu001 mlx5_3"
    assert {n.system for n in rack_plan.hcas if n.system_guid == rack_plan.hca("gpu002", 0).system_guid} == {"gpu002"}


def test_guids_are_stable_and_distinct() -> None:
    a = make_fabric_plan(load_topology("su-1024"))
    b = make_fabric_plan(load_topology("su-1024"))
    assert [n.guid for n in a.nodes.values()] == [n.guid for n in b.nodes.values()]
    guids = [n.guid for n in a.nodes.values()]
    assert len(set(guids)) == len(guids) == 32 + 16 + 1024
    assert all(n.kind in (SWITCH, HCA) for n in a.nodes.values())


def test_root_guids_are_the_spines(rack_plan: FabricPlan) -> None:
    lines = render_root_guids(rack_plan).split()
    assert [int(x, 16) for x in lines] == [n.guid for n in rack_plan.spines]
    assert len(lines) == 2


def test_unknown_sm_node_is_refused() -> None:
    with pytest.raises(ValueError, match="SM node 'nope'"):
        make_fabric_plan(load_topology("mini"), sm_node="nope")
