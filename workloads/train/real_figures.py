"""The figures of a `twin train --real` run, from rank 0's progress events: pure, no I/O.

- ranks started (per attempt: torchrun's elastic agent restarts the group, maybe smaller);
- steps/s of the attempt that finished;
- the measured all-reduce time against the collective model's (services/fabric/collectives.py)
  prediction for the same scaled fabric: the same ranks per server and servers, a ring (gloo's
  algorithm), with each NIC's bandwidth scaled as the twin shapes its rails (nic_gbps ×
  bandwidth_scale) and the rails the ranks found up (rails.py). NVLink and the per-step latencies
  stay as calibrated: on the twin the ranks of one server talk over the namespace's loopback, which
  is not shaped, and latency is not emulated;
- the time from a fault to training resumed: from the fault's wall time to the first step the
  restarted group completed;
- the ranks that stopped because NVML said their GPU was lost (`gpu_lost`, from any rank).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from services.fabric.calibration import DEFAULT
from services.fabric.collectives import CollectiveError, FabricView, estimate


def predicted_allreduce(nbytes: int, ranks: int, per_server: int, bandwidth_scale: float | None,
                        rails_up: int | None = None) -> dict[str, Any]:
    """The model's ring all-reduce of `nbytes` over `ranks` ranks, `per_server` on each server, each
    server with `rails_up` compute rails up (None: all)."""
    cal = DEFAULT if not bandwidth_scale else dataclasses.replace(DEFAULT, nic_gbps=DEFAULT.nic_gbps * bandwidth_scale)
    servers = ranks // per_server
    fabric = (FabricView.healthy(servers) if rails_up is None else
              FabricView(rails_up={f"server{i}": rails_up for i in range(servers)}, rails=cal.rails))
    try:
        e = estimate("all_reduce", nbytes, ranks, "ring", fabric, gpus_per_server=per_server, cal=cal)
    except CollectiveError as err:
        return {"error": str(err)}
    return {"time_s": e.time_s, "bottleneck": e.bottleneck, "nic_gbps": cal.nic_gbps, "modelled": True}


def attempts(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One entry per group start: world size, restart count, step resumed from, first step done."""
    out: list[dict[str, Any]] = []
    for e in events:
        if e["kind"] == "started":
            out.append({"t": e["t"], "world": e["world"], "restart": e["restart"],
                        "resumed_from": e["resumed_from"], "first_step_t": None})
        elif e["kind"] == "step" and out and out[-1]["first_step_t"] is None:
            out[-1]["first_step_t"] = e["t"]
    return out


def figures(run: dict[str, Any], per_server: int, bandwidth_scale: float | None,
            fault_t: float | None = None) -> dict[str, Any]:
    evs = run["events"]
    tries = attempts(evs)
    fin = next((e for e in evs if e["kind"] == "finished"), None)
    ar = [e for e in evs if e["kind"] == "allreduce"]
    out: dict[str, Any] = {
        "ranks_started": [a["world"] for a in tries], "attempts": tries,
        "steps_per_s": fin["steps_per_s"] if fin else None, "last_step": max(
            (e["step"] for e in evs if e["kind"] in ("step", "finished")), default=0),
        "checkpoints": [e["step"] for e in evs if e["kind"] == "checkpoint"],
        "checkpoints_at": [(e["step"], e["t"]) for e in evs if e["kind"] == "checkpoint"],
        "dataset_files": next((e.get("dataset_files") for e in evs if e["kind"] == "started"), None),
        "nvml": next((e.get("nvml") for e in evs if e["kind"] == "started"), None),
        "gpu_lost": [e for e in evs if e["kind"] == "gpu_lost"]}
    if ar:
        first = ar[0]  # the full group's, before any fault
        pred = predicted_allreduce(first["bytes"], first["world"], per_server, bandwidth_scale, first.get("rails_up"))
        out["allreduce"] = {"bytes": first["bytes"], "ranks": first["world"], "measured_s": first["median_s"],
                            "channels": first.get("channels"), "rails_up": first.get("rails_up"),
                            "predicted": pred, "measured_over_predicted":
                            first["median_s"] / pred["time_s"] if pred.get("time_s") else None}
        last = ar[-1]  # the last attempt's: on the rails left after a leaf switch was lost
        pred = predicted_allreduce(last["bytes"], last["world"], per_server, bandwidth_scale, last.get("rails_up"))
        out["allreduce_last"] = {"ranks": last["world"], "measured_s": last["median_s"],
                                 "channels": last.get("channels"), "rails_up": last.get("rails_up"),
                                 "predicted_s": pred.get("time_s")}
    if fault_t is not None:
        after = [a for a in tries if a["t"] > fault_t and a["first_step_t"] is not None]
        out["fault_to_resumed_s"] = after[0]["first_step_t"] - fault_t if after else None
        out["resumed_from_step"] = after[0]["resumed_from"] if after else None
    return out
