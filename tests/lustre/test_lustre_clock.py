"""Under `twin up --clock-scale`, Lustre's events carry the twin clock, as every service's events do, so
their times agree with the GPU servers' and Ceph's. The times of files that stat shows through the FUSE
client stay the machine's real time: programs compare them with the time they read themselves."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator

import pytest

from tests.lustre.conftest import LustreMount, lustre_mount, needs_fuse
from tests.lustre.test_lustre_events import Events

pytestmark = needs_fuse

SCALE = 3600   # one twin hour per wall second


@pytest.fixture(scope="module")
def scaled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LustreMount]:
    yield from lustre_mount(tmp_path_factory.mktemp("lustre-clock"), "rack", "--clock-scale", str(SCALE))


def test_events_carry_the_twin_clock_and_files_the_real_time(scaled: LustreMount) -> None:
    clock = scaled.manifest.clock.to_clock()
    assert clock.scale == SCALE
    events = Events(scaled.manifest)
    try:
        twin_before, wall_before = clock.now(), time.time()
        (scaled.mnt / "written").write_bytes(b"x" * 1000)
        scaled.cli("lustre", "fault", "ost-full", "1")            # the MDS sees it
        full = events.wait("ost_full", ost=1)
        scaled.cli("lustre", "fault", "oss-kill", "oss01")        # the OSS says so itself
        try:
            down = events.wait("oss_down", oss="oss01")
        finally:
            scaled.cli("lustre", "fault", "oss-start", "oss01")
            scaled.cli("lustre", "fault", "ost-clear", "1")
        twin_after, wall_after = clock.now(), time.time()
        events.wait("oss_failback", to="oss01")
    finally:
        events.close()
    # The two clocks are hours apart here (the twin took seconds to start), so each check can fail.
    assert twin_before > wall_after + 600
    assert twin_before <= full["time"] <= twin_after, full
    assert twin_before <= down["time"] <= twin_after, down
    st = os.stat(scaled.mnt / "written")
    for t in (st.st_mtime, st.st_ctime):
        assert int(wall_before) <= t <= wall_after + 1, (t, wall_before, wall_after)
