"""The SHARP Aggregation Manager model over fabrics built from the generated plans (no ibsim)."""

from __future__ import annotations

from collections.abc import Iterable
from functools import cache

import pytest

from emulator.topology import load_topology
from services.fabric.model import CA, SWITCH, FabricState, Link, Port, System
from services.fabric.netfile import FabricPlan, make_fabric_plan
from services.fabric.sharp import ERROR, READY, AggregationManager, SharpError


@cache
def plan(topology: str) -> FabricPlan:
    return make_fabric_plan(load_topology(topology))


def fabric(topology: str, down: Iterable[tuple[str, int]] = (), unlink: bool = False) -> FabricState:
    """The FabricState OpenSM would leave for `topology`: every cabled port Active, except the
    (node id, port) ends in `down` and their peers; `unlink` drops those cables too, as
    ibnetdiscover does for a link that is not up."""
    p = plan(topology)
    state = FabricState()
    lids = {node.id: lid for lid, node in enumerate(p.nodes.values(), start=1)}
    for node in p.nodes.values():
        kind = SWITCH if node.kind == "switch" else CA
        state.systems[node.guid] = System(node.guid, kind, node.description, node.ports, node.system_guid,
                                          node.device_id, lid=lids[node.id] if kind == SWITCH else None)
    dead = set(down) | {p.peer(*end) for end in down}
    for cable in p.cables:
        ends = ((cable.a, cable.a_port), (cable.b, cable.b_port))
        for node_id, port in ends:
            guid = p.nodes[node_id].guid
            state.ports[(guid, port)] = Port(guid, port, lids[node_id], "Down" if (node_id, port) in dead else "Active",
                                             "LinkUp")
        if not (unlink and ends[0] in dead):
            state.add_link(Link((p.nodes[cable.a].guid, cable.a_port), (p.nodes[cable.b].guid, cable.b_port), "4xHDR"))
    return state


def uplinks(leaf: str, spine: str, topology: str = "su-1024") -> set[tuple[str, int]]:
    return {(c.a, c.a_port) for c in plan(topology).cables_between(leaf, spine)}


def test_rack_one_tree_per_rail_on_its_leaf() -> None:
    am = AggregationManager(fabric("rack"))
    job = am.create_job("j1", servers=["gpu001", "gpu002", "gpu003", "gpu004"])
    assert job.sharp_available and len(job.trees) == 8
    for tree in job.trees:
        leaf = "ib-leaf01" if tree.rail < 4 else "ib-leaf02"  # 4 NICs to one leaf, 4 to the other
        assert tree.leaves == [leaf]
        assert tree.root == leaf and tree.links == []  # a rail on one leaf needs no spine
        assert tree.hcas == [f"gpu00{i} mlx5_{tree.rail}" for i in range(1, 5)]
    d = job.trees[3].to_dict()
    assert d["job_id"] == "j1" and d["rail"] == 3 and d["state"] == READY and d["reason"] == ""
    assert {"tree_id", "root", "leaves", "hcas", "streaming"} <= d.keys()
    assert job.to_dict()["sharp_available"] is True


def test_rails_across_leaf_pairs_are_rooted_on_distinct_least_loaded_spines() -> None:
    am = AggregationManager(fabric("su-1024"))
    job = am.create_job("j", servers=["gpu001", "gpu009"])  # leaf pairs 01/02 and 03/04
    tree0 = job.trees[0]
    assert tree0.leaves == ["ib-leaf01", "ib-leaf03"]
    assert tree0.children == {"ib-leaf01": ["gpu001 mlx5_0"], "ib-leaf03": ["gpu009 mlx5_0"]}
    assert [t.leaves for t in job.trees[4:]] == [["ib-leaf02", "ib-leaf04"]] * 4
    # Least-loaded: eight trees, eight different spines, in name order.
    assert [t.root for t in job.trees] == [f"ib-spine{i:02d}" for i in range(1, 9)]
    assert all(len(t.links) == 2 and all(t.root in link for link in t.links) for t in job.trees)


def test_su1024_whole_cluster_job() -> None:
    am = AggregationManager(fabric("su-1024"))
    servers = [s.name for s in load_topology("su-1024").gpu_servers]
    job = am.create_job("all", servers=servers)
    assert len(servers) == 128 and len(job.trees) == 8
    for tree in job.trees:
        first = tree.rail < 4
        assert tree.leaves == sorted(f"ib-leaf{i:02d}" for i in range(1 if first else 2, 33, 2))
        assert all(len(hcas) == 8 for hcas in tree.children.values())
        assert len(tree.hcas) == 128 and tree.root and tree.root.startswith("ib-spine")
    assert len({t.root for t in job.trees}) == 8
    assert am.in_use() == 8


def test_tree_limit_refused_and_nothing_changed() -> None:
    am = AggregationManager(fabric("rack"), max_trees=10)
    am.create_job("a", servers=["gpu001"])  # 8 trees
    before = [t.to_dict() for t in am.trees()]
    with pytest.raises(SharpError, match=r"no resources: job b needs 4 trees, 8 of 10 are in use"):
        am.create_job("b", servers=["gpu002"], rails=range(4))
    assert [j.job_id for j in am.jobs()] == ["a"]
    assert [t.to_dict() for t in am.trees()] == before
    am.create_job("b", servers=["gpu002"], rails=[0, 1])  # what fits still does
    assert am.in_use() == 10


def test_trees_per_job_counts_against_the_limit() -> None:
    am = AggregationManager(fabric("su-1024"), max_trees=20)
    job = am.create_job("x", servers=["gpu001", "gpu009"], trees_per_job=2)
    assert len(job.trees) == 16
    with pytest.raises(SharpError, match="needs 8 trees"):
        am.create_job("y", servers=["gpu002"], trees_per_job=1)
    with pytest.raises(SharpError, match="trees_per_job"):
        am.create_job("z", servers=["gpu002"], trees_per_job=0)


def test_streaming_limit() -> None:
    am = AggregationManager(fabric("rack"), max_trees=100, max_streaming_trees=10)
    am.create_job("sat", servers=["gpu001"], streaming=True)
    assert am.in_use(streaming=True) == 8 and all(t.streaming for t in am.trees())
    with pytest.raises(SharpError, match=r"needs 8 streaming trees, 8 of 10 are in use"):
        am.create_job("sat2", servers=["gpu002"], streaming=True)
    am.create_job("llt", servers=["gpu002"])  # low-latency trees are not limited by it
    assert am.in_use() == 16 and am.in_use(streaming=True) == 8
    with pytest.raises(SharpError, match="must not be negative"):
        AggregationManager(fabric("rack"), max_streaming_trees=-1)


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"hcas": ["gpu099 mlx5_0"]}, "no HCA 'gpu099 mlx5_0' in the fabric"),
    ({"hcas": ["ib-leaf01"]}, "not an HCA node description"),
    ({"hcas": ["gpu001 mlx5_0", "gpu001 mlx5_0"]}, "listed twice"),
    ({"hcas": []}, "at least one HCA"),
    ({"servers": ["gpu099"]}, "no HCA of server 'gpu099'"),
    ({"hcas": ["gpu002 mlx5_5"]}, "HCA gpu002 mlx5_5 is Down, not Active"),
])
def test_bad_requests_are_refused(kwargs: dict[str, object], match: str) -> None:
    am = AggregationManager(fabric("rack", down={("gpu002-mlx5_5", 1)}))
    with pytest.raises(SharpError, match=match):
        am.create_job("j", **kwargs)  # type: ignore[arg-type]
    assert am.jobs() == [] and am.trees() == []


def test_duplicate_job_refused() -> None:
    am = AggregationManager(fabric("rack"))
    am.create_job("j", hcas=["gpu001 mlx5_0"])
    with pytest.raises(SharpError, match="'j' already exists"):
        am.create_job("j", hcas=["gpu002 mlx5_0"])
    assert [t.hcas for t in am.trees()] == [["gpu001 mlx5_0"]]
    assert isinstance(SharpError("x"), ValueError)


@pytest.mark.parametrize("unlink", [False, True])
def test_down_uplink_moves_only_the_tree_using_it(unlink: bool) -> None:
    am = AggregationManager(fabric("su-1024"))
    job = am.create_job("j", servers=["gpu001", "gpu009"])
    other = am.create_job("k", servers=["gpu017", "gpu025"])  # leaf pairs 05/06 and 07/08
    before = {t.tree_id: t.to_dict() for t in am.trees()}
    tree0 = job.trees[0]
    assert tree0.root == "ib-spine01"
    used = tree0.links[0]  # "ib-leaf01[P]-ib-spine01[Q]"
    leaf_port = int(used.split("[")[1].split("]")[0])
    changes = am.update(fabric("su-1024", down={("ib-leaf01", leaf_port)}, unlink=unlink))
    assert len(changes) == 1
    change = changes[0]
    assert (change.job_id, change.rail, change.tree_id) == ("j", 0, tree0.tree_id)
    assert change.old_root == "ib-spine01" and change.new_root not in (None, "ib-spine01")
    assert used in change.reason and "not Active" in change.reason
    assert change.to_dict()["new_root"] == change.new_root
    # j roots on spines 01..08, k on 09..16: every other spine roots one tree, the first by name wins.
    assert tree0.root == "ib-spine02" and tree0.state == READY and job.sharp_available
    assert tree0.leaves == ["ib-leaf01", "ib-leaf03"] and used not in tree0.links
    for t in am.trees():
        if t is not tree0:
            assert t.to_dict() == before[t.tree_id], f"tree {t.tree_id} should be untouched"
    assert other.sharp_available


def test_an_unused_link_going_down_changes_nothing() -> None:
    am = AggregationManager(fabric("su-1024"))
    job = am.create_job("j", servers=["gpu001", "gpu009"])
    before = [t.to_dict() for t in job.trees]
    # spine16 roots none of j's trees.
    assert am.update(fabric("su-1024", down=uplinks("ib-leaf01", "ib-spine16"))) == []
    assert [t.to_dict() for t in job.trees] == before


def test_root_spine_gone_rebuilds_on_another() -> None:
    am = AggregationManager(fabric("su-1024"))
    job = am.create_job("j", servers=["gpu001", "gpu009"], rails=[0])
    down = {(c.b, c.b_port) for c in plan("su-1024").cables if c.b == "ib-spine01"}
    changes = am.update(fabric("su-1024", down=down, unlink=True))
    assert [(c.old_root, c.new_root) for c in changes] == [("ib-spine01", "ib-spine02")]
    assert job.sharp_available


def test_no_spine_reaches_a_leaf_puts_the_tree_in_error() -> None:
    am = AggregationManager(fabric("su-1024"))
    job = am.create_job("j", servers=["gpu001", "gpu009"])
    other = am.create_job("k", servers=["gpu017", "gpu025"])
    cut = {(c.a, c.a_port) for c in plan("su-1024").cables if c.a == "ib-leaf01" and c.kind == "leaf-spine"}
    changes = am.update(fabric("su-1024", down=cut))
    # Rails 0-3 of j sit on leaf01; rails 4-7 (leaves 02/04) and job k are untouched.
    assert sorted(c.rail for c in changes) == [0, 1, 2, 3]
    assert all(c.job_id == "j" and c.new_root is None for c in changes)
    for tree in job.trees:
        if tree.rail < 4:
            assert tree.state == ERROR and tree.root is None and tree.links == []
            assert "no spine reaches all of rail" in tree.reason and "ib-leaf01" in tree.reason
            assert tree.to_dict()["state"] == "error"
        else:
            assert tree.state == READY
    assert job.sharp_available is False and job.to_dict()["state"] == ERROR
    assert other.sharp_available
    assert am.in_use() == 12  # trees in error hold no switch resources
    # Creating a job over that leaf is refused outright.
    with pytest.raises(SharpError, match="no spine reaches"):
        am.create_job("new", hcas=["gpu002 mlx5_0", "gpu010 mlx5_0"])
    # The leaf's uplinks come back: the trees are rebuilt.
    back = am.update(fabric("su-1024"))
    assert sorted(c.rail for c in back) == [0, 1, 2, 3]
    assert all(c.old_root is None and c.new_root and c.reason == "recovered" for c in back)
    assert job.sharp_available


def test_hca_down_fails_its_rail_only() -> None:
    am = AggregationManager(fabric("rack"))
    job = am.create_job("j", servers=["gpu001", "gpu002"])
    changes = am.update(fabric("rack", down={("gpu002-mlx5_6", 1)}))
    assert [(c.rail, c.old_root, c.new_root) for c in changes] == [(6, "ib-leaf02", None)]
    assert "gpu002 mlx5_6 is Down" in changes[0].reason
    assert [t.rail for t in job.trees if t.state == ERROR] == [6]
    assert not job.sharp_available


def test_release_frees_trees() -> None:
    am = AggregationManager(fabric("rack"), max_trees=8)
    a = am.create_job("a", servers=["gpu001"])
    with pytest.raises(SharpError, match="no resources"):
        am.create_job("b", servers=["gpu002"])
    assert am.release_job("a") is a
    assert am.jobs() == [] and am.trees() == [] and am.in_use() == 0
    b = am.create_job("b", servers=["gpu002"])
    assert sorted(t.tree_id for t in b.trees) == list(range(8))  # tree IDs are reused
    with pytest.raises(SharpError, match="no SHARP job 'a'"):
        am.release_job("a")


def test_load_spreads_over_spines_and_links() -> None:
    am = AggregationManager(fabric("su-1024"))
    for i in range(3):
        am.create_job(f"j{i}", hcas=["gpu001 mlx5_0", "gpu009 mlx5_0"])
    roots = [t.root for t in am.trees()]
    assert roots == ["ib-spine01", "ib-spine02", "ib-spine03"]
    # 18 such trees: 16 spines once, then spine01 and spine02 again over their second cables.
    for i in range(3, 18):
        am.create_job(f"j{i}", hcas=["gpu001 mlx5_0", "gpu009 mlx5_0"])
    trees = am.trees()
    assert [t.root for t in trees[16:]] == ["ib-spine01", "ib-spine02"]
    assert trees[16].links != trees[0].links  # the other cable of each leaf to spine01


def test_a_tree_in_error_comes_back_only_within_the_limit() -> None:
    am = AggregationManager(fabric("rack"), max_trees=8)
    a = am.create_job("a", servers=["gpu001"])
    am.update(fabric("rack", down={("gpu001-mlx5_0", 1)}))
    assert am.in_use() == 7
    am.create_job("b", hcas=["gpu002 mlx5_0"])  # takes the freed tree
    assert am.update(fabric("rack")) == []
    assert not a.sharp_available and "no resources" in a.trees[0].reason
    am.release_job("b")
    assert [(c.job_id, c.rail, c.reason) for c in am.update(fabric("rack"))] == [("a", 0, "recovered")]
    assert a.sharp_available
