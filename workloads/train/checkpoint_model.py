"""What checkpoints cost and how often to take them (pure).

A checkpoint's write time is training time lost (the seed: "hundreds of GB, written often").
Its time is bytes over the storage bandwidth, or whatever a storage model says: `write_time` takes
an optional callable `(bytes) -> seconds` so that the Lustre (or RBD) estimate plugs in unchanged.

The interval trade-off: checkpoint often and pay the write time; rarely and lose more work per
failure. Young (1974): τ ≈ √(2δM); Daly (2006) refines it and gives the expected wall time of a
run under exponential failures, which `goodput` evaluates. `simulate_goodput` draws failures from
a seeded RNG, for a check of the analytic curve.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass

StorageModel = Callable[[int], float]  # bytes -> modelled seconds


class CheckpointModelError(ValueError):
    pass


def write_time(nbytes: int, gbps: float, storage: StorageModel | None = None) -> float:
    """Modelled seconds to write `nbytes`: `storage(nbytes)` when given, else bytes / (gbps GB/s)."""
    if nbytes < 0:
        raise CheckpointModelError(f"checkpoint size {nbytes} must be >= 0")
    if storage is not None:
        t = float(storage(nbytes))
        if not t >= 0 or not math.isfinite(t):
            raise CheckpointModelError(f"the storage model returned {t!r} seconds for {nbytes} bytes")
        return t
    if gbps <= 0:
        raise CheckpointModelError(f"storage bandwidth {gbps} GB/s must be positive")
    return nbytes / (gbps * 1e9)


def young_interval(delta: float, mtbf: float) -> float:
    """Young's optimum compute time between checkpoints: √(2δM)."""
    _check(delta, mtbf)
    return math.sqrt(2 * delta * mtbf)


def daly_interval(delta: float, mtbf: float) -> float:
    """Daly's higher-order optimum (δ < 2M), else M."""
    _check(delta, mtbf)
    if delta >= 2 * mtbf:
        return mtbf
    x = delta / (2 * mtbf)
    return math.sqrt(2 * delta * mtbf) * (1 + math.sqrt(x) / 3 + x / 9) - delta


def goodput(tau: float, delta: float, mtbf: float, restart: float) -> float:
    """Useful time over wall time with checkpoints every τ of compute, each costing δ, exponential
    failures of mean M, and R to restart (detect, requeue, reload): Daly's
    T_wall / T_solve = M·e^{R/M}·(e^{(τ+δ)/M} − 1) / τ."""
    _check(delta, mtbf)
    if tau <= 0 or restart < 0:
        raise CheckpointModelError(f"interval {tau} must be > 0 and restart {restart} >= 0")
    return tau / (mtbf * math.exp(restart / mtbf) * math.expm1((tau + delta) / mtbf))


@dataclass(frozen=True)
class Simulated:
    goodput: float
    failures: int
    wall_s: float


def simulate_goodput(tau: float, delta: float, mtbf: float, restart: float, work: float,
                     rng: random.Random) -> Simulated:
    """Run `work` seconds of compute in segments of τ (+δ to checkpoint), failures exponential."""
    _check(delta, mtbf)
    if tau <= 0 or work <= 0:
        raise CheckpointModelError("interval and work must be > 0")
    done = wall = 0.0
    failures = 0
    next_fail = rng.expovariate(1 / mtbf)
    while done < work - 1e-9:
        seg = min(tau, work - done)
        need = seg + delta
        if next_fail >= need:
            wall += need
            next_fail -= need
            done += seg
        else:
            wall += next_fail + restart
            failures += 1
            next_fail = rng.expovariate(1 / mtbf)
    return Simulated(work / wall, failures, wall)


def _check(delta: float, mtbf: float) -> None:
    if delta < 0 or mtbf <= 0:
        raise CheckpointModelError(f"checkpoint cost {delta} must be >= 0 and MTBF {mtbf} > 0")
