"""`twin fault ...`: inject, clear and list faults on the emulated GPU servers."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from clustertwin.v1 import gpu_node_pb2 as pb
from emulator.cli.common import DEFAULT, RunDirOption, connect, console, fail, user_errors
from emulator.client import FAULT_KINDS

app = typer.Typer(no_args_is_help=True, help=__doc__)


@app.command()
def inject(
    node: Annotated[str, typer.Argument(help="GPU server name, e.g. gpu001.")],
    gpu: Annotated[int, typer.Option(help="GPU index 0..7.")],
    xid: Annotated[int, typer.Option(help="Inject this Xid (13, 31, 48, 63, 64, 74, 79, 94, 95, 119, 120, ...).")] = 0,
    kind: Annotated[str, typer.Option(help=f"Fault kind: {', '.join(FAULT_KINDS)}.")] = "",
    link: Annotated[int, typer.Option(help="NVLink link for nvlink-down.")] = 0,
    count: Annotated[int, typer.Option(help="Error count for ecc-sbe.")] = 0,
    lease: Annotated[str, typer.Option(help="The lease (job) an Xid 94 or application Xid hits.")] = "",
    run_dir: RunDirOption = DEFAULT,
) -> None:
    """Inject a fault; prints its id and its consequence."""
    if not kind:
        kind = "xid" if xid else ""
    if not kind:
        fail("say what to inject: --xid N or --kind KIND")
    if kind == "xid" and not xid:
        fail("--kind xid needs --xid N")
    with user_errors():
        f = connect(run_dir).gpu_node(node).inject_fault(kind, gpu, xid=xid, link=link, count=count, lease_id=lease)
    console.print(f"fault {f.id} on {node} GPU {f.gpu}: {f.effect}", highlight=False)


@app.command()
def clear(node: Annotated[str, typer.Argument(help="GPU server name.")],
          fault_id: Annotated[str, typer.Argument(help="Fault id from `twin fault list`.")],
          run_dir: RunDirOption = DEFAULT) -> None:
    """Clear an active fault (what it broke may still need a GPU reset or a reboot)."""
    with user_errors():
        f = connect(run_dir).gpu_node(node).clear_fault(fault_id)
    console.print(f"fault {f.id} on {node} cleared")


@app.command("list")
def list_faults(run_dir: RunDirOption = DEFAULT,
                node: Annotated[list[str] | None, typer.Option("--node", "-n", help="Only these servers.")] = None,
                cleared: Annotated[bool, typer.Option("--all", help="Include cleared faults.")] = False) -> None:
    """Faults across the twin."""
    twin = connect(run_dir)
    table = Table("node", "fault", "kind", "gpu", "xid", "active", "effect")
    with user_errors():
        for name in node or twin.gpu_nodes:
            for f in twin.gpu_node(name).faults(include_cleared=cleared):
                table.add_row(name, f.id, pb.FaultKind.Name(f.kind).removeprefix("FAULT_KIND_").lower(), str(f.gpu),
                              str(f.xid or "-"), str(f.active), f.effect)
    console.print(table)
