"""MIG profile info through the built libnvidia-ml.so.1 and unchanged pynvml, against a loopback mini
twin: what an H100 80GB offers (GPU- and compute-instance profiles, placements), what is still free
as the layout changes, and a MIG device's attributes; NVML's own codes for bad input and for a GPU
with MIG disabled."""

from __future__ import annotations

from emulator.client import Twin
from tests.nvml.conftest import http_address, nvml_env, run_pynvml

COMMON = """
import ctypes
def text(v):
    return v.decode() if isinstance(v, bytes) else v
def gip(r):
    return [r.id, r.sliceCount, r.instanceCount, r.multiprocessorCount, r.memorySizeMB,
            [r.copyEngineCount, r.decoderCount, r.encoderCount, r.jpegCount, r.ofaCount]]
def placements(call, h, pid, kind):
    count = n.c_uint(0)
    code = err(lambda: call(h, pid, None, n.byref(count)))   # NULL: the count alone
    if code:
        return code
    arr = (kind * count.value)()
    call(h, pid, arr, n.byref(count))
    return [[p.start, p.size] for p in arr[:count.value]]
n.nvmlInit()
"""

GI_PROFILES = COMMON + """
h = n.nvmlDeviceGetHandleByIndex(GPU)
out = {"info": {}, "v1": {}, "free": {}, "placements": {}}
for e in range(n.NVML_GPU_INSTANCE_PROFILE_COUNT + 1):
    try:
        r = n.nvmlDeviceGetGpuInstanceProfileInfo(h, e)               # the V call, v2 struct
        out["info"][e] = gip(r) + [text(r.name), r.isP2pSupported]
        out["v1"][e] = gip(n.nvmlDeviceGetGpuInstanceProfileInfo(h, e, version=1))
    except n.NVMLError as x:
        out["info"][e] = x.value
for pid in IDS + [3, 99]:
    try:
        out["free"][pid] = n.nvmlDeviceGetGpuInstanceRemainingCapacity(h, pid)
    except n.NVMLError as x:
        out["free"][pid] = x.value
    out["placements"][pid] = placements(n.nvmlDeviceGetGpuInstancePossiblePlacements, h, pid,
                                        n.c_nvmlGpuInstancePlacement_t)
class V3(ctypes.Structure):
    _fields_ = [(f, ctypes.c_uint) for f in ("version", "id", "sliceCount", "instanceCount", "multiprocessorCount",
                "copyEngineCount", "decoderCount", "encoderCount", "jpegCount", "ofaCount")] + [
                ("memorySizeMB", ctypes.c_ulonglong), ("name", ctypes.c_char * 96), ("capabilities", ctypes.c_uint)]
fn = n._nvmlGetFunctionPointer("nvmlDeviceGetGpuInstanceProfileInfoV")
v3 = V3(version=ctypes.sizeof(V3) | (3 << 24), capabilities=77)
out["v3"] = [fn(h, 4, ctypes.byref(v3)), hex(v3.version), gip(v3), text(v3.name), v3.capabilities]
stale = V3(version=ctypes.sizeof(V3) | (1 << 24), id=555)
out["v1_version"] = [fn(h, 4, ctypes.byref(stale)), stale.id]   # nothing written
by_id = n.nvmlDeviceGetGpuInstanceProfileInfoById(h, 9)
out["by_id"] = [by_id.id, text(by_id.name)]
"""


def test_gpu_instance_profiles_as_an_h100_answers(mini_twin: Twin, nvml_lib: str) -> None:
    node = mini_twin.gpu_node("gpu002")   # the mini topology's MIG server (all-balanced)
    profiles = node.mig_profiles(0)
    ids = [p.gi_profile_id for p in profiles]
    code = f"GPU = 0\nIDS = {ids}\n" + GI_PROFILES
    out = run_pynvml(code, nvml_env(nvml_lib, http_address(mini_twin, "gpu002")))
    info = {int(k): v for k, v in out["info"].items()}
    # NVML_GPU_INSTANCE_PROFILE_*: 1, 2, 3, 4, 7 slices; 1_SLICE_REV1 (+me); 1_SLICE_REV2 (1g.20gb)
    enums = {"1g.10gb": 0, "2g.20gb": 1, "3g.40gb": 2, "4g.40gb": 3, "7g.80gb": 4, "1g.10gb+me": 7, "1g.20gb": 9}
    for p in profiles:
        got = info[enums[p.name]]
        assert got[:5] == [p.gi_profile_id, int(p.name[0]), p.max_instances, p.sm_count, int(p.memory_gib * 1024)]
        assert got[6:] == [f"MIG {p.name}", 0]   # no P2P between MIG instances
        assert out["v1"][str(enums[p.name])] == got[:6]
    # engines (CE, NVDEC, NVENC, JPEG, OFA): the MIG user guide's H100 table; no NVENC on H100
    assert info[0][5] == [1, 1, 0, 1, 0] and info[7][5] == [1, 1, 0, 1, 1] and info[4][5] == [8, 7, 0, 7, 1]
    # profiles NVML knows that an H100 does not offer; past NVML's list
    assert {e: v for e, v in info.items() if e not in enums.values()} == {
        e: 3 for e in range(18) if e not in enums.values()} | {18: 2}
    # all-balanced: 1g.10gb at 0 and 1, 2g.20gb at 2, 3g.40gb at 4: what is free is what -lgip says
    free = {int(k): v for k, v in out["free"].items()}
    assert {p.gi_profile_id: free[p.gi_profile_id] for p in profiles} == {
        p.gi_profile_id: p.free_instances for p in profiles}
    assert free[3] == free[99] == 2   # no profile has that id: INVALID_ARGUMENT
    placements = {int(k): v for k, v in out["placements"].items()}
    for p in profiles:
        assert placements[p.gi_profile_id] == [[s, p.memory_slices] for s in p.placements]
    assert placements[3] == 2
    assert out["v3"] == [0, "0x3000098", info[4][:6], "MIG 7g.80gb", 0]
    assert out["v1_version"] == [25, 555]   # ARGUMENT_VERSION_MISMATCH, the struct untouched
    assert out["by_id"] == [9, "MIG 3g.40gb"]


MIG_DISABLED = COMMON + """
h = n.nvmlDeviceGetHandleByIndex(0)
out = {"mode": n.nvmlDeviceGetMigMode(h),
       "info": err(lambda: n.nvmlDeviceGetGpuInstanceProfileInfo(h, 0)),
       "free": err(lambda: n.nvmlDeviceGetGpuInstanceRemainingCapacity(h, 19)),
       "placements": placements(n.nvmlDeviceGetGpuInstancePossiblePlacements, h, 19, n.c_nvmlGpuInstancePlacement_t),
       "attributes": err(lambda: n.nvmlDeviceGetAttributes(h))}
"""


def test_a_gpu_with_mig_disabled_has_no_profiles(mini_twin: Twin, nvml_lib: str) -> None:
    """NOT_SUPPORTED, except the placements, which nvml.h gives "regardless of whether MIG is enabled"."""
    out = run_pynvml(MIG_DISABLED, nvml_env(nvml_lib, http_address(mini_twin, "gpu001")))
    assert out == {"mode": [0, 0], "info": 3, "free": 3, "placements": [[s, 1] for s in range(7)], "attributes": 3}


CI_PROFILES = COMMON + """
h = n.nvmlDeviceGetHandleByIndex(GPU)
gi = n.nvmlDeviceGetGpuInstanceById(h, GI)
out = {"info": {}, "free": {}, "placements": {}}
for e in range(n.NVML_COMPUTE_INSTANCE_PROFILE_COUNT + 1):
    try:
        r = n.nvmlGpuInstanceGetComputeInstanceProfileInfo(gi, e, 0)
        out["info"][e] = [r.id, r.sliceCount, r.instanceCount, r.multiprocessorCount, r.sharedCopyEngineCount,
                          r.sharedDecoderCount, r.sharedJpegCount, text(r.name)]
        out["free"][e] = n.nvmlGpuInstanceGetComputeInstanceRemainingCapacity(gi, e)
        out["placements"][e] = placements(n.nvmlGpuInstanceGetComputeInstancePossiblePlacements, gi, e,
                                          n.c_nvmlComputeInstancePlacement_t)
    except n.NVMLError as x:
        out["info"][e] = x.value
out["engine"] = err(lambda: n.nvmlGpuInstanceGetComputeInstanceProfileInfo(gi, 0, 1))
out["free_bad"] = err(lambda: n.nvmlGpuInstanceGetComputeInstanceRemainingCapacity(gi, 4))
out["attributes"] = []
for i in range(7):
    try:
        m = n.nvmlDeviceGetMigDeviceHandleByIndex(h, i)
    except n.NVMLError_NotFound:
        break
    a = n.nvmlDeviceGetAttributes(m)
    out["attributes"].append([n.nvmlDeviceGetGpuInstanceId(m), a.multiprocessorCount, a.gpuInstanceSliceCount,
                              a.computeInstanceSliceCount, a.memorySizeMB, a.sharedCopyEngineCount])
"""


def test_compute_instance_profiles_follow_the_layout(mini_twin: Twin, nvml_lib: str) -> None:
    """The 3g.40gb GI of the MIG server's GPU 1: its whole-GI compute instance leaves nothing free;
    once it is a 1c instance, two more 1c fit and no 2c or 3c (each would overlap slice 0)."""
    node = mini_twin.gpu_node("gpu002")
    gi = next(g for g in node.gpu_instances(1) if g.profile == "3g.40gb")
    (ci,) = gi.compute_instances
    env = nvml_env(nvml_lib, http_address(mini_twin, "gpu002"))
    code = f"GPU = 1\nGI = {gi.id}\n" + CI_PROFILES
    before = run_pynvml(code, env)
    node.destroy_compute_instance(1, gi.id, ci.id)
    try:
        node.create_compute_instance(1, gi.id, 1)
        after = run_pynvml(code, env)
    finally:
        for c in next(g for g in node.gpu_instances(1) if g.id == gi.id).compute_instances:
            node.destroy_compute_instance(1, gi.id, c.id)
        node.create_compute_instance(1, gi.id, ci.slices)
    # NVML_COMPUTE_INSTANCE_PROFILE_1/2/3_SLICE: 1c x3, 2c x1, 3c (the whole GI); shared engines: the GI's
    info = {int(k): v for k, v in before["info"].items()}
    assert info == {0: [0, 1, 3, 16, 3, 3, 3, "MIG 1c.3g.40gb"], 1: [1, 2, 1, 32, 3, 3, 3, "MIG 2c.3g.40gb"],
                    2: [2, 3, 1, 60, 3, 3, 3, "MIG 3g.40gb"], 3: 3, 4: 3, 5: 3, 6: 3, 7: 3, 8: 3, 9: 2}
    assert before["placements"] == {"0": [[0, 1], [1, 1], [2, 1]], "1": [[0, 2]], "2": [[0, 3]]}
    assert before["free"] == {"0": 0, "1": 0, "2": 0}
    assert after["free"] == {"0": 2, "1": 0, "2": 0}
    assert before["engine"] == 2 and before["free_bad"] == 2   # no such engine profile; 7c not in a 3g
    # MIG devices: the CI's SMs and slices, the GI's slices, memory and copy engines
    mine = [a for a in after["attributes"] if a[0] == gi.id]
    assert mine == [[gi.id, 16, 3, 1, 40448, 3]]
    assert [gi.id, 60, 3, 3, 40448, 3] in before["attributes"]
    assert [a[1:] for a in before["attributes"] if a[1] == 16 and a[4] == 9984] == [[16, 1, 1, 9984, 1]] * 2
