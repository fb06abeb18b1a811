"""Per-GPU telemetry samples, the payload of `PREFIX/telemetry/<node>/gpu/<index>` (docs/EVENTS.md)."""

from __future__ import annotations

from typing import Any

from services.gpu_node.model import NodeModel


def samples(model: NodeModel, now: float) -> list[dict[str, Any]]:
    """One JSON-ready sample per visible GPU; a lost GPU reports nothing, as DCGM cannot read it."""
    out = []
    for v in model.list_gpus(nvlinks=False):
        if v.lost:
            continue
        out.append({
            "time": now, "node": model.spec.name, "gpu": v.index, "uuid": v.uuid,
            "power_w": v.power_w, "temperature_c": v.temperature_c, "memory_temperature_c": v.memory_temperature_c,
            "gpu_util": v.gpu_util, "mem_copy_util": v.mem_copy_util, "sm_clock_mhz": v.sm_clock_mhz,
            "mem_clock_mhz": v.mem_clock_mhz, "memory_used_mib": v.memory_used_mib,
            "memory_free_mib": v.memory_free_mib, "total_energy_mj": v.total_energy_mj,
            "health": v.health.name, "last_xid": v.last_xid, "throttle_reasons": list(v.clock_throttle_reasons),
        })
    return out
