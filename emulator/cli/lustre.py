"""`twin lustre`: mount the twin's Lustre filesystem and run `lfs` against it."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from emulator.cli.common import DEFAULT, RunDirOption, fail
from emulator.rundir import RunDir, RunDirError

app = typer.Typer(no_args_is_help=True, help=__doc__)
lfs_app = typer.Typer(no_args_is_help=True, help="`lfs` against the twin (paths under a `twin lustre mount`).")
app.add_typer(lfs_app, name="lfs")


def _client(run_dir: Path):  # noqa: ANN202
    from services.lustre.client.core import LustreClient

    run = RunDir(run_dir)
    try:
        manifest = run.read(run.manifest)
    except RunDirError as e:
        fail(str(e))
    try:
        return LustreClient.from_manifest(manifest, failover_timeout=10.0), manifest
    except ValueError as e:
        fail(str(e))


def _resolve(run_dir: Path, path: str, fsname: str) -> tuple[str, str]:
    """(mount point, path inside the filesystem) of a path under one of this twin's mounts."""
    from services.lustre.client.mount import records

    p = os.path.abspath(path)
    for rec in sorted(records(RunDir(run_dir).path), key=lambda r: -len(r["mountpoint"])):
        mp = rec["mountpoint"]
        if p == mp or p.startswith(mp.rstrip("/") + "/"):
            return mp, "/" + p[len(mp):].strip("/")
    fail(f"{path} is not under a Lustre mount of this twin (`twin lustre mount MOUNTPOINT` first)", 22)


def _lfs_error(e: OSError, what: str) -> None:
    print(f"lfs {what}: {e.strerror if e.strerror and not str(e.strerror).startswith('E') else ''}"
          f"{os.strerror(e.errno)} ({e.strerror})", file=__import__("sys").stderr)
    raise typer.Exit(e.errno or 1)


@app.command()
def mount(mountpoint: Annotated[str, typer.Argument(help="Where to mount (created if missing; must be empty).")],
          run_dir: RunDirOption = DEFAULT) -> None:
    """Mount the twin's Lustre filesystem through FUSE (a background client process)."""
    from services.lustre.client.mount import MountError, mount_background

    try:
        rec = mount_background(RunDir(run_dir).path, mountpoint)
    except MountError as e:
        fail(str(e))
    print(f"{rec['mgs']} mounted on {rec['mountpoint']} (client pid {rec['pid']}, log {rec['log']})")


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

    c, m = _client(run_dir)
    _, inner = _resolve(run_dir, path, m["lustre"]["fsname"])
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

    c, m = _client(run_dir)
    code = 0
    for path in paths:
        _, inner = _resolve(run_dir, path, m["lustre"]["fsname"])
        try:
            a = c.getattr(inner)
        except ClientError as e:
            print(f"lfs getstripe: {path}: {os.strerror(e.errno)}", file=__import__("sys").stderr)
            code = e.errno
            continue
        if stat.S_ISDIR(a.mode):
            print(lfs.getstripe_dir(path, spec_from_pb(a.default_spec) if a.has_default else None), end="")
            if directory:
                continue
            for e in c.readdir(inner):
                if e.attr.has_layout:
                    print(lfs.getstripe(os.path.join(path, e.name), layout_from_pb(e.attr.layout),
                                        ost if ost >= 0 else None), end="")
        elif a.has_layout:
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

    c, m = _client(run_dir)
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

    c, m = _client(run_dir)
    mount_point, inner = _resolve(run_dir, path, m["lustre"]["fsname"])
    try:
        r = c.mdcall("Find", pb.LustreFindRequest(start=inner, name=name or "", size=size or "",
                                            stripe_count=stripe_count or "", ost=ost, type=type_ or ""))
    except ClientError as e:
        print(f"lfs find: {e.strerror}", file=__import__("sys").stderr)
        raise typer.Exit(e.errno) from None
    base = mount_point.rstrip("/")
    for p in r.paths:
        print(base + (p if p != "/" else ""))
