"""`twin nvml ...`: the twin's libnvidia-ml.so.1 (native/nvml/, docs/NVML.md), for real NVML clients
(pynvml, nvitop, gpustat) on the host, pointed at one GPU server."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Annotated
from urllib.parse import urlsplit

import typer

from emulator.cli.common import DEFAULT, RunDirOption, connect, fail, user_errors
from services.gpu_node.nvml_endpoint import LIB_DIR, LIB_NAME

app = typer.Typer(no_args_is_help=True, help=__doc__)


def lib_dir() -> Path:
    """Where `make install` (make -C native/nvml) built the library; an error if it has not."""
    if not (LIB_DIR / LIB_NAME).exists():
        fail(f"{LIB_DIR / LIB_NAME} is not built: run `make install` (or `make -C native/nvml`)")
    return LIB_DIR


def daemon_address(run_dir: Path, node: str) -> str:
    """HOST:PORT of the server's HTTP port, where its daemon serves GET /nvml."""
    with user_errors():
        d = connect(run_dir).daemon(node)
    if d.kind != "gpu_node":
        fail(f"{node!r} is a {d.kind}, not a GPU server")
    if not d.metrics:
        fail(f"{node} serves no HTTP port (its metrics are off), so no NVML")
    return urlsplit(d.metrics).netloc


@app.command()
def env(node: Annotated[str, typer.Argument(help="GPU server name, e.g. gpu001.")], run_dir: RunDirOption = DEFAULT,
        ) -> None:
    """Print the shell lines that point NVML clients at NODE: `eval "$(twin nvml env gpu001)"`."""
    address = daemon_address(run_dir, node)
    lib = lib_dir()
    print(f"export LD_LIBRARY_PATH={shlex.quote(str(lib))}${{LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}}")
    print(f"export CLUSTERTWIN_NVML={shlex.quote(address)}")


@app.command()
def lib() -> None:
    """Print the directory holding libnvidia-ml.so.1 (for LD_LIBRARY_PATH)."""
    print(lib_dir())
