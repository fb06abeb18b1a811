"""`twin up --fabric`: the fabric manager as one of the twin's daemons, found through the manifest."""

from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
import time
import urllib.request
from pathlib import Path

import grpc
import pytest

from clustertwin.v1 import fabric_pb2 as pb
from clustertwin.v1 import fabric_pb2_grpc as pb_grpc
from emulator.client import Twin
from emulator.manifest import DaemonEntry
from services.fabric.manifest import FabricEntry
from tests.conftest import assert_nothing_left, twin_pids
from tests.fabric.conftest import REASON

pytestmark = pytest.mark.skipif(bool(REASON), reason=REASON or "ok")


def ufm_get(entry: DaemonEntry, path: str) -> object:
    ufm = entry.typed(FabricEntry)
    token = base64.b64encode(f"{ufm.ufm_user}:{ufm.ufm_password}".encode()).decode()
    req = urllib.request.Request(ufm.ufm + path, headers={"Authorization": f"Basic {token}"})
    with urllib.request.urlopen(req, timeout=10) as reply:
        return json.loads(reply.read())


def ib_processes(run_dir: Path) -> list[str]:
    out = subprocess.run(["pgrep", "-a", "-f", "ibsim|opensm"], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if str(run_dir) in line]


def test_fabric_manager_runs_in_the_twin_and_survives_kill(tmp_path: Path) -> None:
    with Twin.up("mini", run_dir=tmp_path / "fab", fabric=True, timeout=60) as twin:
        pids = twin_pids(twin.run)
        (entry,) = twin.daemons("fabric")
        ports = ufm_get(entry, "/resources/ports?sys_type=Computer")
        assert len(ports) == 16 and {p["logical_state"] for p in ports} == {"Active"}
        with grpc.insecure_channel(entry.grpc) as channel:
            listed = pb_grpc.FabricStub(channel).ListPorts(pb.FabricListPortsRequest(computer_only=True), timeout=10)
        assert {p.lid for p in listed.ports} == {p["lid"] for p in ports}

        # An operator's change outlives the process: a port disabled before the kill is still
        # disabled (in ibsim, so OpenSM routes around it) after the restart.
        victim = next(p for p in ports if p["node_description"] == "gpu002 mlx5_3")
        with grpc.insecure_channel(entry.grpc) as channel:
            pb_grpc.FabricStub(channel).SetPortState(pb.FabricSetPortStateRequest(system=victim["name"], enabled=False),
                                                     timeout=30)

        # kill -9: the supervisor restarts it, its ibsim and OpenSM go with the old process.
        old = json.loads(twin.run.daemons.read_text())["daemons"]["fabric"]["pid"]
        os.kill(old, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            status = {d["name"]: d for d in twin.status()["daemons"]}["fabric"]
            if status["restarts"] >= 1 and status["health"] == "SERVING":
                break
            time.sleep(0.2)
        else:
            pytest.fail("the fabric manager did not come back after kill -9")
        after = {p["node_description"]: p for p in ufm_get(entry, "/resources/ports?sys_type=Computer")}
        assert len(after) == 16 and after["gpu002 mlx5_3"]["disabled"]
        assert after["gpu002 mlx5_3"]["logical_state"] != "Active"
        assert after["gpu002 mlx5_2"]["logical_state"] == "Active"
        assert [a["object_name"] for a in ufm_get(entry, "/app/alarms")] == [victim["name"]]
        assert len([p for p in ib_processes(twin.run.path) if "ibsim " in p]) == 1, ib_processes(twin.run.path)
        pids += twin_pids(twin.run)
    assert_nothing_left(twin.run, pids)
    assert not ib_processes(twin.run.path)
