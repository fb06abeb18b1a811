"""`twin up --ceph --storage-timing model|fast` reaches every OSD daemon and changes what it does:
under `model` (the default) chunk I/O waits out the device model (services/ceph/osd/device.py), under
`fast` it does not, unless a slow-disk fault asks for it. Asserted through each OSD's own counters
(Stat: storage_timing, ops, device_wait_seconds), not through wall-clock times. A bad value is refused
before anything starts."""

from __future__ import annotations

import pytest

from clustertwin.v1 import ceph_pb2 as pb
from emulator import lifecycle
from emulator.errors import TwinRpcError, UserError
from emulator.rundir import RunDir
from services.ceph.sdk import CephAdmin
from tests.ceph import helpers

DATA = "default.rgw.buckets.data"


def _stats(admin: CephAdmin) -> list[pb.CephOsdStat]:
    osds = sorted(admin.osds)
    return [admin.osd(o, "Stat", pb.CephOsdStatRequest()).stat for o in osds]


def _write(admin: CephAdmin, name: str) -> None:
    """One EC 8+3 object through the monitor: 11 chunk writes, each to its OSD daemon. A PG that is not
    active refuses it at once; the write waits for the PG, as a RADOS client's op does (at --clock-scale
    50 the heartbeat grace is 0.4 s of wall time, which a loaded machine's stall can outlast, marking
    OSDs down until their next beat)."""
    def put() -> bool:
        try:
            admin.call("PutObject", pb.CephMonPutObjectRequest(pool=DATA, name=name, data=b"t" * 100_000))
        except TwinRpcError as e:
            if "blocks until the PG is active" not in str(e):
                raise
            return False
        return True

    helpers.wait_for(f"the write of {name} (its PG active)", put, timeout=30)


@pytest.mark.parametrize("timing", ["model", "fast"])
def test_the_option_reaches_the_osds_and_sets_their_device_waits(tmp_path_factory: pytest.TempPathFactory,
                                                                 timing: str) -> None:
    up = {} if timing == "model" else {"storage_timing": timing}   # model is the default
    with helpers.ceph_twin(tmp_path_factory, f"timing-{timing}", **up) as admin:
        before = {s.osd: s for s in _stats(admin)}
        assert {s.storage_timing for s in before.values()} == {timing}
        for i in range(4):
            _write(admin, f"t{i}")
        after = {s.osd: s for s in _stats(admin)}
        busy = [o for o in after if after[o].ops > before[o].ops]
        assert len(busy) >= 11   # every chunk of each EC 8+3 write on its own OSD daemon
        waited = sum(after[o].device_wait_seconds - before[o].device_wait_seconds for o in busy)
        if timing == "model":
            assert all(after[o].device_wait_seconds > before[o].device_wait_seconds for o in busy)
        else:
            assert waited == 0.0
            # A slow-disk fault is still honoured under fast: that OSD waits, the others do not.
            slow = busy[0]
            helpers.osd_fault(admin, slow, slow_factor=2.0)
            for i in range(4, 30):
                _write(admin, f"t{i}")
            again = {s.osd: s for s in _stats(admin)}
            assert again[slow].device_wait_seconds > 0.0
            assert all(again[o].device_wait_seconds == 0.0 for o in again if o != slow)


def test_a_bad_storage_timing_is_refused_before_anything_starts(tmp_path_factory: pytest.TempPathFactory) -> None:
    run = RunDir(tmp_path_factory.mktemp("timing-bad"))
    with pytest.raises(UserError, match="--storage-timing 'slow': Input should be 'model' or 'fast'"):
        lifecycle.up("mini", run, ceph=True, storage_timing="slow", timeout=30)
    with pytest.raises(UserError, match="--storage-timing needs --ceph"):
        lifecycle.up("mini", run, storage_timing="fast", timeout=30)
    assert not run.manifest.exists()
