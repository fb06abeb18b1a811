"""`twin net ...`: the emulated network (the `mininet` backend): what it emulates, commands inside
its hosts, and clean-up."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from emulator.cli.common import DEFAULT, RunDirOption, console, fail
from emulator.network import Network, NetworkError, clean_network

app = typer.Typer(no_args_is_help=True, help=__doc__)

StateDirOption = Annotated[
    Path | None,
    typer.Option("--state-dir", help="The network's state directory (default: <run-dir>/network)."),
]


def _state_dir(run_dir: Path, state_dir: Path | None) -> Path:
    return state_dir if state_dir is not None else run_dir / "network"


def _attach(run_dir: Path, state_dir: Path | None) -> Network:
    try:
        return Network.attach(_state_dir(run_dir, state_dir))
    except NetworkError as e:
        fail(f"{e} (is the twin up with --network mininet?)")


@app.command()
def show(run_dir: RunDirOption = DEFAULT, state_dir: StateDirOption = None,
         as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False) -> None:
    """Per plane: what is emulated and how (routing, isolation, bandwidth, loss, latency)."""
    info = _attach(run_dir, state_dir).show()
    if as_json:
        console.print_json(json.dumps(info))
        return
    console.print(f"network [bold]{info['prefix']}[/] ({info['topology']}): {info['namespaces']} namespaces, "
                  f"{info['veth_pairs']} veth pairs, {info['cables']} cables", highlight=False)
    table = Table("plane", "prefix", "nodes", "forwarding", "isolation", "bandwidth", "loss", "latency",
                  show_lines=True)
    for plane, p in info["planes"].items():
        nodes = f"{p['hosts']} hosts, " + (f"{p['routers']} routers" if "routers" in p else f"{p['switches']} bridges")
        rate = p["rate"] + (f" → {p['emulated_rate']}" if p.get("emulated_rate") else "")
        table.add_row(plane, p["prefix"], nodes, p["forwarding"], p["isolation"], f"{rate}: {p['bandwidth']}",
                      p["loss"], p["latency"])
    console.print(table)
    if info["faults"]:
        console.print("active faults: " + ", ".join(f"{f['id']} {f['kind']} {f['target']}" for f in info["faults"]),
                      highlight=False)


@app.command("exec", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def exec_(host: Annotated[str, typer.Argument(help="Host (gpu001) or switch namespace (ib-leaf01).")],
          cmd: Annotated[list[str], typer.Argument(help="The command and its arguments.")],
          run_dir: RunDirOption = DEFAULT, state_dir: StateDirOption = None) -> None:
    """Run a command inside an emulated host, e.g. `twin net exec gpu001 -- ping -c 1 10.100.0.4`."""
    net = _attach(run_dir, state_dir)
    try:
        ns = net.netns(host)
    except NetworkError as e:
        fail(str(e))
    if os.geteuid() != 0:
        fail("entering a network namespace needs root")
    raise typer.Exit(subprocess.call(["ip", "netns", "exec", ns, *cmd]))


@app.command()
def clean(run_dir: RunDirOption = DEFAULT, state_dir: StateDirOption = None,
          prefix: Annotated[str | None, typer.Option(help="Remove every namespace named PREFIX-* instead.")] = None
          ) -> None:
    """Remove the network's namespaces, interfaces, bridges, routes, nftables tables and the processes
    left inside them; only this network's. Safe to run twice."""
    if os.geteuid() != 0:
        fail("removing network namespaces needs root")
    try:
        done = clean_network(prefix if prefix else _state_dir(run_dir, state_dir))
    except NetworkError as e:
        fail(str(e))
    console.print(f"removed {done['namespaces']} namespaces and {done['processes']} processes", highlight=False)
