"""Clock-change events (nvmlEventTypeClock) through the built libnvidia-ml.so.1 and unchanged pynvml,
against a loopback mini twin's gpu001: a GPU going busy, its application clocks set, the GPU going
idle, each an event for the sets registered on that GPU, with the clock the GPU then reports; a
change on another GPU is not delivered. P-state events are not offered (the twin's H100 stays in P0)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from emulator.client import Twin
from tests.nvml.conftest import http_address, nvml_env, run_pynvml
from tests.waiting import wait_for

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="setting application clocks needs root (as the driver's)")

WATCH = """
import ctypes
n.nvmlInit()
h = n.nvmlDeviceGetHandleByIndex(0)
es = n.nvmlEventSetCreate()
out = {"supported": n.nvmlDeviceGetSupportedEventTypes(h)}
try:
    n.nvmlDeviceRegisterEvents(h, n.nvmlEventTypePState, es)
    out["pstate"] = 0
except n.NVMLError as e:
    out["pstate"] = e.value
n.nvmlDeviceRegisterEvents(h, n.nvmlEventTypeClock, es)
address = lambda p: ctypes.cast(p, ctypes.c_void_p).value
out["events"] = []
open(FLAG, "w").close()   # the test changes the clocks once this exists, one step per event
for _ in range(3):
    d = n.nvmlEventSetWait(es, 30000)
    out["events"].append([d.eventType, d.eventData, address(d.device) == address(h),
                          n.nvmlDeviceGetClockInfo(h, n.NVML_CLOCK_SM)])
    with open(FLAG, "a") as f:
        f.write("event\\n")
try:
    n.nvmlEventSetWait(es, 1000)
    out["more"] = 0
except n.NVMLError as e:
    out["more"] = e.value
"""

APP_CLOCKS = """
n.nvmlInit()
h = n.nvmlDeviceGetHandleByIndex(0)
if MHZ:
    n.nvmlDeviceSetApplicationsClocks(h, 2619, MHZ)
else:
    n.nvmlDeviceResetApplicationsClocks(h)
"""


def test_clock_changes_are_events(mini_twin: Twin, nvml_lib: str, tmp_path: Path) -> None:
    node = mini_twin.gpu_node("gpu001")
    env = nvml_env(nvml_lib, http_address(mini_twin, "gpu001"))
    flag = tmp_path / "events"
    script = f"import json, pynvml as n\nFLAG = {str(flag)!r}\n" + WATCH + "\nprint(json.dumps(out))\n"
    proc = subprocess.Popen([sys.executable, "-c", script], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)

    def delivered(count: int) -> None:
        def seen() -> bool:
            assert proc.poll() is None, proc.communicate()[1]   # the client died: say why
            return flag.read_text().count("event") >= count
        wait_for(f"event {count} delivered", seen, timeout=30)

    other = None
    try:
        wait_for("the NVML client to wait on its event set", flag.exists, timeout=30)
        other = node.lease("nvml-clocks-other", gpus=[1], utilization=90)   # GPU 1: not registered
        lease = node.lease("nvml-clocks", gpus=[0], utilization=80)          # busy: 345 -> 1980 MHz
        delivered(1)
        run_pynvml("MHZ = 1410\n" + APP_CLOCKS, env)                         # 1980 -> 1410 MHz
        delivered(2)
        node.release(lease.id)                                               # idle: 1410 -> 345 MHz
        delivered(3)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        proc.kill()
        if other is not None:
            node.release(other.id)
        run_pynvml("MHZ = 0\n" + APP_CLOCKS, env)
    assert proc.returncode == 0, stderr
    out = json.loads(stdout.splitlines()[-1])
    # ECC SBE/DBE, Xid, clock, MIG configuration: each delivered; no P-state
    assert out["supported"] == 0x11B and out["pstate"] == 3   # NOT_SUPPORTED
    assert out["events"] == [[0x10, 0, True, 1980], [0x10, 0, True, 1410], [0x10, 0, True, 345]]
    assert out["more"] == 10   # TIMEOUT: GPU 1's changes are not this set's
