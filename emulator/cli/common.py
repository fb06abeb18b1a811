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
    """Turn the errors a user can cause into one clear line and exit status 2, never a traceback."""
    try:
        yield
    except (UserError, KeyError, ValueError, TimeoutError) as e:
        fail(str(e.args[0]) if isinstance(e, KeyError) and e.args else str(e))


def connect(run_dir: Path) -> Twin:
    with user_errors():
        return Twin.connect(run_dir)
