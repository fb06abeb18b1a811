"""`twin lustre lctl`: lctl's get_param and set_param for the client mounts of the twin and its MDT
(services/lustre/lctl.py)."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from emulator.cli.common import DEFAULT, RunDirOption
from emulator.rundir import RunDir

app = typer.Typer(no_args_is_help=True, help="`lctl`: the tunables of every `twin lustre mount`, and the MDT's "
                                              "(mdd.*) as on the MDS node.")


def _run(fn, *args, **kw) -> None:  # noqa: ANN001
    from services.lustre.lctl import LctlError

    try:
        print(fn(*args, **kw), end="")
    except LctlError as e:
        print(str(e), file=sys.stderr)
        raise typer.Exit(e.errno) from None


@app.command("get_param")
def get_param(patterns: Annotated[list[str], typer.Argument(help="Parameters, globs allowed: osc.*.max_dirty_mb")],
              values_only: Annotated[bool, typer.Option("-n", help="Print only the values.")] = False,
              names_only: Annotated[bool, typer.Option("-N", help="Print only the names.")] = False,
              run_dir: RunDirOption = DEFAULT) -> None:
    """Print parameters as NAME=VALUE, one a line."""
    from services.lustre import lctl

    _run(lctl.get_param, RunDir(run_dir).path, patterns, values_only=values_only, names_only=names_only)


@app.command("set_param")
def set_param(assignments: Annotated[list[str], typer.Argument(help="NAME=VALUE, globs allowed in NAME.")],
              quiet: Annotated[bool, typer.Option("-n", help="Print nothing.")] = False,
              run_dir: RunDirOption = DEFAULT) -> None:
    """Set parameters of the live clients and the MDT; every one is checked before any is set."""
    from services.lustre import lctl

    _run(lctl.set_param, RunDir(run_dir).path, assignments, quiet=quiet)
