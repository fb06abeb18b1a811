"""NVML's set calls (nvidia-smi -pl / -pm / -e) through the built libnvidia-ml.so.1 and unchanged pynvml,
against a loopback mini twin: root changes what every later reader sees (pynvml in another process,
the daemon's gRPC API, the thermal model); a caller without root gets NO_PERMISSION, a value outside
the constraints INVALID_ARGUMENT, and neither changes anything."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from emulator.client import Twin
from tests.nvml.conftest import http_address, nvml_env, run_pynvml

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the set calls succeed only for root (as the driver's)")

COMMON = """
import os
n.nvmlInit()
h = n.nvmlDeviceGetHandleByIndex(GPU)
def state():
    fields = n.nvmlDeviceGetFieldValues(h, [n.NVML_FI_DEV_ECC_CURRENT, n.NVML_FI_DEV_ECC_PENDING,
                                            (n.NVML_FI_DEV_POWER_CURRENT_LIMIT, 0)])
    return {"limit": n.nvmlDeviceGetPowerManagementLimit(h), "enforced": n.nvmlDeviceGetEnforcedPowerLimit(h),
            "persistence": n.nvmlDeviceGetPersistenceMode(h), "ecc": n.nvmlDeviceGetEccMode(h),
            "fields": [f.value.uiVal for f in fields]}
"""

SET = COMMON + """
out = {"defaults": [n.nvmlDeviceGetPowerManagementDefaultLimit(h),
                    list(n.nvmlDeviceGetPowerManagementLimitConstraints(h))],
       "before": state()}
os.seteuid(65534)   # not root: the driver refuses, nothing changes
out["not_root"] = [err(lambda: n.nvmlDeviceSetPowerManagementLimit(h, 450000)),
                   err(lambda: n.nvmlDeviceSetPersistenceMode(h, 0)), err(lambda: n.nvmlDeviceSetEccMode(h, 0))]
os.seteuid(0)
out["unchanged"] = state()
out["bad"] = [err(lambda: n.nvmlDeviceSetPowerManagementLimit(h, 150000)),
              err(lambda: n.nvmlDeviceSetPowerManagementLimit(h, 800000)),
              err(lambda: n.nvmlDeviceSetPersistenceMode(h, 2)), err(lambda: n.nvmlDeviceSetEccMode(h, 7))]
out["still"] = state()
n.nvmlDeviceSetPowerManagementLimit(h, 450000)
n.nvmlDeviceSetPersistenceMode(h, 0)
n.nvmlDeviceSetEccMode(h, 0)
out["after"] = state()
"""

READ = COMMON + "out = state()\n"

MIG = COMMON + """
m = n.nvmlDeviceGetMigDeviceHandleByIndex(h, 0)
out = [err(lambda: n.nvmlDeviceSetPowerManagementLimit(m, 450000)), err(lambda: n.nvmlDeviceSetPersistenceMode(m, 0))]
"""


def test_root_sets_power_persistence_and_ecc_mode(mini_twin: Twin, nvml_lib: str) -> None:
    node = mini_twin.gpu_node("gpu001")
    env = nvml_env(nvml_lib, http_address(mini_twin, "gpu001"))
    out = run_pynvml("GPU = 2\n" + SET, env)
    default = {"limit": 700_000, "enforced": 700_000, "persistence": 1, "ecc": [1, 1], "fields": [1, 1, 700_000]}
    assert out["defaults"] == [700_000, [200_000, 700_000]]
    assert out["before"] == out["unchanged"] == out["still"] == default
    assert out["not_root"] == [4, 4, 4]          # NVML_ERROR_NO_PERMISSION
    assert out["bad"] == [2, 2, 2, 2]             # NVML_ERROR_INVALID_ARGUMENT: outside the constraints
    # the ECC mode is pending until a reset
    changed = {"limit": 450_000, "enforced": 450_000, "persistence": 0, "ecc": [1, 0], "fields": [1, 0, 450_000]}
    assert out["after"] == changed
    assert run_pynvml("GPU = 2\n" + READ, env) == changed   # another process sees the daemon's state
    g2 = node.gpu(2)
    assert (g2.power_limit_w, g2.persistence_mode) == (450.0, False)
    assert node.gpu(1).power_limit_w == 700.0   # only the GPU it was set on
    node.reset_gpu(2)
    assert run_pynvml("GPU = 2\n" + READ, env)["ecc"] == [0, 0]
    assert run_pynvml("GPU = 0\n" + MIG, nvml_env(nvml_lib, http_address(mini_twin, "gpu002"))) == [3, 3]


POWER = COMMON + "n.nvmlDeviceSetPowerManagementLimit(h, LIMIT)\nout = state()['limit']\n"


def test_the_power_limit_caps_what_a_busy_gpu_draws(mini_twin: Twin, nvml_lib: str) -> None:
    from tests.waiting import wait_for

    node = mini_twin.gpu_node("gpu001")
    env = nvml_env(nvml_lib, http_address(mini_twin, "gpu001"))
    lease = node.lease("nvml-power", gpus=[5])
    try:
        node.report_load(lease.id, 100)
        wait_for("GPU 5 to draw more than 400 W", lambda: node.gpu(5).power_w > 400, timeout=30)
        assert run_pynvml("GPU = 5\nLIMIT = 300000\n" + POWER, env) == 300_000
        wait_for("GPU 5 to settle under its 300 W limit", lambda: 280 < node.gpu(5).power_w <= 300.001, timeout=30)
    finally:
        node.release(lease.id)
        run_pynvml("GPU = 5\nLIMIT = 700000\n" + POWER, env)


CLOCKS = COMMON + """
G, M = n.NVML_CLOCK_GRAPHICS, n.NVML_CLOCK_MEM
def app():
    return [n.nvmlDeviceGetApplicationsClock(h, G), n.nvmlDeviceGetApplicationsClock(h, M),
            n.nvmlDeviceGetClockInfo(h, n.NVML_CLOCK_SM), n.nvmlDeviceGetCurrentClocksEventReasons(h) & 0x2]
graphics = n.nvmlDeviceGetSupportedGraphicsClocks(h, 2619)
out = {"memory": n.nvmlDeviceGetSupportedMemoryClocks(h), "graphics": [len(graphics), graphics[0], graphics[-1]],
       "no_such_memory": err(lambda: n.nvmlDeviceGetSupportedGraphicsClocks(h, 1000)),
       "default": [n.nvmlDeviceGetDefaultApplicationsClock(h, G), n.nvmlDeviceGetDefaultApplicationsClock(h, M)],
       "before": app()}
os.seteuid(65534)
out["not_root"] = [err(lambda: n.nvmlDeviceSetApplicationsClocks(h, 2619, 1410)),
                   err(lambda: n.nvmlDeviceResetApplicationsClocks(h))]
os.seteuid(0)
out["bad"] = [err(lambda: n.nvmlDeviceSetApplicationsClocks(h, 2619, 1981)),
              err(lambda: n.nvmlDeviceSetApplicationsClocks(h, 1000, 1410))]
out["unchanged"] = app()
n.nvmlDeviceSetApplicationsClocks(h, 2619, 1410)
out["set"] = app()
n.nvmlDeviceResetApplicationsClocks(h)
out["reset"] = app()
"""


def test_application_clocks_are_what_a_busy_gpu_runs_at(mini_twin: Twin, nvml_lib: str) -> None:
    node = mini_twin.gpu_node("gpu001")
    lease = node.lease("nvml-clocks", gpus=[6])
    try:
        node.report_load(lease.id, 80)
        out = run_pynvml("GPU = 6\n" + CLOCKS, nvml_env(nvml_lib, http_address(mini_twin, "gpu001")))
        busy_clock = node.gpu(6).sm_clock_mhz   # after the reset: the daemon's state too
    finally:
        node.release(lease.id)
    # the H100 80GB HBM3's supported clocks: memory 2619 or 1593, graphics 1980 down to 345 in 15 MHz steps
    assert out["memory"] == [2619, 1593] and out["graphics"] == [110, 1980, 345]
    assert out["no_such_memory"] == 6 and out["default"] == [1980, 2619]   # NOT_FOUND
    busy_at_max = [1980, 2619, 1980, 0]
    assert out["before"] == out["unchanged"] == out["reset"] == busy_at_max
    assert out["not_root"] == [4, 4] and out["bad"] == [2, 2]
    assert out["set"] == [1410, 2619, 1410, 0x2]   # clock-event reason ApplicationsClocksSetting
    assert busy_clock == 1980


SETTLE = COMMON + """
n.nvmlDeviceSetPowerManagementLimit(h, 550000)
n.nvmlDeviceSetApplicationsClocks(h, 1593, 1200)
out = state() | {"clocks": [n.nvmlDeviceGetApplicationsClock(h, n.NVML_CLOCK_GRAPHICS),
                            n.nvmlDeviceGetApplicationsClock(h, n.NVML_CLOCK_MEM)]}
"""
READ_ALL = COMMON + """
out = state() | {"clocks": [n.nvmlDeviceGetApplicationsClock(h, n.NVML_CLOCK_GRAPHICS),
                            n.nvmlDeviceGetApplicationsClock(h, n.NVML_CLOCK_MEM)]}
"""


def test_settings_survive_the_daemon_being_killed(mini_twin: Twin, nvml_lib: str) -> None:
    """Last in the module: SIGKILL gpu001's daemon after a set call; the supervisor restarts it from
    its store and the library reads the same settings (the change was durable before SUCCESS)."""
    import json
    import signal

    from tests.waiting import wait_for

    env = nvml_env(nvml_lib, http_address(mini_twin, "gpu001"))
    before = run_pynvml("GPU = 4\n" + SETTLE, env)
    status = json.loads(mini_twin.run.daemons.read_text())["daemons"]["gpu001"]
    os.kill(status["pid"], signal.SIGKILL)
    wait_for("the supervisor to restart gpu001",   # another module may have killed it before
             lambda: json.loads(mini_twin.run.daemons.read_text())["daemons"]["gpu001"]["restarts"]
             > status["restarts"], timeout=60)
    wait_for("gpu001 healthy again", lambda: any(d["name"] == "gpu001" and d["health"] == "SERVING"
                                                 for d in mini_twin.status()["daemons"]), timeout=60)
    after = run_pynvml("GPU = 4\n" + READ_ALL, nvml_env(nvml_lib, http_address(mini_twin, "gpu001")))
    assert before["limit"] == 550_000 and before["clocks"] == [1200, 1593]
    assert after == before


def _post(address: str, body: str, uid: int) -> str:
    """POST a set call to the daemon as the library would, from a process running as `uid`."""
    code = ("import sys, urllib.request; r = urllib.request.urlopen(urllib.request.Request("
            f"'http://{address}/nvml/set', data=sys.argv[1].encode(), method='POST'), timeout=10); "
            "print(r.read().decode(), end='')")
    cmd = [sys.executable, "-c", code, body]
    if uid:
        cmd = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", *cmd]
    return subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=30).stdout


def test_the_daemon_refuses_a_set_call_from_another_user_that_skips_the_library(mini_twin: Twin) -> None:
    """The driver, not only the library, wants root: a POST from uid 65534 is NO_PERMISSION and
    changes nothing; the same from root is done."""
    node = mini_twin.gpu_node("gpu001")
    address = http_address(mini_twin, "gpu001")
    assert _post(address, "power 3 400000", 65534) == "ret 4\n"
    assert node.gpu(3).power_limit_w == 700.0
    try:
        assert _post(address, "power 3 400000", 0) == "ret 0\n"
        assert node.gpu(3).power_limit_w == 400.0
    finally:
        _post(address, "power 3 700000", 0)
