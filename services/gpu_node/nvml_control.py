"""NVML's set calls on the daemon (POST /nvml/set, nvml_endpoint.py): what native/nvml/set_calls.c
sends once it has checked the caller may (root, as the driver requires) and the handle.

One line per request, `WHAT GPU VALUE`, GPU the daemon's index:
    power GPU MILLIWATTS        nvmlDeviceSetPowerManagementLimit
    persistence GPU 0|1         nvmlDeviceSetPersistenceMode
    ecc GPU 0|1                 nvmlDeviceSetEccMode (pending until a reset or reboot)
    appclocks GPU MEM_MHZ SM_MHZ   nvmlDeviceSetApplicationsClocks (ResetApplicationsClocks: the defaults)
The answer is the call's nvmlReturn_t. The MIG calls that change the layout (create, destroy, MIG
mode) share the endpoint: nvml_mig_control.py. The change goes through the servicer's lock and commit, as
a gRPC change does: durable and on the bus before the library hears SUCCESS. A refused change
changes nothing (the model checks before it mutates).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from services.gpu_node import nvml_mig_control
from services.gpu_node.errors import ModelError
from services.gpu_node.model import NodeModel
from services.gpu_node.servicer import GpuNodeServicer, PersistError

NVML_SUCCESS, NVML_INVALID_ARGUMENT, NVML_GPU_IS_LOST, NVML_UNKNOWN = 0, 2, 15, 999


def _change(model: NodeModel, what: str, gpu: int, value: int, extra: list[int]) -> Callable[[float], Any] | None:
    if what == "appclocks" and len(extra) == 1:
        return lambda now: model.set_app_clocks(gpu, value, extra[0], now)
    if extra:
        return None
    if what == "power":
        return lambda now: model.set_power_limit(gpu, value / 1000.0, now)
    if what == "persistence" and value in (0, 1):
        return lambda now: model.set_persistence(gpu, bool(value), now)
    if what == "ecc" and value in (0, 1):
        return lambda now: model.set_ecc_mode(gpu, bool(value), now)
    return None


def _code(e: ModelError) -> int:
    return NVML_GPU_IS_LOST if "GPU_IS_LOST" in e.message else NVML_INVALID_ARGUMENT


async def apply(servicer: GpuNodeServicer, model: NodeModel, body: str) -> int | tuple[int, ...]:
    """The nvmlReturn_t of one request; a MIG call's answer may carry values after it (an id)."""
    parts = body.split()
    if parts and parts[0] in nvml_mig_control.VERBS:
        if len(parts) < 2 or not all(x.isdigit() for x in parts[1:]):
            return NVML_INVALID_ARGUMENT
        return await nvml_mig_control.apply(servicer, model, parts[0], [int(x) for x in parts[1:]])
    if len(parts) not in (3, 4) or not all(x.isdigit() for x in parts[1:]):
        return NVML_INVALID_ARGUMENT
    gpu, value, *extra = map(int, parts[1:])
    change = _change(model, parts[0], gpu, value, extra)
    if change is None:
        return NVML_INVALID_ARGUMENT
    try:
        await servicer.apply(change)
    except ModelError as e:
        return _code(e)
    except PersistError:   # applied in memory, not yet durable: the driver did not confirm it
        return NVML_UNKNOWN
    return NVML_SUCCESS
