"""`twin fabric ...`: the InfiniBand compute fabric as its subnet manager (the real OpenSM over
ibsim) and UFM show it: systems, ports, links, routes, port control, unhealthy ports, alarms,
analysis, SHARP jobs, and the collective-time model (`estimate`, `nccl-tests`).
Needs a twin started with `--fabric`."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
from google.protobuf.json_format import MessageToDict
from rich.table import Table

from clustertwin.v1 import fabric_pb2 as pb
from emulator.cli.common import DEFAULT, RunDirOption, connect, console, fail, user_errors
from services.fabric.sdk import FabricClient

app = typer.Typer(no_args_is_help=True, help=__doc__)
sharp = typer.Typer(no_args_is_help=True, help="SHARP: aggregation trees per job (the aggregation manager).")
app.add_typer(sharp, name="sharp")

Json = Annotated[bool, typer.Option("--json", help="Print JSON.")]
Target = Annotated[str, typer.Argument(help="A switch (ib-leaf01), an HCA ('gpu001 mlx5_3' or gpu001-mlx5_3) or a "
                                            "UFM port name (<port guid>_<number>).")]
PortNo = Annotated[int, typer.Argument(help="Port number (not needed with a UFM port name; HCAs: 1).")]
SIZE_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
OP_NAMES = {"all_reduce": "all_reduce_perf", "all_gather": "all_gather_perf", "reduce_scatter": "reduce_scatter_perf",
            "all_to_all": "alltoall_perf", "broadcast": "broadcast_perf"}


@contextmanager
def _fabric(run_dir: Path) -> Iterator[FabricClient]:
    twin = connect(run_dir)
    with user_errors():
        client = twin.fabric()
    try:
        with user_errors():
            yield client
    finally:
        client.close()


def _dict(message: Any) -> dict[str, Any]:
    return MessageToDict(message, preserving_proto_field_name=True, always_print_fields_with_no_presence=True)


def _query(run_dir: Path, method: str, as_json: bool, **fields: Any) -> Any:
    """One call's reply, or None when it was printed as JSON (`--json`): the caller renders the rest."""
    with _fabric(run_dir) as f:
        reply = f.call(method, **fields)
    if as_json:
        _dump(reply)
        return None
    return reply


def _dump(messages: Any) -> None:
    if isinstance(messages, list):
        print(json.dumps([_dict(m) for m in messages], indent=2))
    else:
        print(json.dumps(_dict(messages), indent=2))


def parse_size(text: str) -> int:
    """nccl-tests' sizes: a number with an optional K, M, G or T suffix (powers of 1024)."""
    m = re.fullmatch(r"\s*(\d+)\s*([KMGT]?)B?\s*", text.upper())
    if not m:
        raise typer.BadParameter(f"{text!r} is not a size (e.g. 8, 64K, 1M, 8G)")
    return int(m.group(1)) * SIZE_UNITS[m.group(2)]


def endpoint(text: str) -> pb.FabricEndpoint:
    """'gpu001 mlx5_0' or 'gpu001-mlx5_0' (an HCA), 'gpu001:3' (server and rail), 'ib-leaf01', or a LID."""
    if text.isdigit():
        return pb.FabricEndpoint(lid=int(text))
    server, sep, rail = text.partition(":")
    if sep:
        if not rail.isdigit():
            raise typer.BadParameter(f"{text!r}: a rail is a number, e.g. gpu001:3")
        return pb.FabricEndpoint(server=server, rail=int(rail))
    return pb.FabricEndpoint(node=text)


# --- inventory --------------------------------------------------------------------------------------


@app.command()
def systems(run_dir: RunDirOption = DEFAULT,
            kind: Annotated[str, typer.Option("--type", help="switch or host.")] = "", as_json: Json = False) -> None:
    """Switches and hosts, as UFM lists systems."""
    with _fabric(run_dir) as f:
        found = list(f.call("ListSystems", type=kind).systems)
    if as_json:
        return _dump(found)
    table = Table("name", "type", "role", "model", "guid", "lid", "ports")
    for s in found:
        table.add_row(s.name, s.type, s.role or "-", s.model, s.guid, str(s.lid or "-"), str(len(s.ports)))
    console.print(table)


@app.command()
def ports(system: Annotated[str, typer.Argument(help="A system (gpu001, ib-leaf01) or HCA; all when absent.")] = "",
          run_dir: RunDirOption = DEFAULT,
          computer: Annotated[bool, typer.Option("--computer", help="Only HCA ports.")] = False,
          down: Annotated[bool, typer.Option("--down", help="Only ports that are not Active.")] = False,
          as_json: Json = False) -> None:
    """Cabled ports: state, speed, width, LID and what is at the other end."""
    with _fabric(run_dir) as f:
        found = [p for p in f.call("ListPorts", system=system, computer_only=computer).ports
                 if not down or p.logical_state != "Active"]
    if as_json:
        return _dump(found)
    table = Table("node", "port", "lid", "state", "physical", "width", "speed", "peer", "name")
    for p in found:
        table.add_row(p.node, str(p.number), str(p.lid), p.logical_state + (" (disabled)" if p.disabled else ""),
                      p.physical_state, p.active_width or "-", p.active_speed or "-", f"{p.peer_node} {p.peer_port}",
                      p.name, style="" if p.logical_state == "Active" else "red")
    console.print(table)


@app.command()
def links(run_dir: RunDirOption = DEFAULT,
          down: Annotated[bool, typer.Option("--down", help="Only links that are not Active.")] = False,
          as_json: Json = False) -> None:
    """Cables, both ends, and whether they are Active."""
    with _fabric(run_dir) as f:
        found = [lk for lk in f.call("ListLinks").links if not down or not lk.active]
    if as_json:
        return _dump(found)
    table = Table("source", "port", "destination", "port", "speed", "state")
    for lk in found:
        table.add_row(lk.source_node, str(lk.source_port), lk.destination_node, str(lk.destination_port),
                      lk.speed or "-", "Active" if lk.active else "Down", style="" if lk.active else "red")
    console.print(table)


@app.command()
def route(src: Annotated[str, typer.Argument(help="'gpu001 mlx5_0', gpu001:0, a switch, or a LID.")],
          dst: Annotated[str, typer.Argument(help="As SRC.")],
          run_dir: RunDirOption = DEFAULT, as_json: Json = False) -> None:
    """The path a packet takes, switch by switch, following the LFTs OpenSM programmed."""
    r = _query(run_dir, "GetRoute", as_json, src=endpoint(src), dst=endpoint(dst))
    if r is None:
        return None
    console.print(f"LID {r.src_lid} -> LID {r.dst_lid}: {len(r.hops)} switch hops", highlight=False)
    for h in r.hops:
        console.print(f"  {h.switch_name:<14} in port {h.in_port:>3}  out port {h.out_port:>3}", highlight=False)


@app.command()
def health(run_dir: RunDirOption = DEFAULT, as_json: Json = False) -> None:
    """The subnet manager's state and the ports that are not Active."""
    h = _query(run_dir, "GetHealth", as_json)
    if h is None:
        return None
    console.print(f"SM {h.sm_state} on {h.sm_node}, routing {h.routing_engine}, {h.sweeps} heavy sweeps "
                  f"(last {h.last_sweep_seconds:.2f} s); ports Active {h.ports_active}/{h.ports_total}",
                  highlight=False)
    for p in h.down_ports:
        console.print(f"  [red]{p.logical_state}[/] {p.node} port {p.number} (to {p.peer_node} port {p.peer_port})"
                      + (" disabled" if p.disabled else ""), highlight=False)


@app.command()
def alarms(run_dir: RunDirOption = DEFAULT, as_json: Json = False) -> None:
    """Open alarms (links down, unhealthy ports), as UFM's /app/alarms."""
    with _fabric(run_dir) as f:
        found = list(f.call("ListAlarms").alarms)
    if as_json:
        return _dump(found)
    if not found:
        console.print("no alarms")
    for a in found:
        console.print(f"{a.id:>4} {a.severity:<8} {a.name:<16} {a.object_path}: {a.reason}", highlight=False)


@app.command()
def analyze(run_dir: RunDirOption = DEFAULT,
            pattern: Annotated[str, typer.Option(help="ring or all_to_all.")] = "ring", as_json: Json = False) -> None:
    """From the real routes: per-leaf capacity (non-blocking?), route balance of a traffic pattern,
    and what the current faults cost (servers that lost rails, paths lost or squeezed)."""
    a = _query(run_dir, "Analyze", as_json, pattern=pattern)
    if a is None:
        return None
    table = Table("leaf", "down ports", "up ports", "down Gb/s", "up Gb/s", "non-blocking")
    for c in a.leaves:
        table.add_row(c.leaf, str(c.down_ports), str(c.up_ports), f"{c.down_gbps:.0f}", f"{c.up_gbps:.0f}",
                      "yes" if c.non_blocking else "NO", style="" if c.non_blocking else "red")
    console.print(table)
    b = a.balance
    console.print(f"{b.pattern}: {b.routed}/{b.flows} flows routed, busiest link {b.busiest} flows, uplinks "
                  f"{b.up_min}..{b.up_max} ({'balanced' if b.balanced else 'UNBALANCED'}); "
                  f"{a.degraded_paths} flows squeezed onto shared links", highlight=False)
    for u in b.unroutable[:10]:
        console.print(f"  [red]lost[/] {u}", highlight=False)
    if len(b.unroutable) > 10:
        console.print(f"  ... and {len(b.unroutable) - 10} more", highlight=False)
    for d in a.degraded_servers:
        console.print(f"  {d.server}: {d.rails_up}/{d.rails} rails up (down: {', '.join(d.down)})", highlight=False)


# --- port control -------------------------------------------------------------------------------------


def _port_change(run_dir: Path, method: str, target: str, port: int, **extra: Any) -> None:
    with _fabric(run_dir) as f:
        r = f.call(method, system=target, port=port, **extra)
    p = r.port
    what = f"{p.node} port {p.number} is {p.logical_state}"
    if not r.changed:
        console.print(f"{what} (unchanged)", highlight=False)
    else:
        console.print(f"{what}; OpenSM re-swept in {r.resweep_seconds:.2f} s"
                      + (" after trap 128" if r.trap_128 else ""), highlight=False)


@app.command()
def disable(target: Target, port: PortNo = 0, run_dir: RunDirOption = DEFAULT) -> None:
    """Take a cable down (in ibsim: both ends go Down; OpenSM re-routes)."""
    _port_change(run_dir, "SetPortState", target, port, enabled=False)


@app.command()
def enable(target: Target, port: PortNo = 0, run_dir: RunDirOption = DEFAULT) -> None:
    """Bring a disabled cable back."""
    _port_change(run_dir, "SetPortState", target, port, enabled=True)


@app.command()
def reset(target: Target, port: PortNo = 0, run_dir: RunDirOption = DEFAULT) -> None:
    """UFM's port_reset: the link goes down and comes back."""
    _port_change(run_dir, "ResetPort", target, port)


@app.command()
def unhealthy(names: Annotated[list[str] | None, typer.Argument(help="UFM port names; none: list them.")] = None,
              run_dir: RunDirOption = DEFAULT,
              healthy: Annotated[bool, typer.Option("--healthy", help="Mark them healthy again.")] = False,
              action: Annotated[str, typer.Option(help="isolate or no_discover.")] = "isolate") -> None:
    """UFM's unhealthy ports: mark ports unhealthy (isolated: OpenSM routes around them), or healthy."""
    with _fabric(run_dir) as f:
        now = (f.call("SetPortHealth", ports=names, healthy=healthy, action=action) if names
               else f.call("ListUnhealthyPorts")).ports
    if not now:
        console.print("no unhealthy ports")
    for u in now:
        console.print(f"{u.name} {u.node} port {u.port} (to {u.peer_node} port {u.peer_port}): {u.condition}, "
                      f"{u.action}", highlight=False)


# --- SHARP ---------------------------------------------------------------------------------------------


def _print_job(job: pb.FabricSharpJob) -> None:
    console.print(f"job {job.job_id}: {len(job.trees)} trees, SHARP "
                  f"{'available' if job.sharp_available else '[red]NOT available[/]'}", highlight=False)
    for t in job.trees:
        console.print(f"  tree {t.tree_id:>4} rail {t.rail} root {t.root or '-':<12} leaves {','.join(t.leaves)} "
                      f"{len(t.hcas)} HCAs {t.state}" + (f": {t.reason}" if t.reason else ""), highlight=False)


@sharp.command("create")
def sharp_create(job_id: Annotated[str, typer.Argument(help="The job's id.")],
                 servers: Annotated[list[str] | None, typer.Option("--server", "-s", help="A server (repeat).")] = None,
                 hcas: Annotated[list[str] | None, typer.Option("--hca", help="An HCA, 'gpu001 mlx5_0' (repeat).")]
                 = None,
                 streaming: Annotated[bool, typer.Option("--streaming", help="Streaming (SAT) trees.")] = False,
                 run_dir: RunDirOption = DEFAULT, as_json: Json = False) -> None:
    """Build a job's aggregation trees (one per rail)."""
    with _fabric(run_dir) as f:
        job = f.call("CreateSharpJob", job_id=job_id, servers=servers or [], hcas=hcas or [],
                     streaming=streaming).job
    _dump(job) if as_json else _print_job(job)


@sharp.command("release")
def sharp_release(job_id: Annotated[str, typer.Argument(help="The job's id.")],
                  run_dir: RunDirOption = DEFAULT) -> None:
    """Delete a job's trees."""
    with _fabric(run_dir) as f:
        job = f.call("ReleaseSharpJob", job_id=job_id).job
    console.print(f"released {len(job.trees)} trees of job {job.job_id}", highlight=False)


@sharp.command("list")
def sharp_list(run_dir: RunDirOption = DEFAULT, as_json: Json = False) -> None:
    """Jobs, their trees, and the trees in use against the limits."""
    r = _query(run_dir, "ListSharpJobs", as_json)
    if r is None:
        return None
    console.print(f"trees in use {r.trees_in_use}/{r.max_trees}, streaming {r.streaming_in_use}/"
                  f"{r.max_streaming_trees}", highlight=False)
    for job in r.jobs:
        _print_job(job)


# --- the collective model ----------------------------------------------------------------------------


def _estimate(f: FabricClient, op: str, gpus: int, size: int, algorithm: str, servers: list[str] | None,
              gpus_per_server: int, sharp_job: str) -> pb.FabricEstimateCollectiveResponse:
    return f.call("EstimateCollective", op=op, ranks=gpus, bytes=size, algorithm=algorithm, servers=servers or [],
                  gpus_per_server=gpus_per_server, sharp_job=sharp_job)


Op = Annotated[str, typer.Option("--op", help="all_reduce, all_gather, reduce_scatter, all_to_all, broadcast.")]
Gpus = Annotated[int, typer.Option("--gpus", "-g", help="GPUs (ranks) in the collective.")]
Algo = Annotated[str, typer.Option("--algorithm", "-a", help="auto (fastest, as NCCL picks), ring, tree, nvls, sharp.")]
Servers = Annotated[list[str] | None, typer.Option("--server", "-s", help="The job's servers (repeat); default the "
                                                                         "first ones.")]
PerServer = Annotated[int, typer.Option("--gpus-per-server", help="Ranks per server (default 8).")]
SharpJob = Annotated[str, typer.Option("--sharp-job", help="A SHARP job whose trees the collective may use.")]


@app.command()
def estimate(op: Op = "all_reduce", gpus: Gpus = 8,
             size: Annotated[str, typer.Option("--bytes", "-b", help="Per-rank buffer, e.g. 1G.")] = "1G",
             algorithm: Algo = "auto", servers: Servers = None, gpus_per_server: PerServer = 0,
             sharp_job: SharpJob = "", run_dir: RunDirOption = DEFAULT, as_json: Json = False) -> None:
    """How long one collective takes on the live fabric (a model, calibrated to FIDELITY.md §3)."""
    with _fabric(run_dir) as f:
        e = _estimate(f, op, gpus, parse_size(size), algorithm, servers, gpus_per_server, sharp_job)
    if as_json:
        return _dump(e)
    console.print(f"{e.op} of {e.bytes} B over {e.ranks} GPUs: {e.time_s * 1e6:.1f} us with {e.algorithm}, "
                  f"algbw {e.algbw_gbps:.2f} GB/s, busbw {e.busbw_gbps:.2f} GB/s (modelled)", highlight=False)
    console.print(f"  bottleneck: {e.bottleneck}; slowest server {e.slowest_server or '-'} with "
                  f"{e.slowest_rails_up} rails up; spine congestion x{e.congestion:g}", highlight=False)


@app.command("nccl-tests")
def nccl_tests(op: Op = "all_reduce", gpus: Gpus = 8,
               minbytes: Annotated[str, typer.Option("--minbytes", "-b", help="Smallest size.")] = "8",
               maxbytes: Annotated[str, typer.Option("--maxbytes", "-e", help="Largest size.")] = "128M",
               factor: Annotated[int, typer.Option("--stepfactor", "-f", help="Multiply the size by this.")] = 2,
               algorithm: Algo = "auto", servers: Servers = None, gpus_per_server: PerServer = 0,
               sharp_job: SharpJob = "", run_dir: RunDirOption = DEFAULT) -> None:
    """A table shaped like nccl-tests' (size, count, time, algbw, busbw), computed by the collective
    model on the live fabric. Nothing runs on a GPU: every figure is modelled."""
    if op not in OP_NAMES:
        fail(f"unknown op {op!r}: one of {', '.join(OP_NAMES)}")
    lo, hi = parse_size(minbytes), parse_size(maxbytes)
    if lo < 1 or hi < lo or factor < 2:
        fail(f"sizes {lo}..{hi} with step factor {factor}: need 1 <= minbytes <= maxbytes and a factor >= 2")
    sizes = []
    size = lo
    while size <= hi:
        sizes.append(size)
        size *= factor
    with _fabric(run_dir) as f:
        rows = [_estimate(f, op, gpus, s, algorithm, servers, gpus_per_server, sharp_job) for s in sizes]
    redop = "sum" if op in ("all_reduce", "reduce_scatter") else "none"
    root = "0" if op == "broadcast" else "-1"
    print(f"# {OP_NAMES[op]} on the clustertwin fabric: MODELLED, not measured (collective-time model over the live "
          f"routes; see FIDELITY.md §3)")
    print(f"# nRanks {gpus} minBytes {lo} maxBytes {hi} step: {factor}(factor) validation: 0 algorithm: {algorithm}")
    print("#")
    print(f"#{'':>55}out-of-place{'':>23}in-place")
    print(f"#{'size':>11}{'count':>13}{'type':>7}{'redop':>7}{'root':>7}{'time':>9}{'algbw':>8}{'busbw':>8}{'#wrong':>7}"
          f"{'time':>9}{'algbw':>8}{'busbw':>8}{'#wrong':>7}")
    print(f"#{'(B)':>11}{'(elements)':>13}{'':>21}{'(us)':>9}{'(GB/s)':>8}{'(GB/s)':>8}{'':>7}{'(us)':>9}"
          f"{'(GB/s)':>8}{'(GB/s)':>8}")
    for e in rows:
        t = f"{e.time_s * 1e6:9.2f}{e.algbw_gbps:8.2f}{e.busbw_gbps:8.2f}{'N/A':>7}"
        print(f"{e.bytes:>12}{e.bytes // 4:>13}{'float':>7}{redop:>7}{root:>7}{t}{t}")
    avg = sum(e.busbw_gbps for e in rows) / len(rows)
    print("# Out of bounds values : 0 OK")
    print(f"# Avg bus bandwidth    : {avg:g} (modelled)")
    chosen = sorted({e.algorithm for e in rows})
    print(f"# Algorithms chosen    : {', '.join(chosen)}")
