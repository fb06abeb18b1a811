"""A rank's GPU health check through NVML, as a training job's watchdog asks the driver.

On the twin, NVML is the project's libnvidia-ml.so.1 (native/nvml/): inside a GPU server's namespace
it answers from that server's daemon, so a rank sees its own GPU's state. The rank's GPU is the
LOCAL_RANK-th of the devices it was given: by UUID when the list names UUIDs (a lease's
NVIDIA_VISIBLE_DEVICES, GPU or MIG, as a container runtime passes them), so that a MIG slice is
checked as itself; else by index (Slurm's CUDA_VISIBLE_DEVICES: NVML numbers the GPUs a job sees
from 0).

After Xid 79 (the GPU fell off the bus) NVML answers NVML_ERROR_GPU_IS_LOST to the lookup and to
every query: `check` raises GpuLost and the rank stops. No NVML at all (no library, no daemon) turns
the check off, and `state` says why.
"""

from __future__ import annotations

import os
from typing import Any


class GpuLost(RuntimeError):
    """NVML answered NVML_ERROR_GPU_IS_LOST for the rank's GPU."""


def rank_device(local_rank: int, env: dict[str, str] | os._Environ[str] = os.environ) -> str:
    """The rank's device as NVML names it: a UUID the list gives (a container's NVIDIA_VISIBLE_DEVICES,
    or CUDA_VISIBLE_DEVICES naming UUIDs), else the index LOCAL_RANK among the GPUs the process sees
    (NVML, like a Slurm job's device cgroup, numbers them from 0)."""
    for var in ("NVIDIA_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES"):
        items = [x for x in env.get(var, "").split(",") if x]
        if items and items[0] not in ("all", "none", "void"):
            if local_rank >= len(items):
                raise ValueError(f"LOCAL_RANK {local_rank} but {var} lists {len(items)} devices")
            item = items[local_rank]
            return str(local_rank) if item.isdigit() else item
    return str(local_rank)


class GpuHealth:
    def __init__(self, local_rank: int) -> None:
        self.device = rank_device(local_rank)
        self.state = "on"
        self._nvml: Any = None
        self._handle: Any = None
        try:
            import pynvml

            pynvml.nvmlInit()
        except Exception as e:  # no libnvidia-ml.so.1 or no daemon answering it: nothing to check
            self.state = f"off: {e}"
            return
        self._nvml = pynvml

    def check(self) -> None:
        """Look the GPU up and ask it one thing (its memory); raises GpuLost if NVML says it is lost."""
        n = self._nvml
        if n is None:
            return
        try:
            if self._handle is None:
                d = self.device
                self._handle = n.nvmlDeviceGetHandleByIndex(int(d)) if d.isdigit() else n.nvmlDeviceGetHandleByUUID(d)
            n.nvmlDeviceGetMemoryInfo(self._handle)
        except n.NVMLError as e:
            if e.value == n.NVML_ERROR_GPU_IS_LOST:
                name = f"GPU {self.device}" if self.device.isdigit() else self.device
                raise GpuLost(f"{name}: {e} (NVML_ERROR_GPU_IS_LOST)") from e
            self.state = f"on; last check: {e}"   # another answer is not a lost GPU: training goes on
