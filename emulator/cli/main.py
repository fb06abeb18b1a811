"""`twin`: run and drive a digital twin of a GPU training cluster."""

from __future__ import annotations

import typer

from emulator.cli import events, fault, gpu, lifecycle_cmds, net, topo

app = typer.Typer(no_args_is_help=True, add_completion=False, help=__doc__)
app.add_typer(topo.app, name="topo", help="Inspect and validate topology files.")
app.command()(lifecycle_cmds.up)
app.command()(lifecycle_cmds.down)
app.command()(lifecycle_cmds.status)
app.command()(lifecycle_cmds.endpoints)
app.add_typer(gpu.app, name="gpu", help="The emulated GPU servers: GPUs, MIG, leases, resets.")
app.add_typer(fault.app, name="fault", help="Inject, clear and list faults.")
app.add_typer(net.app, name="net", help="The emulated network planes (namespace backend).")
app.command()(events.events)

if __name__ == "__main__":
    app()
