"""ibsim or OpenSM killed -9 under a running fabric manager: it restarts them (emulator.process.Backoff)
and the fabric comes back as the operator left it, without the daemon restarting."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import grpc
import pytest

from clustertwin.v1 import fabric_pb2 as pb
from emulator.process import Backoff
from tests.fabric.conftest import REASON, FabricUnderTest, _children, fabric_config, start_fabric, stop_fabric

RECOVERY_TIMEOUT_S = 60.0   # a bound on a hang, not a performance threshold


def test_backoff_restarts_at_once_after_a_long_run_and_gives_up_on_a_crash_loop() -> None:
    b = Backoff(window=10.0, limit=3, first=0.2)
    assert [b.delay(1.0), b.delay(1.0), b.delay(1.0)] == [0.2, 0.4, 0.8]
    assert b.delay(1.0) is None
    assert b.delay(60.0) == 0.0 and b.delay(1.0) == 0.2   # a long run forgives the quick deaths


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def _child(t: FabricUnderTest, comm: str) -> int:
    (pid,) = [p for p in _children(t.proc.pid) if _comm(p) == comm]
    return pid


def _recovered(t: FabricUnderTest, comm: str, old: int) -> int:
    """Wait until the daemon runs a new `comm` and serves a fabric read back from it; its pid."""
    deadline = time.monotonic() + RECOVERY_TIMEOUT_S
    while time.monotonic() < deadline:
        assert t.proc.poll() is None, t.log.read_text()[-2000:]
        new = [p for p in _children(t.proc.pid) if _comm(p) == comm and p != old]
        try:
            health = t.stub.GetHealth(pb.FabricGetHealthRequest(), timeout=5)
        except grpc.RpcError:
            health = None
        if new and health is not None and health.sm_state == "MASTER" and "restarted" in t.log.read_text():
            return new[0]
        time.sleep(0.1)
    pytest.fail(f"{comm} was not restarted: {t.log.read_text()[-2000:]}")


@pytest.mark.skipif(bool(REASON), reason=REASON or "n/a")
@pytest.mark.parametrize("victim", ["opensm", "ibsim"])
def test_a_killed_subnet_process_is_restarted_with_the_fabric_as_left(tmp_path: Path, victim: str) -> None:
    t = start_fabric(fabric_config(tmp_path))
    try:
        down = t.stub.SetPortState(pb.FabricSetPortStateRequest(system="gpu002 mlx5_3", port=1, enabled=False),
                                   timeout=30)
        old = _child(t, victim)
        os.kill(old, signal.SIGKILL)
        _recovered(t, victim, old)
        port = t.stub.ListPorts(pb.FabricListPortsRequest(system="gpu002 mlx5_3")).ports[0]
        assert port.disabled and port.logical_state == "Down", port
        ports = t.stub.ListPorts(pb.FabricListPortsRequest(computer_only=True)).ports
        assert sum(p.logical_state == "Active" for p in ports) == len(ports) - 1
        assert [a.object_name for a in t.stub.ListAlarms(pb.FabricListAlarmsRequest()).alarms] == [down.port.name]
        # The restarted subnet takes changes: the cable comes back up through the new ibsim/OpenSM.
        up = t.stub.SetPortState(pb.FabricSetPortStateRequest(system="gpu002 mlx5_3", port=1, enabled=True), timeout=30)
        assert up.changed and up.port.logical_state == "Active"
        route = t.stub.GetRoute(pb.FabricGetRouteRequest(src=pb.FabricEndpoint(node="gpu002 mlx5_3"),
                                                         dst=pb.FabricEndpoint(server="gpu003", rail=3)))
        assert route.hops
        running = sorted(c for c in map(_comm, _children(t.proc.pid)) if c in ("ibsim", "opensm"))
        assert running == ["ibsim", "opensm"]   # nothing doubled (diags of a read-back may run beside them)
    finally:
        assert stop_fabric(t) == 0
