"""The thrasher's seeded plan (workloads/chaos/schedule.py): replayable, every fault cleared before the
recovery quarter, and never more down at once than the twin is built to survive."""

from __future__ import annotations

import pytest

from workloads.chaos import schedule
from workloads.chaos.schedule import CAPACITY, Inventory, PlannedFault

DAEMONS = {"ceph-mon": "ceph_mon", "ceph-rgw": "ceph_rgw", "fabric": "fabric", "mds01": "lustre_mds",
           "mds02": "lustre_mds", "oss01": "lustre_oss", "oss02": "lustre_oss",
           **{f"gpu00{i}": "gpu_node" for i in range(1, 5)}, **{f"osd.{i}": "ceph_osd" for i in range(15)}}
NETNS = Inventory(daemons=DAEMONS, osds=list(range(15)), oss=["oss01", "oss02"],
                  xid_servers=["gpu001", "gpu002", "gpu003"],
                  links=[("eth-leaf01", "eth-spine01", 16, "ethernet"), ("ib-leaf01", "ib-spine01", 8, "compute"),
                         ("ib-leaf02", "ib-spine02", 8, "compute")],
                  cut_hosts={"ceph05": "osd", "ceph06": "osd", "gpu003": "gpu:gpu003"},
                  host_daemons={"ceph05": ["osd.7"], "ceph06": ["osd.8"], "gpu003": ["gpu003"]})
LOOPBACK = Inventory(daemons=DAEMONS, osds=list(range(15)), oss=["oss01", "oss02"],
                     xid_servers=["gpu001", "gpu002", "gpu003"])


def test_the_same_seed_gives_the_same_plan_and_another_seed_another() -> None:
    a, b = schedule.plan(7, 600, NETNS), schedule.plan(7, 600, NETNS)
    assert a == b and schedule.digest(a) == schedule.digest(b)
    assert schedule.digest(schedule.plan(8, 600, NETNS)) != schedule.digest(a)


@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize("minutes", [2, 10])
def test_every_fault_is_cleared_before_the_recovery_quarter(seed: int, minutes: int) -> None:
    duration = minutes * 60
    faults = schedule.plan(seed, duration, NETNS)
    assert len(faults) >= minutes * 4   # a fault every 3..8 s over three quarters of the run
    for f in faults:
        assert 0 < f.at < f.clear_at <= schedule.clear_by(duration), f
    evs = schedule.events(faults)
    assert sorted(e[0] for e in evs) == [e[0] for e in evs]
    for f in faults:
        mine = [action for _, action, g in evs if g is f]
        assert mine == ["inject", "clear"], f


@pytest.mark.parametrize("seed", range(20))
def test_no_domain_is_ever_over_its_capacity(seed: int) -> None:
    faults = schedule.plan(seed, 600, NETNS)
    for f in faults:   # at each injection, what else in its domain is still active
        active = [g for g in faults if g.domain == f.domain and g.at <= f.at < g.clear_at]
        assert len(active) <= CAPACITY.get(f.domain, 1), (f, active)
    for f in faults:   # nothing held by two active faults: no OSD stopped on a host that is cut off
        held = [g for g in faults if g is not f and g.at <= f.at < g.clear_at
                and schedule.resources(g.kind, g.target) & schedule.resources(f.kind, f.target)]
        assert not held, (f, held)


def test_every_kind_is_planned_and_targets_come_from_the_inventory() -> None:
    faults = [f for seed in range(5) for f in schedule.plan(seed, 600, NETNS)]
    assert {f.kind for f in faults} == set(schedule.KINDS)
    indexes = {f.target["index"] is None for f in faults if f.kind == "link-down"}
    assert indexes == {True, False}
    for f in faults:
        t = f.target
        if f.kind == "kill":
            assert t["name"] in DAEMONS and t["daemon_kind"] == DAEMONS[t["name"]]
        elif f.kind == "xid":
            assert t["server"] in NETNS.xid_servers and 0 <= t["gpu"] < 8 and t["xid"] in schedule.XIDS
        elif f.kind == "link-down":
            cables = {(a, b): n for a, b, n, _ in NETNS.links}
            if t["index"] is None:   # a whole link: only on the compute fabric (it has a second spine)
                assert t["fabric"] == "compute"
            else:
                assert 0 <= t["index"] < cables[(t["a"], t["b"])]
        elif f.kind == "cut":
            assert f.domain == NETNS.cut_hosts[t["host"]] and t["daemons"] == NETNS.host_daemons[t["host"]]


def test_without_namespaces_no_link_or_host_fault_is_planned() -> None:
    kinds = {f.kind for seed in range(5) for f in schedule.plan(seed, 600, LOOPBACK)}
    assert "link-down" not in kinds and "cut" not in kinds and "osd-stop" in kinds


def test_events_clear_before_injecting_at_the_same_instant() -> None:
    a = PlannedFault("f001", 1.0, 5.0, "osd-stop", {"osd": 1}, "osd")
    b = PlannedFault("f002", 5.0, 9.0, "osd-stop", {"osd": 2}, "osd")
    assert [(t, act, f.id) for t, act, f in schedule.events([b, a])] == [
        (1.0, "inject", "f001"), (5.0, "clear", "f001"), (5.0, "inject", "f002"), (9.0, "clear", "f002")]


def test_an_empty_inventory_plans_nothing() -> None:
    assert schedule.plan(1, 600, Inventory(daemons={})) == []


def test_an_inventory_read_back_from_a_report_gives_the_same_plan() -> None:
    import dataclasses
    import json

    doc = json.loads(json.dumps(dataclasses.asdict(NETNS)))
    assert schedule.digest(schedule.plan(3, 120, schedule.inventory_from_json(doc))) == \
        schedule.digest(schedule.plan(3, 120, NETNS))
