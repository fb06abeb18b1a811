"""nvmlDeviceGetFieldValues through the built libnvidia-ml.so.1 and unchanged pynvml, against a loopback
mini twin: ECC, NVLink, PCIe, remapped-row and power fields follow the faults injected into the
daemon; each field carries its own return code and the call succeeds, as real NVML's does."""

from __future__ import annotations

import time

from emulator.client import Twin
from tests.nvml.conftest import http_address, nvml_env, run_pynvml

FIELDS = """
import ctypes
n.nvmlInit()
def read(h, ids):
    out = []
    for v in n.nvmlDeviceGetFieldValues(h, ids):
        value = v.value.uiVal if v.valueType == n.NVML_VALUE_TYPE_UNSIGNED_INT else v.value.ullVal
        out.append([v.fieldId, v.scopeId, v.nvmlReturn, v.valueType, value if v.nvmlReturn == 0 else None,
                    v.timestamp > 0])
    return out
h = n.nvmlDeviceGetHandleByIndex(GPU)
out = {"fields": read(h, IDS)}
fn = n._nvmlGetFunctionPointer("nvmlDeviceGetFieldValues")
out["empty"] = fn(h, ctypes.c_int32(0), ctypes.byref((n.c_nvmlFieldValue_t * 1)()))
if MIG_GPU is not None:
    m = n.nvmlDeviceGetMigDeviceHandleByIndex(n.nvmlDeviceGetHandleByIndex(MIG_GPU), 0)
    out["mig"] = [v.nvmlReturn for v in n.nvmlDeviceGetFieldValues(m, IDS[:3])]
"""

UINT, ULL = 1, 3
OK, INVALID, NOT_SUPPORTED = 0, 2, 3


def run(twin: Twin, lib: str, node: str, gpu: int, ids: list, mig_gpu: int | None = None) -> dict:
    code = f"GPU = {gpu}\nIDS = {ids!r}\nMIG_GPU = {mig_gpu!r}\n" + FIELDS
    return run_pynvml(code, nvml_env(lib, http_address(twin, node)))


def test_field_values_follow_injected_faults(mini_twin: Twin, nvml_lib: str) -> None:
    node = mini_twin.gpu_node("gpu001")
    node.inject_fault("ecc-sbe", 3, count=5)
    node.inject_fault("ecc-dbe", 3)
    node.inject_fault("nvlink-down", 3, link=11)
    ids = [1, 3, 4, 5, 6, 38, 37, 101, 45, 52, 113, 59, 119, 91, (161, 11), (162, 11), (163, 11), (165, 11),
           (165, 0), 94, 142, 143, 144, 145, (187, 0), (190, 0)]
    out = run(mini_twin, nvml_lib, "gpu001", 3, ids)
    ecc = node.gpu(3).ecc
    got = {(f[0], f[1]): f[2:5] for f in out["fields"]}
    expected = {
        (1, 0): [OK, UINT, 1],                                   # ECC_CURRENT: on
        (3, 0): [OK, ULL, ecc.volatile_sbe], (4, 0): [OK, ULL, ecc.volatile_dbe],
        (5, 0): [OK, ULL, ecc.aggregate_sbe], (6, 0): [OK, ULL, ecc.aggregate_dbe],
        (38, 0): [OK, ULL, 16], (37, 0): [OK, ULL, 0], (101, 0): [OK, ULL, 16],   # CRC flit: total, link 5, 11
        (45, 0): [OK, ULL, 0],                                   # CRC data: not modelled apart
        (52, 0): [OK, ULL, 4], (113, 0): [OK, ULL, 4],           # replay: total, link 11
        (59, 0): [OK, ULL, 1], (119, 0): [OK, ULL, 1],           # recovery: total, link 11
        (91, 0): [OK, UINT, 18],
        (161, 11): [OK, ULL, 4], (162, 11): [OK, ULL, 1], (163, 11): [OK, ULL, 16],   # scoped by link
        (165, 11): [OK, UINT, 0], (165, 0): [OK, UINT, 1],       # link state: 11 down, 0 up
        (94, 0): [OK, UINT, 0],
        (142, 0): [OK, UINT, ecc.correctable_remapped_rows], (143, 0): [OK, UINT, 1],
        (144, 0): [OK, UINT, 1], (145, 0): [OK, UINT, 0],         # the DBE's row remap is pending
        (187, 0): [OK, UINT, 200_000], (190, 0): [OK, UINT, 700_000],
    }
    assert got == expected
    assert ecc.volatile_sbe == 5 and ecc.volatile_dbe == 1
    assert all(f[5] for f in out["fields"])   # every value stamped with the time it was read
    assert out["empty"] == INVALID


def test_each_field_has_its_own_return_code(mini_twin: Twin, nvml_lib: str) -> None:
    """Unsupported fields answer NOT_SUPPORTED in their own slot, a link that does not exist
    INVALID_ARGUMENT, and the fields beside them are read; a MIG device has none of these counters."""
    ids = [7, 29, 31, 9999, (163, 18), (186, 0), (186, 1), 82, 83]
    node = mini_twin.gpu_node("gpu002")
    deadline = time.monotonic() + 30   # energy counts from the thermal model's first tick after boot
    while node.gpu(0).total_energy_mj == 0 and time.monotonic() < deadline:
        time.sleep(0.2)
    out = run(mini_twin, nvml_lib, "gpu002", 0, ids, mig_gpu=0)
    codes = [f[2] for f in out["fields"]]
    # per-location ECC (not modelled), retired pages (Hopper remaps rows), an unknown id, link 18,
    # instant power of the GPU, of the module (not modelled), memory temperature, energy
    assert codes == [NOT_SUPPORTED, NOT_SUPPORTED, NOT_SUPPORTED, NOT_SUPPORTED, INVALID, OK, NOT_SUPPORTED, OK, OK]
    values = {f[0]: f[4] for f in out["fields"] if f[2] == OK}
    assert values[186] > 0 and 15 < values[82] < 100 and values[83] > 0
    assert out["mig"] == [NOT_SUPPORTED] * 3
