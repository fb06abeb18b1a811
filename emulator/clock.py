"""The twin's clock: wall time, optionally accelerated.

Models never read the wall clock; daemons read this clock and pass `now` in. With `scale` > 1 the
twin runs faster than real time (a two-week training run in minutes); every daemon of one twin uses
the same epoch and scale, taken from the manifest, so their timestamps agree.
"""

from __future__ import annotations

import time
from dataclasses import dataclass


@dataclass(frozen=True)
class Clock:
    epoch: float = 0.0  # wall time (s) at which twin time 0 began; 0 means "twin time = wall time"
    scale: float = 1.0  # twin seconds per wall second

    def now(self) -> float:
        wall = time.time()
        if self.epoch == 0.0 and self.scale == 1.0:
            return wall
        return self.epoch + (wall - self.epoch) * self.scale

    def wall_seconds(self, twin_seconds: float) -> float:
        """How long to sleep in wall time for `twin_seconds` of twin time to pass."""
        return twin_seconds / self.scale
