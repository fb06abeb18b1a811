"""`twin gpu ...`: the emulated GPU servers, as nvidia-smi and DCGM would show them."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from google.protobuf.json_format import MessageToDict
from rich.table import Table

from clustertwin.v1 import gpu_node_pb2 as pb
from emulator.cli.common import DEFAULT, RunDirOption, connect, console, user_errors
from services.gpu_node.topo_matrix import render

app = typer.Typer(no_args_is_help=True, help=__doc__)
mig = typer.Typer(no_args_is_help=True, help="MIG: modes, profiles, GPU and compute instances.")
app.add_typer(mig, name="mig")

Node = Annotated[str, typer.Argument(help="GPU server name, e.g. gpu001.")]
Gpu = Annotated[int, typer.Argument(help="GPU index 0..7.")]
Json = Annotated[bool, typer.Option("--json", help="Print JSON.")]


def _health(h: int) -> str:
    return pb.GpuHealth.Name(h).removeprefix("GPU_HEALTH_")


def _as_dict(message: object) -> dict:
    return MessageToDict(message, preserving_proto_field_name=True, always_print_fields_with_no_presence=True)


def _dump(message: object) -> None:
    print(json.dumps(_as_dict(message), indent=2))


@app.command("list")
def list_gpus(run_dir: RunDirOption = DEFAULT,
              node: Annotated[list[str] | None, typer.Option("--node", "-n", help="Only these servers.")] = None,
              as_json: Json = False) -> None:
    """Every GPU of every server (or of --node), one line each."""
    twin = connect(run_dir)
    names = node or twin.gpu_nodes
    table = Table("node", "gpu", "uuid", "health", "util", "power", "temp", "memory used", "mig", "leases", "xid")
    rows = []
    with user_errors():
        for name in names:
            for g in twin.gpu_node(name).gpus():
                rows.append((name, g))
    if as_json:
        print(json.dumps([{"node": n} | _as_dict(g) for n, g in rows], indent=2))
        return
    for name, g in rows:
        table.add_row(name, str(g.index), g.uuid, _health(g.health), f"{g.gpu_util}%", f"{g.power_w:.0f} W",
                      f"{g.temperature_c:.0f} C", f"{g.memory_used_mib}/{g.memory_total_mib} MiB",
                      "on" if g.mig_enabled else "off", ",".join(g.lease_ids) or "-", str(g.last_xid or "-"),
                      style="red" if g.health == pb.GPU_HEALTH_FAIL else "")
    console.print(table)


@app.command()
def show(node: Node, gpu: Gpu, run_dir: RunDirOption = DEFAULT) -> None:
    """One GPU in full (JSON)."""
    with user_errors():
        _dump(connect(run_dir).gpu_node(node).gpu(gpu))


@app.command()
def node(node: Node, run_dir: RunDirOption = DEFAULT) -> None:
    """The server: model, driver, CPUs, memory, health, boot id."""
    with user_errors():
        _dump(connect(run_dir).gpu_node(node).node())


@app.command()
def topo(node: Node, run_dir: RunDirOption = DEFAULT) -> None:
    """The `nvidia-smi topo -m` matrix of a server."""
    with user_errors():
        t = connect(run_dir).gpu_node(node).topology()
    print(render(list(t.labels), list(t.rows)))


@app.command()
def dmesg(node: Node, run_dir: RunDirOption = DEFAULT) -> None:
    """The server's NVRM kernel-log lines (Xid reports)."""
    with user_errors():
        for line in connect(run_dir).gpu_node(node).kernel_log():
            print(line)


@app.command()
def lease(node: Node, job: Annotated[str, typer.Option(help="Job id the lease belongs to.")],
          count: Annotated[int, typer.Option(help="How many GPUs (or MIG devices).")] = 0,
          gpus: Annotated[str, typer.Option(help="Explicit GPU indexes, e.g. 0,1,2.")] = "",
          mig_profile: Annotated[str, typer.Option(help="Lease MIG devices of this profile.")] = "",
          utilization: Annotated[int, typer.Option(help="Load the job puts on its GPUs, percent.")] = 0,
          run_dir: RunDirOption = DEFAULT) -> None:
    """Lease GPUs or MIG devices exclusively to a job; prints the lease and its environment."""
    with user_errors():
        indexes = [int(x) for x in gpus.split(",") if x.strip()] if gpus else None
        _dump(connect(run_dir).gpu_node(node).lease(job, count=count, gpus=indexes, mig_profile=mig_profile,
                                                     utilization=utilization))


@app.command()
def release(node: Node, lease_id: Annotated[str, typer.Argument(help="Lease id.")],
            run_dir: RunDirOption = DEFAULT) -> None:
    """End a lease."""
    with user_errors():
        _dump(connect(run_dir).gpu_node(node).release(lease_id))


@app.command()
def leases(node: Node, run_dir: RunDirOption = DEFAULT,
           ended: Annotated[bool, typer.Option("--all", help="Include ended leases.")] = False) -> None:
    """Leases on a server."""
    with user_errors():
        table = Table("lease", "job", "devices", "active", "end reason")
        for ls in connect(run_dir).gpu_node(node).leases(include_ended=ended):
            table.add_row(ls.id, ls.job_id, ",".join(d.uuid for d in ls.devices), str(ls.active), ls.end_reason)
    console.print(table)


@app.command()
def reset(node: Node, gpu: Gpu, run_dir: RunDirOption = DEFAULT) -> None:
    """GPU reset (`nvidia-smi -r`): clears Xid health; the MIG layout is lost."""
    with user_errors():
        g = connect(run_dir).gpu_node(node).reset_gpu(gpu)
    console.print(f"{node} GPU {gpu} reset: health {_health(g.health)}")


@app.command()
def reboot(node: Node, run_dir: RunDirOption = DEFAULT) -> None:
    """Reboot the server: lost GPUs return, leases end, the MIG layout is re-applied."""
    with user_errors():
        n = connect(run_dir).gpu_node(node).reboot()
    console.print(f"{node} rebooted: boot id {n.boot_id}, {n.gpu_count} GPUs, health {_health(n.health)}")


@mig.command("profiles")
def mig_profiles(node: Node, gpu: Gpu, run_dir: RunDirOption = DEFAULT) -> None:
    """GPU-instance profiles with free/total counts (`nvidia-smi mig -lgip`)."""
    with user_errors():
        profiles = connect(run_dir).gpu_node(node).mig_profiles(gpu)
    table = Table("name", "id", "free/total", "memory GiB", "SMs", "placements")
    for p in profiles:
        table.add_row(p.name, str(p.gi_profile_id), f"{p.free_instances}/{p.max_instances}", f"{p.memory_gib:.2f}",
                      str(p.sm_count), "{" + ",".join(map(str, p.placements)) + "}:" + str(p.memory_slices))
    console.print(table)


@mig.command("list")
def mig_list(node: Node, gpu: Gpu, run_dir: RunDirOption = DEFAULT) -> None:
    """GPU instances and their compute instances (`nvidia-smi mig -lgi` / `-lci`)."""
    with user_errors():
        instances = connect(run_dir).gpu_node(node).gpu_instances(gpu)
    table = Table("GI id", "profile", "profile id", "placement", "compute instances")
    for gi in instances:
        cis = ", ".join(f"{ci.id}:{ci.profile}" for ci in gi.compute_instances) or "-"
        table.add_row(str(gi.id), gi.profile, str(gi.gi_profile_id), f"{gi.placement_start}:{gi.placement_size}", cis)
    console.print(table)


@mig.command("enable")
def mig_enable(node: Node, gpu: Gpu, run_dir: RunDirOption = DEFAULT) -> None:
    """Enable MIG mode on a GPU."""
    with user_errors():
        connect(run_dir).gpu_node(node).set_mig(gpu, True)
    console.print(f"{node} GPU {gpu}: MIG enabled")


@mig.command("disable")
def mig_disable(node: Node, gpu: Gpu, run_dir: RunDirOption = DEFAULT) -> None:
    """Disable MIG mode (refused while GPU instances exist)."""
    with user_errors():
        connect(run_dir).gpu_node(node).set_mig(gpu, False)
    console.print(f"{node} GPU {gpu}: MIG disabled")


@mig.command("create")
def mig_create(node: Node, gpu: Gpu, profile: Annotated[str, typer.Argument(help="e.g. 3g.40gb or 9.")],
               placement: Annotated[int | None, typer.Option(help="Start memory slice.")] = None,
               compute_instance: Annotated[bool, typer.Option("--ci/--no-ci",
                                                              help="Also create the default compute instance.")] = True,
               run_dir: RunDirOption = DEFAULT) -> None:
    """Create a GPU instance (`nvidia-smi mig -cgi PROFILE -C`)."""
    with user_errors():
        gi = connect(run_dir).gpu_node(node).create_gpu_instance(gpu, profile, placement, compute_instance)
    console.print(f"Successfully created GPU instance ID {gi.id:2d} on GPU {gpu:2d} using profile MIG {gi.profile} "
                  f"(ID {gi.gi_profile_id:2d})")


@mig.command("destroy")
def mig_destroy(node: Node, gpu: Gpu, gi_id: Annotated[int, typer.Argument(help="GPU instance id.")],
                run_dir: RunDirOption = DEFAULT) -> None:
    """Destroy a GPU instance and its compute instances."""
    with user_errors():
        connect(run_dir).gpu_node(node).destroy_gpu_instance(gpu, gi_id)
    console.print(f"Successfully destroyed GPU instance ID {gi_id:2d} from GPU {gpu:2d}")
