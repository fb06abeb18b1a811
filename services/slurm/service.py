"""Slurm as a service of the twin: slurmctld and one slurmd per GPU server, run by a daemon of kind
`slurm` that the supervisor starts on demand (`twin slurm up`: no planner)."""

from __future__ import annotations

from emulator.service import DaemonKind, Service
from services.slurm.daemon_spec import SlurmSpec


def stop(run) -> list[str]:  # noqa: ANN001 - emulator.rundir.RunDir
    """Slurm's jobs use the Lustre mounts and the GPU servers: Slurm stops first."""
    from services.slurm.lifecycle import down
    return down(run)


def slurm_client(twin):  # noqa: ANN001, ANN201 - emulator.client.Twin
    """The twin's Slurm: start, stop and query it."""
    from services.slurm.sdk import SlurmClient
    return SlurmClient(twin.run)


SERVICE = Service(
    name="slurm", summary="Slurm on the twin: slurmctld and one slurmd per GPU server.",
    order=60, always_on=True, before_down=stop, down_order=10,
    daemons={"slurm": DaemonKind("services.slurm.daemon:run", SlurmSpec)},
    cli={"slurm": "services.slurm.cli:app"},
    sdk={"slurm": lambda twin: lambda: slurm_client(twin)},
)
