"""The twin's Slurm (slurmctld and one slurmd per GPU server): `Twin.slurm()`.

    slurm = twin.slurm()
    slurm.up()                                 # what `twin slurm up` does; returns its state document
    slurm.sinfo("-h", "-N", "-o", "%N %T").stdout
    slurm.nodes()                              # {"gpu001": {"state": "idle", "gres": ..., "reason": ""}, ...}
    subprocess.run(["sbatch", "--wrap", "hostname"], env=os.environ | slurm.env())
    slurm.down()

The Slurm commands run as real `sinfo`/`squeue`/`scontrol` with the twin's SLURM_CONF.
"""

from __future__ import annotations

import os
import subprocess
from typing import Any

from emulator.rundir import RunDir
from services.slurm.config import SLURMD_TIMEOUT_S


class SlurmClient:
    def __init__(self, run: RunDir) -> None:
        self.run = run

    def up(self, timeout: float = 120.0, health_interval: int = -1,
           slurmd_timeout: int = SLURMD_TIMEOUT_S) -> dict[str, Any]:
        """Start Slurm on the running twin; returns once every node is registered (SlurmTwinError if not)."""
        from services.slurm import lifecycle
        return lifecycle.up(self.run, timeout=timeout, health_interval=health_interval,
                            slurmd_timeout=slurmd_timeout)

    def down(self) -> list[str]:
        """Stop it (jobs, daemons, job processes); what was stopped. Idempotent."""
        from services.slurm import lifecycle
        return lifecycle.down(self.run)

    def running(self) -> int | None:
        """The pid of the process running the twin's Slurm, or None."""
        from services.slurm import lifecycle
        return lifecycle.running(self.run)

    def status(self) -> dict[str, Any]:
        """`twin slurm status --json`: pid, state, SLURM_CONF, nodes, last error."""
        from services.slurm import lifecycle
        return lifecycle.status(self.run)

    def nodes(self) -> dict[str, dict[str, str]]:
        """Node name → state, GRES and drain reason, as sinfo reports them now."""
        return self.status()["nodes"]

    def env(self) -> dict[str, str]:
        """The environment a Slurm command needs for this twin (SLURM_CONF)."""
        from services.slurm import lifecycle
        return lifecycle.env(self.run)

    def command(self, tool: str, *args: str, timeout: float = 20.0) -> subprocess.CompletedProcess:
        """Run a Slurm tool (sinfo, squeue, scontrol, sbatch, scancel, ...) against this twin."""
        return subprocess.run([tool, *args], env=dict(os.environ, **self.env()), capture_output=True, text=True,
                              timeout=timeout, check=False)

    def sinfo(self, *args: str) -> subprocess.CompletedProcess:
        return self.command("sinfo", *args)

    def squeue(self, *args: str) -> subprocess.CompletedProcess:
        return self.command("squeue", *args)
