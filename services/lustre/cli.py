"""`twin lustre`: mount the twin's Lustre filesystem and run `lfs` against it."""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Annotated

import typer

from emulator.cli.common import DEFAULT, RunDirOption, fail
from emulator.rundir import RunDir, RunDirError
from services.lustre.lctl_cli import app as lctl_app
from services.lustre.manifest import LustreSection

app = typer.Typer(no_args_is_help=True, help=__doc__)
lfs_app = typer.Typer(no_args_is_help=True, help="`lfs` against the twin (paths under a `twin lustre mount`).")
app.add_typer(lfs_app, name="lfs")
app.add_typer(lctl_app, name="lctl")


def _client(run_dir: Path, path: str | None = None, admin: bool = False):  # noqa: ANN202
    """A client of the twin's filesystem. `lfs` runs as on a client node: under `--network netns` this
    process enters the namespace of the node that mounted the filesystem PATH is under (else of the first
    mount's node, else of the default client node) and talks to the servers over the storage network, as
    real `lfs` does over LNet. admin=True: the servers' management (OOB) addresses instead, reachable
    from the operator port (fault injection and the estimate's view of the OSTs)."""
    from services.lustre.client.core import LustreClient
    from services.lustre.client.mount import MountError, client_host, records

    run = RunDir(run_dir)
    try:
        manifest = run.load_manifest()
    except RunDirError as e:
        fail(str(e))
    lustre = LustreSection.of(manifest)
    if lustre is None:
        fail("this twin runs no Lustre: start it with `twin up TOPOLOGY --lustre`")
    if not admin and manifest.network == "netns":
        from emulator.procutil import enter_netns

        recs = sorted(records(run.path), key=lambda r: -len(r["mountpoint"]))
        p = os.path.abspath(path) if path else None
        mine = [r for r in recs if p and (p == r["mountpoint"] or p.startswith(r["mountpoint"].rstrip("/") + "/"))]
        rec = (mine or recs or [{}])[0]
        try:
            netns = rec.get("netns") or client_host(manifest)[1]
            enter_netns(netns)
        except (MountError, OSError) as e:
            fail(f"cannot run on a Lustre client node: {e}")
    return LustreClient.from_section(lustre, failover_timeout=10.0, plane="admin" if admin else "storage"), lustre


def _resolve(run_dir: Path, path: str, fsname: str) -> tuple[str, str]:
    """(mount point, path inside the filesystem) of a path under one of this twin's mounts."""
    from services.lustre.client.mount import records

    p = os.path.abspath(path)
    for rec in sorted(records(RunDir(run_dir).path), key=lambda r: -len(r["mountpoint"])):
        mp = rec["mountpoint"]
        if p == mp or p.startswith(mp.rstrip("/") + "/"):
            return mp, "/" + p[len(mp):].strip("/")
    fail(f"{path} is not under a Lustre mount of this twin (`twin lustre mount MOUNTPOINT` first)", 22)


@app.command()
def mount(mountpoint: Annotated[str, typer.Argument(help="Where to mount (created if missing; must be empty).")],
          host: Annotated[str | None, typer.Option(help="--network netns: the client node whose storage NIC the "
                                                   "client uses (default: the first GPU server).")] = None,
          run_dir: RunDirOption = DEFAULT) -> None:
    """Mount the twin's Lustre filesystem through FUSE (a background client process)."""
    from services.lustre.client.mount import MountError, mount_background

    try:
        rec = mount_background(RunDir(run_dir).path, mountpoint, host=host)
    except MountError as e:
        fail(str(e))
    on = f", client node {rec['host']} over the storage network" if rec.get("netns") else ""
    print(f"{rec['mgs']} mounted on {rec['mountpoint']} (client pid {rec['pid']}{on}, log {rec['log']})")


@app.command()
def umount(mountpoint: Annotated[str, typer.Argument(help="The mount point.")],
           run_dir: RunDirOption = DEFAULT) -> None:
    """Unmount and stop the client."""
    from services.lustre.client.mount import unmount

    if not unmount(RunDir(run_dir).path, mountpoint):
        fail(f"{mountpoint} is not a Lustre mount of this twin", 1)
    print(f"{mountpoint} unmounted")


@lfs_app.command()
def setstripe(path: Annotated[str, typer.Argument()],
              stripe_count: Annotated[int, typer.Option("-c", "--stripe-count")] = 0,
              stripe_size: Annotated[str, typer.Option("-S", "--stripe-size")] = "0",
              stripe_index: Annotated[int, typer.Option("-i", "--stripe-index")] = -1,
              run_dir: RunDirOption = DEFAULT) -> None:
    """Create PATH with a layout, or set a directory's default layout."""
    from services.lustre.client.core import ClientError
    from services.lustre.errors import LustreError
    from services.lustre.layout import parse_size

    c, m = _client(run_dir, path)
    _, inner = _resolve(run_dir, path, m.fsname)
    try:
        size = parse_size(stripe_size, "stripe size")
        c.setstripe(inner, count=stripe_count, size=size, index=stripe_index)
    except LustreError as e:
        print(f"lfs setstripe: {e.message}: {e.strerror}", file=__import__("sys").stderr)
        raise typer.Exit(e.errno) from None
    except ClientError as e:
        print(f"error on ioctl for '{path}': {os.strerror(e.errno)} ({e.strerror})", file=__import__("sys").stderr)
        raise typer.Exit(e.errno) from None


@lfs_app.command()
def getstripe(paths: Annotated[list[str], typer.Argument()],
              directory: Annotated[bool, typer.Option("-d", "--directory")] = False,
              ost: Annotated[int, typer.Option("--ost", "-O")] = -1,
              run_dir: RunDirOption = DEFAULT) -> None:
    """A file's layout: stripe count, size, and each object's OST, id and group."""
    import stat

    from services.lustre import lfs
    from services.lustre.client.core import ClientError
    from services.lustre.wire import layout_from_pb, spec_from_pb

    c, m = _client(run_dir, paths[0] if paths else None)
    code = 0
    for path in paths:
        _, inner = _resolve(run_dir, path, m.fsname)
        try:
            a = c.getattr(inner)
        except ClientError as e:
            print(f"lfs getstripe: {path}: {os.strerror(e.errno)}", file=__import__("sys").stderr)
            code = e.errno
            continue
        if stat.S_ISDIR(a.mode):
            print(lfs.getstripe_dir(path, spec_from_pb(a.default_spec) if a.HasField("default_spec") else None), end="")
            if directory:
                continue
            for e in c.readdir(inner):
                if e.attr.HasField("layout"):
                    print(lfs.getstripe(os.path.join(path, e.name), layout_from_pb(e.attr.layout),
                                        ost if ost >= 0 else None), end="")
        elif a.HasField("layout"):
            print(lfs.getstripe(path, layout_from_pb(a.layout), ost if ost >= 0 else None), end="")
        else:
            print(f"{path} has no stripe info")
    if code:
        raise typer.Exit(code)


def _states(c):  # noqa: ANN001, ANN202
    from services.lustre.ost import MdtState, OstState

    r = c.statfs()
    mdts = [MdtState(t.index, t.capacity_bytes, t.used_bytes, t.inodes_total, t.inodes_used, t.active)
            for t in r.mdts]
    osts = []
    for t in r.osts:
        o = OstState(t.index, t.server, max(1, t.capacity_bytes), min(t.used_bytes, max(1, t.capacity_bytes)),
                     inodes_total=t.inodes_total, inodes_used=t.inodes_used, active=t.active,
                     degraded=t.degraded, readonly=t.readonly)
        osts.append(o)
    return r.fsname, mdts, osts


@lfs_app.command()
def df(path: Annotated[str | None, typer.Argument()] = None,
       human: Annotated[bool, typer.Option("-h", "--human-readable")] = False,
       inodes: Annotated[bool, typer.Option("-i", "--inodes")] = False,
       run_dir: RunDirOption = DEFAULT) -> None:
    """Space (or inodes) per MDT and OST, and the filesystem summary."""
    from services.lustre import lfs
    from services.lustre.client.mount import records

    c, m = _client(run_dir, path)
    fsname, mdts, osts = _states(c)
    if path:
        mount_point, _ = _resolve(run_dir, path, fsname)
    else:
        recs = records(RunDir(run_dir).path)
        mount_point = recs[0]["mountpoint"] if recs else f"/{fsname}"
    print(lfs.df(fsname, mount_point, mdts, osts, human=human, inodes=inodes), end="")


@lfs_app.command()
def osts(run_dir: RunDirOption = DEFAULT) -> None:
    """`OBDS:` and each OST's index, UUID and state."""
    from services.lustre import lfs

    c, _ = _client(run_dir)
    fsname, _, o = _states(c)
    print(lfs.osts(fsname, o), end="")


@lfs_app.command()
def mdts(run_dir: RunDirOption = DEFAULT) -> None:
    """`MDTS:` and each MDT's index, UUID and state."""
    from services.lustre import lfs

    c, _ = _client(run_dir)
    fsname, md, _ = _states(c)
    print(lfs.mdts(fsname, md), end="")


@lfs_app.command()
def find(path: Annotated[str, typer.Argument()],
         name: Annotated[str | None, typer.Option("--name", "-n")] = None,
         size: Annotated[str | None, typer.Option("--size", "-s")] = None,
         stripe_count: Annotated[str | None, typer.Option("--stripe-count", "-c")] = None,
         ost: Annotated[int, typer.Option("--ost", "-O")] = -1,
         type_: Annotated[str | None, typer.Option("--type", "-t")] = None,
         run_dir: RunDirOption = DEFAULT) -> None:
    """Files and directories under PATH by name, size, stripe count, OST, type."""
    from clustertwin.v1 import lustre_pb2 as pb
    from services.lustre.client.core import ClientError

    c, m = _client(run_dir, path)
    mount_point, inner = _resolve(run_dir, path, m.fsname)
    try:
        r = c.mdcall("Find", pb.LustreMdsFindRequest(start=inner, name=name or "", size=size or "",
                                                     stripe_count=stripe_count or "", ost=ost, type=type_ or ""))
    except ClientError as e:
        print(f"lfs find: {e.strerror}", file=__import__("sys").stderr)
        raise typer.Exit(e.errno) from None
    base = mount_point.rstrip("/")
    for p in r.paths:
        print(base + (p if p != "/" else ""))


# ---- faults ----------------------------------------------------------------------------------
fault_app = typer.Typer(no_args_is_help=True, help="Break Lustre on purpose: each fault is also an event on the bus.")
app.add_typer(fault_app, name="fault")


def _admin(run_dir: Path):  # noqa: ANN202
    """The SDK's Lustre admin client (services/lustre/sdk.py) of the twin in RUN_DIR."""
    from services.lustre.sdk import LustreAdmin

    run = RunDir(run_dir)
    try:
        return LustreAdmin(run, run.load_manifest())
    except RunDirError as e:
        fail(str(e))


def _fault_call(fn, *args, unknown: int = 2):  # noqa: ANN001, ANN202
    """An SDK fault call; a refusal as one line: exit status `unknown` for a target that does not exist."""
    from services.lustre.client.core import ClientError

    try:
        return fn(*args)
    except KeyError as e:
        fail(str(e.args[0]), unknown)
    except RunDirError as e:
        fail(str(e), 1)
    except ClientError as e:
        fail(f"{e.strerror} ({os.strerror(e.errno)})", 1)


@fault_app.command("oss-kill")
def oss_kill(name: Annotated[str, typer.Argument(help="The OSS, e.g. oss01.")],
             run_dir: RunDirOption = DEFAULT) -> None:
    """Kill an OSS and keep it down: its partner takes over its OSTs; without one their I/O blocks, then EIO."""
    with _admin(run_dir) as lu:
        pid = _fault_call(lu.kill_oss, name)
        d = lu.oss[name]
    osts = ", ".join(f"OST{i:04x}" for i in d.osts)
    partner = d.partner
    then = (f"{partner} takes over {osts} (I/O to them blocks until it has)" if partner else
            f"no failover partner: I/O to {osts} blocks, then fails with EIO")
    print(f"killed {name} (pid {pid}); it stays down until `twin lustre fault oss-start {name}`; {then}")


@fault_app.command("oss-start")
def oss_start(name: Annotated[str, typer.Argument(help="The OSS.")], run_dir: RunDirOption = DEFAULT) -> None:
    """Clear oss-kill: the OSS serves again and takes its OSTs back from its partner (failback)."""
    with _admin(run_dir) as lu:
        _fault_call(lu.start_oss, name, unknown=1)
    print(f"{name} is starting again and takes its OSTs back")


@fault_app.command("mds-kill")
def mds_kill(run_dir: RunDirOption = DEFAULT) -> None:
    """Kill the active MDS: the standby takes over the MDT; the killed one restarts as the standby."""
    import grpc

    from clustertwin.v1 import lustre_pb2 as pb
    from clustertwin.v1 import lustre_pb2_grpc as pb_grpc
    from emulator.sdk import daemons

    with _admin(run_dir) as lu:
        mds = list(lu.mds.values())
    active = None
    for d in mds:
        try:
            with grpc.insecure_channel(d.health_address) as ch:   # its management address
                if pb_grpc.LustreMdsStub(ch).Status(pb.LustreMdsStatusRequest(), timeout=3.0).role == "active":
                    active = d
                    break
        except grpc.RpcError:
            continue
    if active is None:
        fail("no active MDS answers (a failover may be under way)", 1)
    standby = [d.name for d in mds if d is not active]
    pid = _fault_call(daemons.kill, RunDir(run_dir), active.name)
    print(f"killed the active MDS {active.name} (pid {pid}); "
          + (f"{standby[0]} takes over" if standby else "no standby: metadata calls block until it restarts"))


@fault_app.command("ost-full")
def ost_full(index: Annotated[int, typer.Argument(help="OST index.")], run_dir: RunDirOption = DEFAULT) -> None:
    """Fill an OST (its capacity shrinks to what it holds): writes that grow it get ENOSPC, new files avoid it."""
    with _admin(run_dir) as lu:
        st = _fault_call(lu.fill_ost, index, unknown=22)
    print(f"OST{index:04x} full ({st.used_bytes} bytes used of {st.capacity_bytes}); new layouts avoid it")


@fault_app.command("ost-clear")
def ost_clear(index: Annotated[int, typer.Argument(help="OST index.")], run_dir: RunDirOption = DEFAULT) -> None:
    """Give a filled OST its capacity back."""
    with _admin(run_dir) as lu:
        st = _fault_call(lu.restore_ost, index, unknown=22)
    print(f"OST{index:04x} back to {st.capacity_bytes} bytes ({st.avail_bytes} available)")


@fault_app.command("list")
def fault_list(include_cleared: Annotated[bool, typer.Option("--all", help="Cleared faults too.")] = False,
               run_dir: RunDirOption = DEFAULT) -> None:
    """Lustre's faults (each OSS's): id, kind, OSS, OST, active, effect."""
    with _admin(run_dir) as lu:
        faults = _fault_call(lu.list_faults, include_cleared)
    print(f"{'ID':<24} {'KIND':<9} {'OSS':<8} {'OST':<8} {'ACTIVE':<7} EFFECT")
    for f in faults:
        ost = f"OST{f.ost:04x}" if f.HasField("ost") else "-"
        print(f"{f.id:<24} {f.kind:<9} {f.oss:<8} {ost:<8} {'yes' if f.active else 'no':<7} {f.effect}")


@app.command()
def estimate(checkpoint: Annotated[str | None, typer.Option("--checkpoint", help="Checkpoint size written (e.g. 2T).")]
             = None,
             read: Annotated[str | None, typer.Option("--read", help="Dataset size read (e.g. 10T).")] = None,
             stripe_count: Annotated[int, typer.Option("--stripe-count", "-c", help="-1: all OSTs.")] = 4,
             osts: Annotated[int | None, typer.Option("--osts", help="OSTs at the modelled scale (default: the "
                                                       "seed's 96 = 24 OSS x 4).")] = None,
             nodes: Annotated[int | None, typer.Option("--nodes", help="Client nodes doing the I/O (default 128).")]
             = None,
             as_json: Annotated[bool, typer.Option("--json")] = False,
             run_dir: RunDirOption = DEFAULT) -> None:
    """Modelled time of a checkpoint write and/or a dataset read at the seed's scale, with the twin's faults applied.

    Given both, it prints the write's estimate, then the read's (--json: a list of the two)."""
    import dataclasses
    import json

    from services.lustre.errors import LustreError
    from services.lustre.estimate import ClusterModel, LiveState, live_state_from_twin
    from services.lustre.estimate import estimate as model_estimate
    from services.lustre.layout import parse_size

    if checkpoint is None and read is None:
        fail("give --checkpoint SIZE, --read SIZE or both", 2)
    # Both sizes are checked before anything is modelled: a bad one is refused whole.
    ops: list[tuple[str, int]] = []
    for op, flag, text in (("write", "--checkpoint", checkpoint), ("read", "--read", read)):
        if text is not None:
            try:
                ops.append((op, parse_size(text, f"{flag} size")))
            except LustreError as e:
                fail(e.message, 22)
    model = ClusterModel()
    if osts is not None:
        if osts < 1:
            fail(f"--osts {osts}: must be at least 1", 22)
        model = dataclasses.replace(model, oss=max(1, math.ceil(osts / model.osts_per_oss)))
    state, source = LiveState(), "no running twin: a healthy filesystem"
    run = RunDir(run_dir)
    try:
        lustre = LustreSection.of(run.load_manifest())
    except RunDirError:
        lustre = None
    if lustre is not None:
        try:
            with _admin(run_dir) as lu:
                state = live_state_from_twin(lustre, list(lu.statfs().osts), model, lu.down_oss())
            source = "the twin's current faults" if not state.healthy else "the twin: no faults"
        except OSError as e:
            source = f"the twin does not answer ({e}): a healthy filesystem"
    try:
        estimates = [model_estimate(op, nbytes, stripe_count, state, model, nodes) for op, nbytes in ops]
    except ValueError as err:
        fail(str(err), 22)
    if as_json:
        docs = [e.to_dict() | {"faults_from": source, "failed_oss": sorted(state.failed_oss),
                               "full_osts": sorted(state.full_osts)} for e in estimates]
        print(json.dumps(docs[0] if len(docs) == 1 else docs, indent=1, default=str))
        return
    for e in estimates:
        print(e.text().replace("with the twin's current faults applied", f"faults from {source}"), end="")
