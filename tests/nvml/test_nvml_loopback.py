"""pynvml, gpustat and nvitop, unchanged, on the twin's libnvidia-ml.so.1 against a loopback mini
twin: what they read is what the daemon's gRPC API says, with NVML's own return codes."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from emulator.client import Twin
from tests.nvml.conftest import http_address, nvml_env, run_pynvml

BASICS = """
def err(f):
    try:
        f()
    except n.NVMLError as e:
        return e.value
def uninit():
    n._LoadNvmlLibrary()
    return n._nvmlGetFunctionPointer("nvmlDeviceGetCount_v2")(n.byref(n.c_uint()))
out = {"before_init": uninit()}
n.nvmlInit()
h = n.nvmlDeviceGetHandleByIndex(3)
m = n.nvmlDeviceGetMemoryInfo(h, n.nvmlMemory_v2)
out |= {
    "driver": n.nvmlSystemGetDriverVersion(), "cuda": n.nvmlSystemGetCudaDriverVersion(),
    "count": n.nvmlDeviceGetCount(),
    "uuids": [n.nvmlDeviceGetUUID(n.nvmlDeviceGetHandleByIndex(i)) for i in range(n.nvmlDeviceGetCount())],
    "name": n.nvmlDeviceGetName(h), "serial": n.nvmlDeviceGetSerial(h),
    "by_uuid": n.nvmlDeviceGetIndex(n.nvmlDeviceGetHandleByUUID(n.nvmlDeviceGetUUID(h))),
    "by_bus": n.nvmlDeviceGetIndex(n.nvmlDeviceGetHandleByPciBusId(n.nvmlDeviceGetPciInfo(h).busId)),
    "bus": n.nvmlDeviceGetPciInfo(h).busId.decode() if isinstance(n.nvmlDeviceGetPciInfo(h).busId, bytes)
           else n.nvmlDeviceGetPciInfo(h).busId,
    "mem": [m.total, m.reserved, m.used, m.free],
    "limit": n.nvmlDeviceGetEnforcedPowerLimit(h), "temp": n.nvmlDeviceGetTemperature(h, 0),
    "ecc": n.nvmlDeviceGetTotalEccErrors(h, 0, 0), "remap": list(n.nvmlDeviceGetRemappedRows(h)),
    "links": [n.nvmlDeviceGetNvLinkState(h, i) for i in range(18)],
    "errors": {
        "fan": err(lambda: n.nvmlDeviceGetFanSpeed(h)),
        "retired": err(lambda: n.nvmlDeviceGetRetiredPages(h, 0)),
        "index8": err(lambda: n.nvmlDeviceGetHandleByIndex(8)),
        "link18": err(lambda: n.nvmlDeviceGetNvLinkState(h, 18)),
        "no_uuid": err(lambda: n.nvmlDeviceGetHandleByUUID("GPU-00000000-0000-0000-0000-000000000000")),
        "sensor": err(lambda: n.nvmlDeviceGetTemperature(h, 7)),
    },
}
n.nvmlShutdown()
"""


def test_pynvml_reads_the_daemons_gpus(mini_twin: Twin, nvml_lib: str) -> None:
    node = mini_twin.gpu_node("gpu001")
    out = run_pynvml(BASICS, nvml_env(nvml_lib, http_address(mini_twin, "gpu001")))
    info, gpus, g3 = node.node(), node.gpus(), node.gpu(3)
    assert out["before_init"] == 1   # NVML_ERROR_UNINITIALIZED
    assert (out["driver"], out["cuda"]) == (info.driver_version, 12040)
    assert out["count"] == 8 and out["uuids"] == [g.uuid for g in gpus]
    assert (out["name"], out["serial"], out["bus"]) == (g3.name, g3.serial, g3.pci_bus_id)
    assert out["by_uuid"] == out["by_bus"] == 3
    mib = 1 << 20
    assert out["mem"][:2] == [g3.memory_total_mib * mib, g3.memory_reserved_mib * mib]
    assert out["mem"][0] == sum(out["mem"][1:])
    assert out["limit"] == 700_000 and 15 < out["temp"] < 90
    assert out["ecc"] == g3.ecc.volatile_sbe and out["remap"] == [0, 0, 0, 0]
    assert out["links"] == [1] * 18
    # NOT_SUPPORTED (3) where an H100 SXM answers so, INVALID_ARGUMENT (2), NOT_FOUND (6)
    assert out["errors"] == {"fan": 3, "retired": 3, "index8": 2, "link18": 2, "no_uuid": 6, "sensor": 2}


def test_no_daemon_is_no_driver(nvml_lib: str) -> None:
    """Nothing answering where the library looks: nvmlInit fails as with no driver loaded."""
    out = run_pynvml("""
try:
    n.nvmlInit()
except n.NVMLError as e:
    out = e.value
""", nvml_env(nvml_lib, "@clustertwin-nvml-test-nothing-here"))
    assert out == 9   # NVML_ERROR_DRIVER_NOT_LOADED


PROCESSES = """
import os
n.nvmlInit()
out = {"count": n.nvmlDeviceGetCount(), "gpus": []}
for i in range(out["count"]):
    h = n.nvmlDeviceGetHandleByIndex(i)
    procs = n.nvmlDeviceGetComputeRunningProcesses(h)
    out["gpus"].append({"uuid": n.nvmlDeviceGetUUID(h), "util": n.nvmlDeviceGetUtilizationRates(h).gpu,
                        "pids": [p.pid for p in procs], "used": [p.usedGpuMemory for p in procs],
                        "minor": n.nvmlDeviceGetMinorNumber(h)})
"""


def test_leases_are_processes_and_a_job_sees_only_its_gpus(mini_twin: Twin, nvml_lib: str) -> None:
    node = mini_twin.gpu_node("gpu001")
    lease = node.lease("nvml-test", gpus=[1, 2])
    address = http_address(mini_twin, "gpu001")
    try:
        node.report_load(lease.id, 70)
        gpus = node.gpus()
        every = run_pynvml(PROCESSES, nvml_env(nvml_lib, address))
        assert every["count"] == 8
        pids = [g["pids"] for g in every["gpus"]]
        pid = pids[1][0]
        assert pid > 0 and pids == [[], [pid], [pid], [], [], [], [], []]   # one process: the lease's
        assert every["gpus"][1]["util"] == 70 and every["gpus"][0]["util"] == 0
        # As Slurm's GRES and device cgroup give a job GPUs 2 and 1: by index, then by UUID
        job = run_pynvml(PROCESSES, nvml_env(nvml_lib, address, CUDA_VISIBLE_DEVICES=f"2,{gpus[1].uuid}"))
        assert job["count"] == 2
        assert [g["uuid"] for g in job["gpus"]] == [gpus[2].uuid, gpus[1].uuid]
        assert [g["minor"] for g in job["gpus"]] == [2, 1]
        assert all(g["pids"] == [pid] for g in job["gpus"])
        # The lease's own env, as a container gets it (NVIDIA_VISIBLE_DEVICES wins over CUDA's)
        contained = run_pynvml(PROCESSES, nvml_env(nvml_lib, address, **dict(lease.env)))
        assert [g["uuid"] for g in contained["gpus"]] == [gpus[1].uuid, gpus[2].uuid]
        assert run_pynvml(PROCESSES, nvml_env(nvml_lib, address, CUDA_VISIBLE_DEVICES=""))["count"] == 0
    finally:
        node.release(lease.id)
    assert run_pynvml(PROCESSES, nvml_env(nvml_lib, address))["gpus"][1]["pids"] == []


MIG = """
n.nvmlInit()
h = n.nvmlDeviceGetHandleByIndex(0)
out = {"mode": n.nvmlDeviceGetMigMode(h), "max": n.nvmlDeviceGetMaxMigDeviceCount(h), "devices": []}
for i in range(out["max"]):
    try:
        m = n.nvmlDeviceGetMigDeviceHandleByIndex(h, i)
    except n.NVMLError_NotFound:
        continue
    parent = n.nvmlDeviceGetDeviceHandleFromMigDeviceHandle(m)
    out["devices"].append({
        "uuid": n.nvmlDeviceGetUUID(m), "name": n.nvmlDeviceGetName(m), "gi": n.nvmlDeviceGetGpuInstanceId(m),
        "ci": n.nvmlDeviceGetComputeInstanceId(m), "parent": n.nvmlDeviceGetIndex(parent),
        "mem": n.nvmlDeviceGetMemoryInfo(m).total >> 20,
        "pids": [p.pid for p in n.nvmlDeviceGetComputeRunningProcesses(m)],
        "by_uuid": n.nvmlDeviceGetGpuInstanceId(n.nvmlDeviceGetHandleByUUID(n.nvmlDeviceGetUUID(m))),
    })
try:
    n.nvmlDeviceGetTemperature(m, 0)
except n.NVMLError as e:
    out["mig_temp"] = e.value
out["instances"] = []
for profile in PROFILES:
    count = n.c_uint(8)
    gis = (n.c_nvmlGpuInstance_t * 8)()
    n.nvmlDeviceGetGpuInstances(h, profile, gis, n.byref(count))
    for gi in gis[:count.value]:
        info = n.nvmlGpuInstanceGetInfo(gi)
        cis = (n.c_nvmlComputeInstance_t * 8)()
        ccount = n.c_uint(8)
        n.nvmlGpuInstanceGetComputeInstances(gi, 0, cis, n.byref(ccount))   # the 1-slice CI profile
        out["instances"].append([info.id, info.profileId, info.placement.start, info.placement.size,
                                 [n.nvmlComputeInstanceGetInfo(c).id for c in cis[:ccount.value]]])
"""


def test_mig_devices_are_the_compute_instances(mini_twin: Twin, nvml_lib: str) -> None:
    node = mini_twin.gpu_node("gpu002")   # the mini topology's MIG server
    lease = node.lease("nvml-mig", count=1, mig_profile="2g.20gb")
    address = http_address(mini_twin, "gpu002")
    try:
        gis = node.gpu_instances(0)
        code = f"PROFILES = {sorted({gi.gi_profile_id for gi in gis})}\n" + MIG
        out = run_pynvml(code, nvml_env(nvml_lib, address))
        contained = run_pynvml(code, nvml_env(nvml_lib, address, **dict(lease.env)))   # its MIG device only
    finally:
        node.release(lease.id)
    expected = [(ci.uuid, gi.id, ci.id, f"NVIDIA H100 80GB HBM3 MIG {ci.profile}") for gi in gis
                for ci in gi.compute_instances]
    assert out["mode"] == [1, 1] and out["max"] == 7
    assert [(d["uuid"], d["gi"], d["ci"], d["name"]) for d in out["devices"]] == expected
    assert all(d["parent"] == 0 and d["by_uuid"] == d["gi"] for d in out["devices"])
    leased = lease.devices[0].uuid
    pids = [d["pids"] for d in out["devices"]]
    assert [bool(p) for p in pids] == [d["uuid"] == leased for d in out["devices"]]
    assert [d["uuid"] for d in contained["devices"]] == [leased]
    assert contained["devices"][0]["pids"] == next(p for p in pids if p)
    assert {d["mem"] for d in out["devices"] if "2g" in d["name"]} == {20090}
    assert out["mig_temp"] == 3   # a MIG device has no sensor of its own: NOT_SUPPORTED
    one_slice = {gi.id: [ci.id for ci in gi.compute_instances if ci.slices == 1] for gi in gis}
    assert sorted(out["instances"]) == sorted(
        [gi.id, gi.gi_profile_id, gi.placement_start, gi.placement_size, one_slice[gi.id]] for gi in gis)


def test_gpustat_and_nvitop_run_unchanged(mini_twin: Twin, nvml_lib: str, twin_exe: str) -> None:
    node = mini_twin.gpu_node("gpu001")
    lease = node.lease("nvml-tools", gpus=[4])
    env = nvml_env(nvml_lib, None)
    shell = f'eval "$({twin_exe} nvml env gpu001 --run-dir {mini_twin.run.path})"; '
    bindir = Path(twin_exe).parent
    try:
        stat = subprocess.run(["bash", "-c", shell + f"{bindir}/gpustat --json"], env=env, capture_output=True,
                              text=True, timeout=60)
        top = subprocess.run(["bash", "-c", shell + f"{bindir}/nvitop -1"], env=env, capture_output=True,
                             text=True, timeout=60)
        mig = subprocess.run(["bash", "-c", shell.replace("gpu001", "gpu002") + f"{bindir}/nvitop -1"], env=env,
                             capture_output=True, text=True, timeout=60)
    finally:
        node.release(lease.id)
    assert stat.returncode == 0, stat.stderr
    gpus = json.loads(stat.stdout)["gpus"]
    assert [g["uuid"] for g in gpus] == [g.uuid for g in node.gpus()]
    assert gpus[4]["memory.used"] > 0 and gpus[0]["fan.speed"] is None and gpus[0]["enforced.power.limit"] == 700
    assert top.returncode == 0 and "Traceback" not in top.stderr, top.stderr
    assert top.stdout.count("H100 80GB HBM3") == 8 and "Driver Version: 550.90.07" in top.stdout
    # the MIG server: each GPU's MIG devices, with their GPU and compute instances
    assert mig.returncode == 0 and "Traceback" not in mig.stderr, mig.stderr
    assert mig.stdout.count("1g.10gb @ GI/CI: 7/0") == 8 and mig.stdout.count("3g.40gb @ GI/CI: 2/0") == 8


MIG_EVENT = """
import ctypes
n.nvmlInit()
es = n.nvmlEventSetCreate()
h7 = n.nvmlDeviceGetHandleByIndex(7)
n.nvmlDeviceRegisterEvents(h7, n.nvmlEventMigConfigChange, es)
n.nvmlDeviceRegisterEvents(n.nvmlDeviceGetHandleByIndex(6), n.nvmlEventTypeXidCriticalError, es)
open(FLAG, "w").close()   # the test changes GPU 7's instances once this exists
address = lambda p: ctypes.cast(p, ctypes.c_void_p).value
got = [n.nvmlEventSetWait(es, 30000) for _ in range(2)]
out = [[d.eventType, d.eventData, address(d.device) == address(h7)] for d in got]
"""


def test_a_change_of_mig_instances_is_an_event(mini_twin: Twin, nvml_lib: str, tmp_path: Path) -> None:
    """nvmlEventMigConfigChange on the MIG server's GPU 7: a compute instance destroyed, then made again
    (the layout is as before afterwards). The set registered no MIG events for GPU 6: its change is
    not delivered."""
    import sys

    from tests.waiting import wait_for

    node = mini_twin.gpu_node("gpu002")
    gi = next(g for g in node.gpu_instances(7) if g.compute_instances)
    (ci,) = gi.compute_instances[:1]
    flag = tmp_path / "waiting"
    env = nvml_env(nvml_lib, http_address(mini_twin, "gpu002"))
    script = f"import json, pynvml as n\nFLAG = {str(flag)!r}\n" + MIG_EVENT + "\nprint(json.dumps(out))\n"
    proc = subprocess.Popen([sys.executable, "-c", script], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        wait_for("the NVML client to wait on its event set", flag.exists, timeout=30)
        g6 = next(g for g in node.gpu_instances(6) if g.compute_instances)
        c6 = g6.compute_instances[0]
        node.destroy_compute_instance(6, g6.id, c6.id)   # GPU 6: not registered for MIG events
        node.create_compute_instance(6, g6.id, c6.slices)
        node.destroy_compute_instance(7, gi.id, ci.id)
        node.create_compute_instance(7, gi.id, ci.slices)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 0, stderr
    assert json.loads(stdout.splitlines()[-1]) == [[0x100, 0, True], [0x100, 0, True]]   # both GPU 7's
    assert [(g.id, [c.slices for c in g.compute_instances]) for g in node.gpu_instances(7)
            if g.id == gi.id] == [(gi.id, [c.slices for c in gi.compute_instances])]


XID = """
import ctypes, time
n.nvmlInit()
h = n.nvmlDeviceGetHandleByIndex(7)
es = n.nvmlEventSetCreate()
n.nvmlDeviceRegisterEvents(h, n.nvmlEventTypeXidCriticalError | n.nvmlEventTypeSingleBitEccError, es)
try:
    n.nvmlEventSetWait(es, 0)
    out = {"first": 0}
except n.NVMLError as e:
    out = {"first": e.value}
open(FLAG, "w").close()   # the test injects the faults once this exists
address = lambda p: ctypes.cast(p, ctypes.c_void_p).value
got = [n.nvmlEventSetWait(es, 30000) for _ in range(2)]
out["events"] = [[d.eventType, d.eventData, address(d.device) == address(h)] for d in got]
for name, f in {"temp": lambda: n.nvmlDeviceGetTemperature(h, 0),
                "handle": lambda: n.nvmlDeviceGetHandleByIndex(7)}.items():
    try:
        f()
        out[name] = 0
    except n.NVMLError as e:
        out[name] = e.value
out["count"] = n.nvmlDeviceGetCount()
out["other"] = n.nvmlDeviceGetTemperature(n.nvmlDeviceGetHandleByIndex(6), 0) > 0
"""


def test_xid_79_is_an_event_then_gpu_is_lost(mini_twin: Twin, nvml_lib: str, tmp_path: Path) -> None:
    """Last in the module: Xid 79 takes gpu001's GPU 7 off the bus until the node reboots. Before it,
    single-bit ECC errors on GPUs 6 and 7: the set, registered on GPU 7, sees its own only."""
    import sys

    from tests.waiting import wait_for

    flag = tmp_path / "waiting"
    env = nvml_env(nvml_lib, http_address(mini_twin, "gpu001"))
    env.pop("CLUSTERTWIN_NVML_TTL_MS")
    script = f"import json, pynvml as n\nFLAG = {str(flag)!r}\n" + XID + "\nprint(json.dumps(out))\n"
    proc = subprocess.Popen([sys.executable, "-c", script], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        wait_for("the NVML client to wait on its event set", flag.exists, timeout=30)
        node = mini_twin.gpu_node("gpu001")
        node.inject_fault("ecc-sbe", 6, count=2)   # another GPU: not this set's
        node.inject_fault("ecc-sbe", 7, count=3)
        node.inject_xid(7, 79)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 0, stderr
    out = json.loads(stdout.splitlines()[-1])
    assert out["first"] == 10   # NVML_ERROR_TIMEOUT: nothing yet
    # nvmlEventTypeSingleBitEccError, then nvmlEventTypeXidCriticalError with the Xid, on GPU 7
    assert out["events"] == [[0x1, 0, True], [0x8, 79, True]]
    assert out["temp"] == out["handle"] == 15   # NVML_ERROR_GPU_IS_LOST
    assert out["count"] == 8 and out["other"]


HEALTH = """
from workloads.train.gpu_health import GpuHealth, GpuLost
h = GpuHealth(int(LOCAL_RANK))
out = {"state": h.state, "device": h.device}
for when in ("before", "after"):
    if when == "after":
        open(FLAG, "w").close()   # the test injects Xid 79 once this exists
        while not os.path.exists(FLAG + ".done"):
            time.sleep(0.05)
    try:
        h.check()
        out[when] = "ok"
    except GpuLost as e:
        out[when] = str(e)
"""


def test_a_ranks_health_check_stops_on_gpu_lost(mini_twin: Twin, nvml_lib: str, tmp_path: Path) -> None:
    """Last in the module, after the Xid test (GPU 5 of gpu001 is lost for good here too): the health
    check `twin train --real`'s ranks run (workloads/train/gpu_health.py) finds its own leased GPU, the
    lease's second, by UUID (NVIDIA_VISIBLE_DEVICES), and raises GpuLost once NVML answers
    GPU_IS_LOST; a rank on another GPU is not concerned."""
    import sys

    from tests.waiting import wait_for

    node = mini_twin.gpu_node("gpu001")
    lease = node.lease("health", gpus=[4, 5])
    flag = tmp_path / "go"
    procs = []
    try:
        for rank in ("0", "1"):
            env = nvml_env(nvml_lib, http_address(mini_twin, "gpu001"), **dict(lease.env))
            script = (f"import json, os, time\nFLAG = {str(flag) + rank!r}\nLOCAL_RANK = {rank}\n" + HEALTH
                      + "\nprint(json.dumps(out))\n")
            procs.append(subprocess.Popen([sys.executable, "-c", script], env=env, stdout=subprocess.PIPE,
                                          stderr=subprocess.PIPE, text=True))
        for rank in ("0", "1"):
            wait_for(f"local rank {rank} to have checked once", Path(str(flag) + rank).exists, timeout=30)
        node.inject_xid(5, 79)
        for rank in ("0", "1"):
            Path(str(flag) + rank + ".done").touch()
        outs = [json.loads(p.communicate(timeout=60)[0].splitlines()[-1]) for p in procs]
    finally:
        for p in procs:
            p.kill()
        node.release(lease.id)
    uuids = [g.uuid for g in node.gpus()]
    assert [o["device"] for o in outs] == [uuids[4], uuids[5]] and outs[0]["state"] == "on"
    assert outs[0]["before"] == outs[1]["before"] == outs[0]["after"] == "ok"
    assert outs[1]["after"] == f"{uuids[5]}: GPU is lost (NVML_ERROR_GPU_IS_LOST)"
