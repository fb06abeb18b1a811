"""The checkpoint-interval study: goodput against checkpoint interval for a given failure rate,
from the model alone (no twin needed), with Young's and Daly's optima as reference lines and a
seeded Monte-Carlo check of the analytic curve.

    study: {mtbf_hours: 8, restart_min: 12, intervals_min: [5, 10, ...], work_hours: 336, trials: 20}

The checkpoint cost δ is the workload's modelled write time (checkpoint bytes / storage bandwidth).
"""

from __future__ import annotations

import random
from typing import Any

from emulator.errors import BadInput
from workloads.train.checkpoint_model import daly_interval, goodput, simulate_goodput, write_time, young_interval
from workloads.train.config import TrainConfig
from workloads.train.step import step_time

DEFAULT_INTERVALS_MIN = (2, 5, 10, 15, 20, 30, 45, 60, 90, 120, 180, 240)


def run_study(study: dict[str, Any], cfg: TrainConfig, seed: int) -> dict[str, Any]:
    known = {"mtbf_hours", "restart_min", "intervals_min", "work_hours", "trials"}
    bad = sorted(set(study) - known)
    if bad:
        raise BadInput(f"study: unknown key(s) {', '.join(bad)}; known: {', '.join(sorted(known))}")
    mtbf = float(study.get("mtbf_hours", 8)) * 3600
    restart = float(study.get("restart_min", 12)) * 60
    work = float(study.get("work_hours", 336)) * 3600
    trials = int(study.get("trials", 20))
    intervals = [float(x) * 60 for x in study.get("intervals_min", DEFAULT_INTERVALS_MIN)]
    if mtbf <= 0 or restart < 0 or work <= 0 or trials < 1 or not intervals or min(intervals) <= 0:
        raise BadInput("study: mtbf_hours, work_hours > 0, restart_min >= 0, trials >= 1, intervals > 0")
    delta = write_time(cfg.checkpoint_bytes, cfg.storage_gbps)
    step = step_time(cfg).total_s
    rng = random.Random(seed)
    points = []
    for tau in intervals:
        sims = [simulate_goodput(tau, delta, mtbf, restart, work, rng) for _ in range(trials)]
        points.append({"interval_s": tau, "interval_steps": max(1, round(tau / step)),
                       "goodput_model": round(goodput(tau, delta, mtbf, restart), 6),
                       "goodput_simulated": round(sum(s.goodput for s in sims) / trials, 6),
                       "failures_mean": round(sum(s.failures for s in sims) / trials, 3)})
    young, daly = young_interval(delta, mtbf), daly_interval(delta, mtbf)
    best = max(points, key=lambda p: p["goodput_model"])
    return {"checkpoint_write_s": delta, "step_s": step, "mtbf_s": mtbf, "restart_s": restart, "work_s": work,
            "trials": trials, "points": points, "young_s": young, "daly_s": daly,
            "goodput_at_daly": round(goodput(daly, delta, mtbf, restart), 6),
            "best_interval_s": best["interval_s"], "best_goodput": best["goodput_model"],
            "modelled": "analytic (Daly 2006, exponential failures) and seeded Monte-Carlo; no twin involved"}
