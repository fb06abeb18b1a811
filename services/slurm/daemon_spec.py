"""The spec of the Slurm daemon (DaemonConfig.spec, typed): what `twin slurm up` gives it
(services/slurm/lifecycle.py) and what it parses at start (a malformed spec stops it with the field named)."""

from __future__ import annotations

from emulator.daemon_config import DaemonSpec
from services.slurm.config import SLURMD_TIMEOUT_S


class SlurmSpec(DaemonSpec):
    timeout: float = 120.0          # seconds for every node to register
    health_interval: int = -1       # HealthCheckInterval; 0: none; < 0: healthcheck.auto_interval
    slurmd_timeout: int = SLURMD_TIMEOUT_S   # slurm.conf's SlurmdTimeout
