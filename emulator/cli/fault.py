"""`twin fault ...`: inject, clear and list faults on the emulated GPU servers and Ceph OSDs
(`list` also shows the network's and Lustre's, which `twin net fault` and `twin lustre fault` make).

    twin fault inject gpu001 --gpu 3 --xid 79
    twin fault inject osd.4 --kind stop|kill|out
    twin fault inject osd.4 --kind slow --factor 10
    twin fault inject osd.4 --kind corrupt --object NAME [--pool POOL]
    twin fault clear osd.4 osd.4-1          # start / heal / mark in / repair the PG
    twin fault list

OSD faults (a twin started with `--ceph`) go through the Ceph admin calls (`twin ceph osd ...`); the
monitor records each one and publishes it on the bus (events/ceph/fault, retained faults/ceph/<id>).
"""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from clustertwin.v1 import gpu_node_pb2 as pb
from emulator.cli import ceph_faults
from emulator.cli.common import DEFAULT, RunDirOption, connect, console, fail, user_errors
from emulator.client import FAULT_KINDS
from emulator.network.errors import NetworkError

app = typer.Typer(no_args_is_help=True, help=__doc__)


@app.command()
def inject(
    node: Annotated[str, typer.Argument(help="GPU server name, e.g. gpu001, or a Ceph OSD, e.g. osd.4.")],
    gpu: Annotated[int | None, typer.Option(help="GPU index 0..7 (GPU servers).")] = None,
    xid: Annotated[int, typer.Option(help="Inject this Xid (13, 31, 48, 63, 64, 74, 79, 94, 95, 119, 120, ...).")] = 0,
    kind: Annotated[str, typer.Option(help=f"Fault kind: {', '.join(FAULT_KINDS)}.")] = "",
    link: Annotated[int, typer.Option(help="NVLink link for nvlink-down.")] = 0,
    count: Annotated[int, typer.Option(help="Error count for ecc-sbe.")] = 0,
    lease: Annotated[str, typer.Option(help="The lease (job) an Xid 94 or application Xid hits.")] = "",
    factor: Annotated[float, typer.Option(help="Slow-disk factor for an OSD's --kind slow (> 1).")] = 0.0,
    obj: Annotated[str, typer.Option("--object", help="RADOS object for an OSD's --kind corrupt.")] = "",
    pool: Annotated[str, typer.Option(help="Pool of --object.")] = "default.rgw.buckets.data",
    run_dir: RunDirOption = DEFAULT,
) -> None:
    """Inject a fault; prints its id and its consequence."""
    if ceph_faults.is_osd(node):
        f = ceph_faults.inject(run_dir, node, kind, factor=factor, obj=obj, pool=pool)
        console.print(f"fault {f.id} on {node}: {f.effect}", highlight=False)
        return
    if gpu is None:
        fail("say which GPU: --gpu N (0..7)")
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
    if ceph_faults.is_osd(node):
        f = ceph_faults.clear(run_dir, node, fault_id)
        console.print(f"fault {f.id} on {node} cleared", highlight=False)
        return
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
        for name in [n for n in node or twin.gpu_nodes if not ceph_faults.is_osd(n)]:
            for f in twin.gpu_node(name).faults(include_cleared=cleared):
                table.add_row(name, f.id, pb.FaultKind.Name(f.kind).removeprefix("FAULT_KIND_").lower(), str(f.gpu),
                              str(f.xid or "-"), str(f.active), f.effect)
        osds = [n for n in node or [] if ceph_faults.is_osd(n)]
        if not node or osds:
            for f in ceph_faults.faults(run_dir, cleared):
                if not osds or f"osd.{f.osd}" in osds:
                    table.add_row(f"osd.{f.osd}", f.id, f.kind, "-", "-", str(f.active), f.effect)
        if not node:   # the network's (netns) and Lustre's faults, through the SDK
            everywhere = twin.faults()
            try:
                others = [*everywhere.network(cleared), *everywhere.lustre()]
            except NetworkError as e:
                fail(str(e))
            for f in others:
                table.add_row(f.target, f.id, f.kind, "-", "-", str(f.active), f.effect)
    console.print(table)
