"""The monitor's model and store without daemons: what one monitor commits, a new one built from the
same topology reads back (the OSD map, PG peering, object CRCs, users, the fault log), from tables."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import inspect

from services.ceph.errors import CephError
from services.ceph.mon.model import Fault, MonModel
from services.ceph.mon.store import MonStore
from tests.unit.ceph.helpers import ec_cluster

DATA = "default.rgw.buckets.data"


def test_a_new_monitor_reads_back_what_the_old_one_committed(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'mon.db'}"
    cluster, chunks = ec_cluster()
    store = MonStore(url)
    model = MonModel(cluster, cluster.crush.osds, now=0.0)
    pgid = cluster.put(DATA, "obj", b"x" * 10_000)
    store.save_object(cluster.pgs[pgid], "obj")
    gone = cluster.pgs[cluster.put(DATA, "gone", b"y" * 100)]
    store.save_object(gone, "gone")
    del gone.objects["gone"]
    store.save_object(gone, "gone")   # a removed object's row goes with it
    assert model.osd_command(4, "out", now=1.0).startswith("marked out osd.4")
    store.save_map(cluster)
    store.save_user(model.user_create("alice", "Alice", access_key="AK", secret_key="SK"))
    store.save_fault(model.record_fault(Fault(id="", kind="slow", osd=3, factor=4.0, effect="slow"), now=2.0))
    epoch = cluster.monitor.epoch
    store.close()

    again, _ = ec_cluster()
    again.store = chunks
    store = MonStore(url)
    assert store.load(again)
    model = MonModel(again, again.crush.osds, now=3.0, faults=store.faults(), users=store.users())
    assert again.monitor.epoch == epoch and not again.crush.osds[4].in_
    assert again.pgs[pgid].objects["obj"] == cluster.pgs[pgid].objects["obj"]
    assert again.get(DATA, "obj") == b"x" * 10_000
    assert "gone" not in again.pgs[gone.pgid].objects
    assert [(f.id, f.kind, f.active) for f in model.list_faults(False)] == [("osd.3-1", "slow", True)]
    assert [u.uid for u in model.list_users()] == ["alice"]
    assert {"ceph_mon_osdmap", "ceph_mon_osds", "ceph_mon_pgs", "ceph_mon_objects", "ceph_mon_users",
            "ceph_mon_faults"} <= set(inspect(store.engine).get_table_names())
    store.close()


def test_fault_log_round_trip_queues_its_events() -> None:
    cluster, _ = ec_cluster()
    model = MonModel(cluster, cluster.crush.osds, now=0.0)
    f = model.record_fault(Fault(id="", kind="stop", osd=2, effect="stopped"), now=5.0)
    assert f.id == "osd.2-1" and f.active
    with pytest.raises(CephError) as e:
        model.record_fault(Fault(id="", kind="melt", osd=2), now=5.0)
    assert e.value.code == "INVALID_ARGUMENT" and len(model.faults) == 1
    assert model.clear_fault(f.id, now=6.0).cleared_at == 6.0
    with pytest.raises(CephError) as e:
        model.clear_fault(f.id, now=7.0)
    assert e.value.code == "FAILED_PRECONDITION"
    events = model.take_events()
    assert [(ev.kind, ev.fault["active"]) for ev in events if ev.fault] == [("fault", True), ("fault_clear", False)]
    assert events[0].fault["target"] == "osd.2" and events[1].fault["cleared_at"] == 6.0
    # a mark-down is over by itself (the OSD's next heartbeat marks it up): logged cleared at once
    assert not model.record_fault(Fault(id="", kind="down", osd=1), now=8.0).active
