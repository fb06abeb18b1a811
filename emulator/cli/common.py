"""What every `twin` command shares: the run-directory option, connecting, and user-facing errors."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, NoReturn

import typer
from rich.console import Console

from emulator.client import Twin
from emulator.errors import UserError
from emulator.rundir import DEFAULT_RUN_DIR

console = Console()
err_console = Console(stderr=True)

RunDirOption = Annotated[Path, typer.Option("--run-dir", help="The twin's run directory.", envvar="TWIN_RUN_DIR")]
DEFAULT = DEFAULT_RUN_DIR


def fail(message: str, code: int = 2) -> NoReturn:
    err_console.print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)


@contextmanager
def user_errors() -> Iterator[None]:
    """Turn the errors a user can cause (emulator.errors.UserError; a wait that timed out) into one clear
    line and exit status 2. A KeyError or ValueError is not caught: it is a bug, and shows as one."""
    try:
        yield
    except (UserError, TimeoutError) as e:   # anything else is a bug: its traceback shows
        fail(str(e))


def connect(run_dir: Path) -> Twin:
    with user_errors():
        return Twin.connect(run_dir)
