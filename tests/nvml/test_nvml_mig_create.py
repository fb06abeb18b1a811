"""MIG creation and destruction through the built libnvidia-ml.so.1 and unchanged pynvml (nvidia-smi -mig,
mig -cgi / -dgi / -cci / -dci), against a loopback mini twin's gpu001, GPU 1 (MIG disabled at boot):
the daemon's placement engine decides, so what NVML makes is what the gRPC API (`twin gpu mig`) lists,
the read calls and the MIG event see it, and bad input, a caller without root, a full GPU or an
instance in use change nothing. Each test leaves GPU 1 as it found it."""

from __future__ import annotations

import json
import os
import signal

import pytest

from emulator.client import Twin
from tests.nvml.conftest import ERR, http_address, nvml_env, run_pynvml
from tests.waiting import wait_for

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the MIG calls succeed only for root (as the driver's)")

GPU = 1
P3G, P2G, P1G, P7G = 9, 14, 19, 0          # GPU-instance profile ids (nvidia-smi mig -lgip)
CI_1SLICE, CI_2SLICE, CI_4SLICE = 0, 1, 3   # NVML_COMPUTE_INSTANCE_PROFILE_*

COMMON = f"""
import os
P3G, P2G, P1G, P7G, CI_1SLICE, CI_2SLICE, CI_4SLICE = {P3G}, {P2G}, {P1G}, {P7G}, {CI_1SLICE}, {CI_2SLICE}, {CI_4SLICE}
def as_user(f):
    os.seteuid(65534)
    try:
        return err(f)
    finally:
        os.seteuid(0)
def gplace(start, size):
    return n.byref(n.c_nvmlGpuInstancePlacement_t(start, size))
def cplace(start, size):
    return n.byref(n.c_nvmlComputeInstancePlacement_t(start, size))
def gi_info(gi):
    i = n.nvmlGpuInstanceGetInfo(gi)
    return [i.id, i.profileId, i.placement.start, i.placement.size]
def ci_info(ci):
    i = n.nvmlComputeInstanceGetInfo(ci)
    return [i.id, i.profileId, i.placement.start, i.placement.size, gi_info(i.gpuInstance)[0]]
def free():
    return [n.nvmlDeviceGetGpuInstanceRemainingCapacity(h, p) for p in (P3G, P2G, P1G, P7G)]
n.nvmlInit()
h = n.nvmlDeviceGetHandleByIndex({GPU})
"""

CREATE = COMMON + """
out = {"disabled": [n.nvmlDeviceGetMigMode(h), err(lambda: n.nvmlDeviceCreateGpuInstance(h, P1G))]}
out["mode_not_root"] = as_user(lambda: n.nvmlDeviceSetMigMode(h, 1))
out["mode_bad"] = err(lambda: n.nvmlDeviceSetMigMode(h, 2))
out["still_disabled"] = n.nvmlDeviceGetMigMode(h)
out["activation"] = n.nvmlDeviceSetMigMode(h, 1)          # idle: the driver resets it, active at once
out["mode"] = n.nvmlDeviceGetMigMode(h)
es = n.nvmlEventSetCreate()
n.nvmlDeviceRegisterEvents(h, n.nvmlEventMigConfigChange, es)
out["gi_refused"] = [as_user(lambda: n.nvmlDeviceCreateGpuInstance(h, P3G)),
                     err(lambda: n.nvmlDeviceCreateGpuInstance(h, 3)),                       # no profile has id 3
                     err(lambda: n.nvmlDeviceCreateGpuInstanceWithPlacement(h, P3G, gplace(2, 4))),  # not a 3g start
                     err(lambda: n.nvmlDeviceCreateGpuInstanceWithPlacement(h, P3G, gplace(4, 2)))]  # not its size
out["free_empty"] = free()
gi = n.nvmlDeviceCreateGpuInstanceWithPlacement(h, P3G, gplace(4, 4))
ev = n.nvmlEventSetWait(es, 5000)
out["event"] = [ev.eventType, ev.eventData]
out["gi"] = gi_info(gi)
out["gi_full"] = [err(lambda: n.nvmlDeviceCreateGpuInstanceWithPlacement(h, P3G, gplace(4, 4))),   # taken
                  err(lambda: n.nvmlDeviceCreateGpuInstance(h, P7G))]                               # no room
gi2 = n.nvmlDeviceCreateGpuInstance(h, P2G)                 # the first free 2g start: 0, before gi
out["gi2"], out["gi_again"] = gi_info(gi2), gi_info(gi)     # gi's handle still names gi
out["free"] = free()
out["ci_refused"] = [as_user(lambda: n.nvmlGpuInstanceCreateComputeInstance(gi, CI_1SLICE)),
                     err(lambda: n.nvmlGpuInstanceCreateComputeInstance(gi, CI_4SLICE)),   # a 3g offers no 4c
                     err(lambda: n.nvmlGpuInstanceCreateComputeInstance(gi, 9)),           # past NVML's profiles
                     err(lambda: n.nvmlGpuInstanceCreateComputeInstanceWithPlacement(gi, CI_1SLICE, cplace(3, 1)))]
ci = n.nvmlGpuInstanceCreateComputeInstanceWithPlacement(gi, CI_1SLICE, cplace(1, 1))
out["ci_taken"] = err(lambda: n.nvmlGpuInstanceCreateComputeInstanceWithPlacement(gi, CI_1SLICE, cplace(1, 1)))
ci2 = n.nvmlGpuInstanceCreateComputeInstance(gi2, CI_2SLICE)
out["ci"], out["ci2"] = ci_info(ci), ci_info(ci2)
out["ci_free"] = n.nvmlGpuInstanceGetComputeInstanceRemainingCapacity(gi, CI_1SLICE)
out["devices"] = []
for i in range(7):
    try:
        m = n.nvmlDeviceGetMigDeviceHandleByIndex(h, i)
    except n.NVMLError_NotFound:
        break
    out["devices"].append([n.nvmlDeviceGetGpuInstanceId(m), n.nvmlDeviceGetComputeInstanceId(m),
                           n.nvmlDeviceGetName(m)])
out["gi_destroy_with_ci"] = err(lambda: n.nvmlGpuInstanceDestroy(gi))
"""

DESTROY = COMMON + """
import time
def handles():
    gi = n.nvmlDeviceGetGpuInstanceById(h, GI)
    gi2 = n.nvmlDeviceGetGpuInstanceById(h, GI2)
    return gi, gi2, n.nvmlGpuInstanceGetComputeInstanceById(gi, CI), n.nvmlGpuInstanceGetComputeInstanceById(gi2, 0)
gi, gi2, ci, ci2 = handles()
out = {"leased": [err(lambda: n.nvmlComputeInstanceDestroy(ci2)), err(lambda: n.nvmlGpuInstanceDestroy(gi2))]}
open(FLAG, "w").close()   # the test releases the lease once this exists
while os.path.exists(FLAG):
    time.sleep(0.05)
out["not_root"] = [as_user(lambda: n.nvmlComputeInstanceDestroy(ci)), as_user(lambda: n.nvmlGpuInstanceDestroy(gi))]
out["kept"] = [gi_info(gi), ci_info(ci)]
n.nvmlComputeInstanceDestroy(ci)
out["stale"] = [err(lambda: n.nvmlComputeInstanceGetInfo(ci)), err(lambda: n.nvmlComputeInstanceDestroy(ci))]
n.nvmlComputeInstanceDestroy(ci2)
n.nvmlGpuInstanceDestroy(gi)
n.nvmlGpuInstanceDestroy(gi2)
out["gone"] = [err(lambda: n.nvmlGpuInstanceGetInfo(gi)), free()]
out["activation"] = n.nvmlDeviceSetMigMode(h, 0)
out["mode"] = n.nvmlDeviceGetMigMode(h)
"""


def _layout(node, gpu: int = GPU) -> list:
    return sorted([gi.id, gi.profile, gi.placement_start, [[c.id, c.slices] for c in gi.compute_instances]]
                  for gi in node.gpu_instances(gpu))


def test_root_makes_and_destroys_mig_instances_through_the_placement_engine(mini_twin: Twin, nvml_lib: str,
                                                                            tmp_path) -> None:
    import subprocess
    import sys

    node = mini_twin.gpu_node("gpu001")
    env = nvml_env(nvml_lib, http_address(mini_twin, "gpu001"))
    out = run_pynvml(CREATE, env)
    assert out["disabled"] == [[0, 0], 3]                   # NOT_SUPPORTED while MIG mode is disabled
    assert out["mode_not_root"] == 4 and out["mode_bad"] == 2 and out["still_disabled"] == [0, 0]
    assert out["activation"] == 0 and out["mode"] == [1, 1]
    assert out["gi_refused"] == [4, 2, 2, 2]                # NO_PERMISSION, INVALID_ARGUMENT x3
    assert out["free_empty"] == [2, 3, 7, 1]                # nothing was made by them
    assert out["event"] == [0x100, 0]                       # nvmlEventMigConfigChange
    assert out["gi"] == [2, P3G, 4, 4]                      # 3g.40gb at 4: GI 2, as nvidia-smi numbers it
    assert out["gi_full"] == [23, 23]                       # INSUFFICIENT_RESOURCES: placement taken, no room
    assert out["gi2"] == [3, P2G, 0, 2] and out["gi_again"] == out["gi"]
    assert out["free"] == [0, 1, 2, 0]                      # what -lgip says with 2g at 0 and 3g at 4
    assert out["ci_refused"] == [4, 3, 2, 2]                # no root; 4c not offered; no such profile; bad start
    assert out["ci"] == [1, CI_1SLICE, 1, 1, 2] and out["ci_taken"] == 23
    assert out["ci2"] == [0, CI_2SLICE, 0, 2, 3]
    assert out["ci_free"] == 2                              # 1c at 0 and 2 are still free in the 3g
    assert sorted(out["devices"]) == [[2, 1, "NVIDIA H100 80GB HBM3 MIG 1c.3g.40gb"],
                                      [3, 0, "NVIDIA H100 80GB HBM3 MIG 2g.20gb"]]
    assert out["gi_destroy_with_ci"] == 19                  # IN_USE: it has a compute instance
    # The daemon's one layout: the gRPC API (`twin gpu mig`) lists what NVML made.
    assert node.gpu(GPU).mig_enabled
    assert _layout(node) == [[2, "3g.40gb", 4, [[1, 1]]], [3, "2g.20gb", 0, [[0, 2]]]]

    lease = node.lease("nvml-mig-create", count=1, mig_profile="2g.20gb", gpus=[GPU])
    flag = tmp_path / "leased"
    script = ("import json, pynvml as n\n" + ERR + f"FLAG = {str(flag)!r}\nGI, GI2, CI = 2, 3, 1\n" + DESTROY
              + "\nprint(json.dumps(out))\n")
    proc = subprocess.Popen([sys.executable, "-c", script], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        wait_for("the NVML client to try the leased instances", flag.exists, timeout=30)
        node.release(lease.id)
        flag.unlink()
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 0, stderr
    out = json.loads(stdout.splitlines()[-1])
    assert out["leased"] == [19, 19]                        # IN_USE while a job holds the MIG device
    assert out["not_root"] == [4, 4]
    assert out["kept"] == [[2, P3G, 4, 4], [1, CI_1SLICE, 1, 1, 2]]
    assert out["stale"] == [2, 2]                           # a destroyed instance's handle: INVALID_ARGUMENT
    assert out["gone"] == [2, [2, 3, 7, 1]]
    assert out["activation"] == 0 and out["mode"] == [0, 0]
    assert _layout(node) == [] and not node.gpu(GPU).mig_enabled


PENDING = COMMON + """
out = {"activation": n.nvmlDeviceSetMigMode(h, 1), "mode": n.nvmlDeviceGetMigMode(h),
       "create": err(lambda: n.nvmlDeviceCreateGpuInstance(h, P1G))}
"""
MODE = COMMON + "out = n.nvmlDeviceGetMigMode(h)\n"
DISABLE = COMMON + "out = [n.nvmlDeviceSetMigMode(h, 0), n.nvmlDeviceGetMigMode(h)]\n"


def test_a_mig_mode_change_on_a_gpu_in_use_waits_for_a_reset(mini_twin: Twin, nvml_lib: str) -> None:
    """nvml.h: the driver resets the GPU to apply the mode; a GPU that is not idle cannot be, so
    activationStatus is IN_USE and the mode stays pending until the GPU is reset."""
    node = mini_twin.gpu_node("gpu001")
    env = nvml_env(nvml_lib, http_address(mini_twin, "gpu001"))
    lease = node.lease("nvml-mig-mode", gpus=[GPU])
    try:
        out = run_pynvml(PENDING, env)
    finally:
        node.release(lease.id)
    assert out == {"activation": 19, "mode": [0, 1], "create": 3}   # still disabled: NOT_SUPPORTED
    assert not node.gpu(GPU).mig_enabled
    node.reset_gpu(GPU)
    assert run_pynvml(MODE, env) == [1, 1] and node.gpu(GPU).mig_enabled
    assert run_pynvml(DISABLE, env) == [0, [0, 0]]


SURVIVE = COMMON + """
n.nvmlDeviceSetMigMode(h, 1)
gi = n.nvmlDeviceCreateGpuInstanceWithPlacement(h, P1G, gplace(6, 1))
n.nvmlGpuInstanceCreateComputeInstance(gi, CI_1SLICE)
out = [gi_info(gi), free()]
"""
CLEAN = COMMON + """
gi = n.nvmlDeviceGetGpuInstanceById(h, GI)
out = [n.nvmlDeviceGetMigMode(h), gi_info(gi), free()]
n.nvmlComputeInstanceDestroy(n.nvmlGpuInstanceGetComputeInstanceById(gi, 0))
n.nvmlGpuInstanceDestroy(gi)
n.nvmlDeviceSetMigMode(h, 0)
"""


def test_a_layout_made_through_nvml_survives_the_daemon_being_killed(mini_twin: Twin, nvml_lib: str) -> None:
    """SIGKILL gpu001's daemon after NVML made a GPU and a compute instance: the supervisor restarts it
    from its store and NVML reads the same layout (the change was durable before SUCCESS)."""
    env = nvml_env(nvml_lib, http_address(mini_twin, "gpu001"))
    before = run_pynvml(SURVIVE, env)
    status = json.loads(mini_twin.run.daemons.read_text())["daemons"]["gpu001"]
    os.kill(status["pid"], signal.SIGKILL)
    wait_for("the supervisor to restart gpu001",
             lambda: json.loads(mini_twin.run.daemons.read_text())["daemons"]["gpu001"]["restarts"]
             > status["restarts"], timeout=60)
    wait_for("gpu001 healthy again", lambda: any(d["name"] == "gpu001" and d["health"] == "SERVING"
                                                 for d in mini_twin.status()["daemons"]), timeout=60)
    after = run_pynvml(f"GI = {before[0][0]}\n" + CLEAN, env)
    assert before == [[13, P1G, 6, 1], [1, 3, 6, 0]]        # 1g.10gb at 6: GI 13; 3g at 4 and 7g no longer fit
    assert after == [[1, 1]] + before
    assert _layout(mini_twin.gpu_node("gpu001")) == []
