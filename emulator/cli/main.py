"""`twin`: the command line of the cluster twin."""

from __future__ import annotations

import typer

from emulator.cli import topo

app = typer.Typer(no_args_is_help=True, add_completion=False, help=__doc__)
app.add_typer(topo.app, name="topo", help="Inspect and validate topology files.")

if __name__ == "__main__":
    app()
