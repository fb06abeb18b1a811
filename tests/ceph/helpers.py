"""What the Ceph twin tests share: a module's `twin up mini --ceph` (down and checked at the end), waits
on the cluster's state, and the OSD daemons' own fault call."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator
from typing import Any

import pytest

from clustertwin.v1 import ceph_pb2 as pb
from emulator import lifecycle
from emulator.rundir import RunDir
from services.ceph.sdk import CephAdmin
from tests import waiting
from tests.conftest import stopped_at_exit

SCALE = 50.0   # Ceph's 6 s heartbeat, 20 s grace and 600 s down→out take 0.12 s, 0.4 s and 12 s

# Ceph's states at SCALE pass quickly: look often, and fail sooner than the slower subsystems' tests do.
wait_for = functools.partial(waiting.wait_for, timeout=30.0, every=0.05)


def all_clean(admin: CephAdmin) -> bool:
    st = admin.call("Status", pb.CephMonStatusRequest())
    return dict(st.pg_states) == {"active+clean": sum(st.pg_states.values())} and st.osds_up == st.osds


def pg_state(admin: CephAdmin, pgid: str) -> str:
    return admin.call("Pgs", pb.CephMonPgsRequest(pg=pgid)).pgs[0].state


def osd_fault(admin: CephAdmin, osd: int, **kw: Any) -> pb.CephOsdStat:
    return admin.osd(osd, "SetFault", pb.CephOsdSetFaultRequest(**kw)).stat


@contextlib.contextmanager
def ceph_twin(tmp_path_factory: pytest.TempPathFactory, name: str, clean: bool = True,
              **up: Any) -> Iterator[CephAdmin]:
    """`twin up mini --ceph` at --clock-scale 50 in a fresh run directory (`up`: more of lifecycle.up's
    options), active+clean first unless `clean` is False; downed at the end with nothing left."""
    run = RunDir(tmp_path_factory.mktemp(name))
    lifecycle.up("mini", run, ceph=True, clock_scale=SCALE, telemetry_interval=1.0, timeout=60, **up)
    with stopped_at_exit(run, lambda: lifecycle.down(run)):
        admin = CephAdmin(run.path)
        if clean:
            wait_for("active+clean", lambda: all_clean(admin), timeout=30)
        yield admin
