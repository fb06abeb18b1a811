"""`twin`: run and drive a digital twin of a GPU training cluster."""

from __future__ import annotations

import typer

from emulator.cli import chaos, drill, events, fault, lifecycle_cmds, net, stage, topo, train
from emulator.service import load, services

app = typer.Typer(no_args_is_help=True, add_completion=False, help=__doc__)
app.add_typer(topo.app, name="topo", help="Inspect and validate topology files.")
app.command()(lifecycle_cmds.up)
app.command()(lifecycle_cmds.down)
app.command()(lifecycle_cmds.status)
app.command()(lifecycle_cmds.endpoints)
app.add_typer(fault.app, name="fault", help="Inject, clear and list faults.")
app.add_typer(net.app, name="net", help="The emulated network planes (namespace backend).")
app.command()(events.events)
# Each service's own commands (`twin gpu`, `twin ceph`, `twin lustre`, ...), as it registered them.
for service in services().values():
    for name, ref in service.cli.items():
        app.add_typer(load(ref), name=name)
app.command()(train.train)
app.command()(stage.stage)
app.command()(chaos.chaos)
app.add_typer(drill.app, name="drill", help="Failure drills: run a YAML drill, check its expectations, report.")

if __name__ == "__main__":
    app()
