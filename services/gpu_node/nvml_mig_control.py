"""NVML's MIG calls that change the layout, on the daemon (POST /nvml/set, beside nvml_control.py's
set calls): what native/nvml/mig_create.c sends once it has checked the caller is root and resolved
the handles to ids.

One line per request, numbers only, GPU the daemon's index:
    migmode GPU 0|1                  nvmlDeviceSetMigMode: answers `ret 0 ACTIVATION`
    gi GPU PROFILE_ID [START]        nvmlDeviceCreateGpuInstance(WithPlacement): `ret 0 GI_ID`
    gidel GPU GI_ID                  nvmlGpuInstanceDestroy
    ci GPU GI_ID SLICES [START]      nvmlGpuInstanceCreateComputeInstance(WithPlacement): `ret 0 CI_ID`
    cidel GPU GI_ID CI_ID            nvmlComputeInstanceDestroy

Each is the model's own MIG call (services/gpu_node/model.py, whose placements are mig.py's engine,
the one `twin gpu mig`, Kubernetes and Slurm use), under the servicer's lock and commit as a gRPC
change: durable, an event on the bus (nvmlEventMigConfigChange for the library) and seen by the
gRPC API before the library hears SUCCESS. The model checks before it mutates, so a refusal changes
nothing. Its refusals become nvml.h's codes for the call.
"""

from __future__ import annotations

from collections.abc import Callable

from services.gpu_node.errors import ModelError
from services.gpu_node.model import NodeModel
from services.gpu_node.servicer import GpuNodeServicer, PersistError

SUCCESS, INVALID_ARGUMENT, NOT_SUPPORTED, GPU_IS_LOST, IN_USE, INSUFFICIENT_RESOURCES, UNKNOWN = (
    0, 2, 3, 15, 19, 23, 999)

# nvml.h: a create that cannot fit is INSUFFICIENT_RESOURCES (the engine says no room, or the
# placement asked for overlaps: FAILED_PRECONDITION); a destroy of an instance with compute
# instances or processes (the twin's leases) is IN_USE; an id no longer there is a stale handle.
_CREATE = {"INVALID_ARGUMENT": INVALID_ARGUMENT, "RESOURCE_EXHAUSTED": INSUFFICIENT_RESOURCES,
           "FAILED_PRECONDITION": INSUFFICIENT_RESOURCES, "NOT_FOUND": INVALID_ARGUMENT}
_DESTROY = {"FAILED_PRECONDITION": IN_USE, "NOT_FOUND": INVALID_ARGUMENT, "INVALID_ARGUMENT": INVALID_ARGUMENT}

Answer = tuple[int, ...]
Change = Callable[[float], Answer]


class _Refused(Exception):
    """Refused before the model is asked (nothing changed): the nvmlReturn_t."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


def _mig_on(model: NodeModel, gpu: int) -> None:
    """nvml.h: the instance calls are NOT_SUPPORTED on a GPU whose MIG mode is disabled."""
    if not model.mig_mode(gpu)[0]:
        raise _Refused(NOT_SUPPORTED)


def _create_gi(model: NodeModel, gpu: int, args: list[int]) -> Change:
    profile, start = args[0], (args[1] if len(args) > 1 else None)

    def change(now: float) -> Answer:
        _mig_on(model, gpu)
        return SUCCESS, model.create_gpu_instance(gpu, str(profile), now, placement_start=start).id
    return change


def _destroy_gi(model: NodeModel, gpu: int, args: list[int]) -> Change:
    def change(now: float) -> Answer:
        _mig_on(model, gpu)
        model.destroy_gpu_instance(gpu, args[0], now)
        return (SUCCESS,)
    return change


def _create_ci(model: NodeModel, gpu: int, args: list[int]) -> Change:
    gi, slices, start = args[0], args[1], (args[2] if len(args) > 2 else None)

    def change(now: float) -> Answer:
        _mig_on(model, gpu)
        return SUCCESS, model.create_compute_instance(gpu, gi, slices, now, placement_start=start).id
    return change


def _destroy_ci(model: NodeModel, gpu: int, args: list[int]) -> Change:
    def change(now: float) -> Answer:
        _mig_on(model, gpu)
        model.destroy_compute_instance(gpu, args[0], args[1], now)
        return (SUCCESS,)
    return change


def _mig_mode(model: NodeModel, gpu: int, args: list[int]) -> Change:
    if args[0] not in (0, 1):
        raise _Refused(INVALID_ARGUMENT)

    def change(now: float) -> Answer:
        # The call succeeds either way; activationStatus says whether the mode is active or pending.
        return SUCCESS, SUCCESS if model.request_mig_mode(gpu, bool(args[0]), now) else IN_USE
    return change


# verb -> (how many numbers after GPU, at least and at most; the change; its refusal codes)
VERBS: dict[str, tuple[int, int, Callable[[NodeModel, int, list[int]], Change], dict[str, int]]] = {
    "migmode": (1, 1, _mig_mode, {}),
    "gi": (1, 2, _create_gi, _CREATE),
    "gidel": (1, 1, _destroy_gi, _DESTROY),
    "ci": (2, 3, _create_ci, _CREATE),
    "cidel": (2, 2, _destroy_ci, _DESTROY),
}


def _code(e: ModelError, codes: dict[str, int]) -> int:
    return GPU_IS_LOST if "GPU_IS_LOST" in e.message else codes.get(e.code, INVALID_ARGUMENT)


async def apply(servicer: GpuNodeServicer, model: NodeModel, verb: str, numbers: list[int]) -> Answer:
    """The answer to one MIG request (`verb GPU ARGS...` already split into numbers)."""
    low, high, make, codes = VERBS[verb]
    gpu, args = numbers[0], numbers[1:]
    if not low <= len(args) <= high:
        return (INVALID_ARGUMENT,)
    try:
        return await servicer.apply(make(model, gpu, args))
    except _Refused as e:
        return (e.code,)
    except ModelError as e:
        return (_code(e, codes),)
    except PersistError:   # applied in memory, not yet durable: the driver did not confirm it
        return (UNKNOWN,)
