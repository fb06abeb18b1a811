"""`twin fault inject|clear|list`: every subsystem's faults through the one fault API (Twin.faults()),
each with an id in the twin's fault log and an event on the bus (events/twin/fault, fault_clear).

    twin fault inject gpu gpu001 xid --gpu 3 --xid 79        # SUBSYSTEM TARGET KIND [options]
    twin fault inject ceph osd.4 out                         # ceph osd out 4
    twin fault inject network ib-leaf01:ib-spine01 link-down
    twin fault inject fabric ib-leaf01/3 port-down
    twin fault inject lustre oss01 oss-kill
    twin fault inject slurm gpu002 drain --reason "bad DIMM" # scontrol update nodename=gpu002 state=drain ...
    twin fault list [--all] [--subsystem S]
    twin fault clear fault-7

Shortcuts kept: `twin fault inject gpu001 --gpu 3 --xid 79` and `twin fault inject osd.4 --kind slow
--factor 10` (the subsystem from the target), `twin fault clear NODE ID` with a subsystem's own id.
The per-subsystem commands (`twin net fault`, `twin lustre fault`, ...) make faults this list adopts.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer
from rich.table import Table

from emulator.cli.common import DEFAULT, RunDirOption, connect, console, fail
from emulator.errors import UserError
from emulator.sdk.faults import BACKENDS, SUBSYSTEMS

app = typer.Typer(no_args_is_help=True, help=__doc__)

KINDS_HELP = "; ".join(f"{s}: {', '.join(b.kinds)}" for s, b in BACKENDS.items())


def _refusals() -> Any:
    """The errors a fault request can meet that are the request's or the twin's, not a bug: FaultError,
    a subsystem not answering (TwinRpcError), a refusal of the network (NetworkError), ..."""
    return UserError


def _infer(twin: Any, target: str) -> str:
    if target.startswith("osd."):
        return "ceph"
    if target in twin.gpu_nodes:
        return "gpu"
    fail(f"say which subsystem {target!r} is in: twin fault inject SUBSYSTEM TARGET KIND "
         f"(subsystems: {', '.join(SUBSYSTEMS)})")


@app.command()
def inject(
    args: Annotated[list[str], typer.Argument(help="[SUBSYSTEM] TARGET [KIND]: " + KINDS_HELP + ".")],
    kind_opt: Annotated[str | None, typer.Option("--kind", help="The kind, when not given as an argument.")] = None,
    gpu: Annotated[int | None, typer.Option(help="GPU index 0..7 (gpu).")] = None,
    xid: Annotated[int | None, typer.Option(help="Xid: 13, 31, 48, 63, 64, 74, 79, 94, 95, 119, 120, ... (gpu).")
                   ] = None,
    link: Annotated[int | None, typer.Option(help="NVLink for nvlink-down (gpu).")] = None,
    count: Annotated[int | None, typer.Option(help="Error count for ecc-sbe (gpu).")] = None,
    lease: Annotated[str | None, typer.Option(help="The lease (job) an Xid 94 or application Xid hits (gpu).")] = None,
    factor: Annotated[float | None, typer.Option(help="Slow-disk factor > 1 (ceph slow).")] = None,
    obj: Annotated[str | None, typer.Option("--object", help="RADOS object (ceph corrupt).")] = None,
    pool: Annotated[str | None, typer.Option(help="Pool of --object (ceph corrupt).")] = None,
    percent: Annotated[float | None, typer.Option(help="Packet loss in percent (network loss).")] = None,
    ports: Annotated[str | None, typer.Option(help="servers (default) or all (fabric switch-down).")] = None,
    reason: Annotated[str | None, typer.Option(help="Why (slurm drain/down, as scontrol's reason=).")] = None,
    run_dir: RunDirOption = DEFAULT,
) -> None:
    """Inject a fault; prints its id and what it did."""
    twin = connect(run_dir)
    if not 1 <= len(args) <= 3:
        fail("say [SUBSYSTEM] TARGET [KIND]")
    subsystem = args.pop(0) if len(args) == 3 or args[0] in SUBSYSTEMS else _infer(twin, args[0])
    target, kind = args[0], (args[1] if len(args) > 1 else kind_opt)
    if kind is None and subsystem == "gpu" and xid:
        kind = "xid"
    if not kind:
        fail(f"say which kind of {subsystem} fault: {', '.join(BACKENDS[subsystem].kinds)}")
    params = {"gpu": gpu, "xid": xid, "link": link, "count": count, "lease": lease, "factor": factor, "object": obj,
              "pool": pool, "percent": percent, "ports": ports, "reason": reason}
    try:
        f = twin.faults().inject(subsystem, target, kind, **{k: v for k, v in params.items() if v is not None})
    except _refusals() as e:
        fail(str(e))
    console.print(f"fault {f.id} ({f.subsystem} {f.kind} on {f.target}): {f.effect}", highlight=False)


@app.command()
def clear(args: Annotated[list[str], typer.Argument(help="ID (fault-7), or TARGET ID with the subsystem's own id "
                                                        "(gpu001 f-3, osd.4 osd.4-1).")],
          run_dir: RunDirOption = DEFAULT) -> None:
    """Clear an active fault: what it did is undone (a lost GPU still needs a reboot: `twin gpu reboot`)."""
    if len(args) not in (1, 2):
        fail("say ID, or TARGET ID")
    faults = connect(run_dir).faults()
    try:
        f = faults.clear(faults.resolve(args[-1], args[0] if len(args) == 2 else None).id)
    except _refusals() as e:
        fail(str(e))
    console.print(f"fault {f.id} ({f.subsystem} {f.kind} on {f.target}) cleared", highlight=False)


@app.command("list")
def list_faults(run_dir: RunDirOption = DEFAULT,
                node: Annotated[list[str] | None, typer.Option("--node", "-n", help="Only these targets.")] = None,
                subsystem: Annotated[str | None, typer.Option(help=f"Only one of {', '.join(SUBSYSTEMS)}.")] = None,
                cleared: Annotated[bool, typer.Option("--all", help="Include cleared faults.")] = False,
                as_json: Annotated[bool, typer.Option("--json", help="The fault records as JSON.")] = False) -> None:
    """The twin's fault log: every subsystem's faults, with their ids."""
    try:
        found = connect(run_dir).faults().list(include_cleared=cleared, subsystem=subsystem)
    except _refusals() as e:
        fail(str(e))
    found = [f for f in found if not node or f.target in node]
    if as_json:
        print(json.dumps([f.model_dump() for f in found], indent=1))
        return
    table = Table("id", "subsystem", "target", "kind", "params", "active", "effect", "subsystem's id")
    for f in found:
        table.add_row(f.id, f.subsystem, f.target, f.kind, " ".join(f"{k}={v}" for k, v in f.params.items()),
                      str(f.active), f.effect, f.backend_id or "-")
    console.print(table)
