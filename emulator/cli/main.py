"""`twin`: run and drive a digital twin of a GPU training cluster."""

from __future__ import annotations

import typer

from emulator.cli import (
    ceph,
    chaos,
    drill,
    events,
    fabric,
    fault,
    gpu,
    ib,
    lifecycle_cmds,
    lustre,
    net,
    slurm,
    stage,
    topo,
    train,
)

app = typer.Typer(no_args_is_help=True, add_completion=False, help=__doc__)
app.add_typer(topo.app, name="topo", help="Inspect and validate topology files.")
app.command()(lifecycle_cmds.up)
app.command()(lifecycle_cmds.down)
app.command()(lifecycle_cmds.status)
app.command()(lifecycle_cmds.endpoints)
app.add_typer(gpu.app, name="gpu", help="The emulated GPU servers: GPUs, MIG, leases, resets.")
app.add_typer(fault.app, name="fault", help="Inject, clear and list faults.")
app.add_typer(net.app, name="net", help="The emulated network planes (namespace backend).")
app.add_typer(fabric.app, name="fabric", help="The InfiniBand fabric: subnet manager, UFM views, SHARP, "
              "collective-time model.")
app.add_typer(ib.app, name="ib", help="Run infiniband-diags against the twin's simulated fabric.")
app.command()(events.events)
app.add_typer(slurm.app, name="slurm", help="Slurm on the twin: slurmctld and one slurmd per GPU server.")
app.add_typer(ceph.app, name="ceph", help="Ceph on the twin (`twin up --ceph`): status, health, OSDs, PGs, RGW users.")
app.add_typer(lustre.app, name="lustre", help="Lustre on the twin: mount it through FUSE, and `lfs`.")
app.command()(train.train)
app.command()(stage.stage)
app.command()(chaos.chaos)
app.add_typer(drill.app, name="drill", help="Failure drills: run a YAML drill, check its expectations, report.")

if __name__ == "__main__":
    app()
