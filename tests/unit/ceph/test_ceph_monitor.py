"""Monitor timing: 20 s grace (after the last 6 s heartbeat), 600 s down→out, epochs, auto in."""

from __future__ import annotations

from services.ceph.monitor import Monitor
from tests.unit.ceph.helpers import crush_map


def test_killed_osd_is_marked_down_after_grace_then_out_after_600s() -> None:
    mon = Monitor(crush_map(12))
    e0 = mon.epoch
    mon.osd_stopped(3, now=100.0)  # last heartbeat at 96 (every 6 s since 0)
    assert mon.tick(115.9) == [] and mon.crush.osds[3].up
    (down,) = mon.tick(116.0)
    assert (down.osd, down.what, down.epoch) == (3, "down", e0 + 1)
    assert mon.crush.osds[3].in_
    assert mon.next_deadline(116.0) == 716.0
    assert mon.tick(715.0) == []
    (out,) = mon.tick(716.0)
    assert out.what == "out" and not mon.crush.osds[3].in_ and mon.epoch == e0 + 2
    # it boots: up, and in again since the monitor (not an operator) marked it out
    changes = mon.osd_started(3, now=800.0)
    assert [c.what for c in changes] == ["up", "in"] and mon.epoch == e0 + 3


def test_clean_stop_is_down_at_once_and_noout_holds() -> None:
    mon = Monitor(crush_map(12))
    mon.set_flag("noout")
    assert [c.what for c in mon.osd_stopped(1, now=10.0, clean=True)] == ["down"]
    assert mon.tick(10_000.0) == [] and mon.crush.osds[1].in_


def test_operator_out_stays_out_after_boot() -> None:
    mon = Monitor(crush_map(12))
    mon.mark_out(2, now=5.0)
    mon.osd_stopped(2, now=6.0, clean=True)
    mon.osd_started(2, now=7.0)
    assert mon.crush.osds[2].up and not mon.crush.osds[2].in_
