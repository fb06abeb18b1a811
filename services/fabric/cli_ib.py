"""`twin ib exec TOOL [ARGS]`: run the real infiniband-diags (iblinkinfo, ibnetdiscover, ibroute,
perfquery, smpquery, saquery, ibqueryerrors, ...) against the twin's simulated fabric, as an operator
runs them from a host. Needs a twin started with `--fabric`, and root (as the fabric manager)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Annotated

import typer

from emulator.cli.common import DEFAULT, RunDirOption, connect, fail
from emulator.procutil import pid_alive

app = typer.Typer(no_args_is_help=True, help=__doc__)

SUBNET_INFO = "subnet.json"   # written by services.fabric.daemon


def subnet_info(run_dir: Path) -> dict:
    twin = connect(run_dir)
    found = twin.daemons("fabric")
    if not found:
        fail(f"twin {twin.name!r} runs no fabric manager: start it with `twin up --fabric`")
    path = twin.run.path / "fabric" / found[0].name / SUBNET_INFO
    try:
        info = json.loads(path.read_text())
    except FileNotFoundError:
        fail(f"the fabric manager has not brought its subnet up yet ({path} missing): try again shortly")
    if not pid_alive(info["pid"]):
        fail(f"the fabric manager (pid {info['pid']}) is not running: see `twin status`")
    return info


@app.command("exec", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def exec_(tool: Annotated[str, typer.Argument(help="An infiniband-diags tool, e.g. iblinkinfo.")],
          args: Annotated[list[str] | None, typer.Argument(help="Its arguments.")] = None,
          node: Annotated[str, typer.Option("--node", help="The simulated node the tool runs from (an HCA such "
                                                           "as gpu002-mlx5_0, or a switch); default the first "
                                                           "server's mlx5_0.")] = "",
          run_dir: RunDirOption = DEFAULT) -> None:
    """Run TOOL under ibsim-run against the twin's fabric, e.g. `twin ib exec iblinkinfo`,
    `twin ib exec perfquery 3 1`, `twin ib exec --node gpu004-mlx5_7 ibstat`."""
    if os.geteuid() != 0:
        fail("the simulated fabric is reached through umad2sim as root (as the fabric manager runs)")
    info = subnet_info(run_dir)
    if node and node not in info["hcas"] and node not in info["switches"]:
        fail(f"no node {node!r} in the fabric: an HCA such as {info['hcas'][0]} or a switch such as "
             f"{info['switches'][0]}")
    env = dict(os.environ, IBSIM_SOCKNAME=info["sockname"], SIM_HOST=node or info["diag_node"])
    cmd = ["ibsim-run", tool, *(args or [])]
    # ibsim's sockets are abstract unix sockets, which belong to a network namespace: enter the
    # fabric manager's when it is not ours (a netns twin may run it elsewhere).
    if os.readlink(f"/proc/{info['pid']}/ns/net") != os.readlink("/proc/self/ns/net"):
        cmd = ["nsenter", "-t", str(info["pid"]), "-n", *cmd]
    try:
        raise typer.Exit(subprocess.call(cmd, cwd=info["work"], env=env))
    except FileNotFoundError as e:
        fail(f"{e.filename} not found: apt-get install ibsim-utils infiniband-diags")
