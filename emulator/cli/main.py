"""`twin`: run and drive a digital twin of a GPU training cluster.

The twin's own commands are here; each service adds its sub-apps through its registration
(emulator/service.py, `Service.cli`), and each workload its command through the entry-point group
`clustertwin.commands` (pyproject.toml), so this package imports neither.
"""

from __future__ import annotations

from importlib.metadata import entry_points

import typer

from emulator.cli import events, fault, lifecycle_cmds, net, topo
from emulator.service import load, services

app = typer.Typer(no_args_is_help=True, add_completion=False, help=__doc__.split("\n\n")[0])
app.add_typer(topo.app, name="topo", help="Inspect and validate topology files.")
app.command()(lifecycle_cmds.up)
app.command()(lifecycle_cmds.down)
app.command()(lifecycle_cmds.status)
app.command()(lifecycle_cmds.endpoints)
app.add_typer(fault.app, name="fault", help="Inject, clear and list faults.")
app.add_typer(net.app, name="net", help="The emulated network planes (namespace backend).")
app.command()(events.events)


def short(text: str | None) -> str | None:
    """A sub-app's first paragraph, for the command list (its own --help keeps the whole text)."""
    return " ".join(text.split("\n\n")[0].split()) if text else None


for service in services().values():
    for name, ref in service.cli.items():
        sub = load(ref)
        app.add_typer(sub, name=name, short_help=short(sub.info.help))
for ep in sorted(entry_points(group="clustertwin.commands"), key=lambda ep: ep.name):
    command = ep.load()
    if isinstance(command, typer.Typer):
        app.add_typer(command, name=ep.name, short_help=short(command.info.help))
    else:
        app.command(name=ep.name)(command)

if __name__ == "__main__":
    app()
