"""How long a chunk operation takes on an OSD's device: the one place the device numbers live.

A call costs `latency + bytes / bandwidth`, times the OSD's slow-disk factor (a fault: 1 is a
healthy disk). One operation at a time per device, so concurrent calls queue as on a real disk.
The figures are documented defaults for the seed's hardware classes (FIDELITY §4 names the classes,
not their speeds):

| class | latency | bandwidth | what |
|---|---|---|---|
| hdd | 8 ms | 250 MB/s | 7200 rpm nearline 18–20 TB drive: ~4 ms seek + ~4 ms rotation; outer-track streaming rate |
| ssd | 0.1 ms | 2 GB/s | datacenter NVMe/SAS SSD for index, metadata and RBD pools |

`twin up --ceph --storage-timing fast` skips these waits (and the one-at-a-time queue): the OSD does
its file I/O and answers (a slow-disk fault still waits), for test suites that want Ceph's semantics
without the disks' time. The default, `model`, keeps them.

Durations are wall seconds (not twin seconds): `twin up --clock-scale` accelerates timers such as
heartbeats and down→out, not the disks.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DeviceModel:
    device_class: str
    latency_s: float
    bandwidth_bytes_s: float

    def seconds(self, nbytes: int, slow_factor: float = 1.0) -> float:
        return (self.latency_s + nbytes / self.bandwidth_bytes_s) * slow_factor


DEVICE_MODELS: dict[str, DeviceModel] = {
    "hdd": DeviceModel("hdd", 0.008, 250e6),
    "ssd": DeviceModel("ssd", 0.0001, 2e9),
}


def model_for(device_class: str) -> DeviceModel:
    try:
        return DEVICE_MODELS[device_class]
    except KeyError:
        raise ValueError(f"unknown device class {device_class!r}; known: {', '.join(DEVICE_MODELS)}") from None
