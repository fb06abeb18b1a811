"""`twin ceph rbd ...`: RBD images on the twin's Ceph (the monitor's CephRbd service), as `rbd` prints them.

    twin ceph rbd create [POOL/]NAME --size 10G
    twin ceph rbd ls [POOL] [-l]
    twin ceph rbd info [POOL/]NAME
    twin ceph rbd resize [POOL/]NAME --size 20G [--allow-shrink]
    twin ceph rbd snap create|rollback|rm|protect|unprotect [POOL/]NAME@SNAP
    twin ceph rbd snap ls [POOL/]NAME
    twin ceph rbd clone [POOL/]PARENT@SNAP [POOL/]CHILD
    twin ceph rbd rm [POOL/]NAME
    twin ceph rbd import FILE [POOL/]NAME | export [POOL/]NAME[@SNAP] FILE

Sizes take rbd's binary units (K, M, G, T; a bare number is MiB, as `rbd --size`).
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated

import typer

from clustertwin.v1 import ceph_pb2 as pb
from emulator.cli.common import DEFAULT, RunDirOption, fail, user_errors
from emulator.errors import BadInput, TwinRpcError
from services.ceph.sdk import CephAdmin, RbdClient

app = typer.Typer(no_args_is_help=True, help=__doc__)
snap_app = typer.Typer(no_args_is_help=True, help="Snapshots: create, ls, rollback, rm, protect, unprotect.")
app.add_typer(snap_app, name="snap")

_UNITS = {"": 1 << 20, "b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40, "p": 1 << 50}


def parse_size(text: str) -> int:
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([bkmgtp]?)(?:i?b)?\s*", text.lower())
    if not m:
        raise BadInput(f"invalid size {text!r}: use e.g. 10G, 512M, 4096B")
    return int(float(m.group(1)) * _UNITS[m.group(2)])


def human(n: int) -> str:
    """rbd's sizes: `10 GiB`, `4 MiB`, `512 B`."""
    for unit, f in (("PiB", 1 << 50), ("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= f:
            v = n / f
            return f"{v:.0f} {unit}" if v == int(v) else f"{v:.3g} {unit}"
    return f"{n} B"


def ctime(t: float) -> str:
    return time.strftime("%a %b %e %H:%M:%S %Y", time.localtime(t))


def spec(text: str) -> tuple[str, str, str]:
    from services.ceph.errors import CephError
    from services.ceph.rbd.image import parse_spec
    try:
        return parse_spec(text)
    except CephError as e:
        fail(f"rbd: {e.message}")
        raise


@contextlib.contextmanager
def rbd_errors() -> Iterator[None]:
    """rbd's way: `rbd: <what went wrong>` and a non-zero exit."""
    try:
        yield
    except TwinRpcError as e:
        fail(f"rbd: {e.details}")


def client(run_dir: Path) -> RbdClient:
    with user_errors():
        return CephAdmin(run_dir).rbd()


def rbd_client(admin: CephAdmin) -> RbdClient:
    return admin.rbd()


SizeOpt = Annotated[str, typer.Option("--size", "-s", help="Size with a unit: 10G, 512M (bare number: MiB).")]
Spec = Annotated[str, typer.Argument(help="[POOL/]IMAGE (pool default rbd).")]
SnapSpec = Annotated[str, typer.Argument(help="[POOL/]IMAGE@SNAP.")]


def _progress(what: str) -> None:
    print(f"{what}: 100% complete...done.")


@app.command("create")
def create(image: Spec, size: SizeOpt, run_dir: RunDirOption = DEFAULT) -> None:
    """`rbd create`: a new image (format 2, 4 MiB objects) on a replicated pool."""
    pool, name, _ = spec(image)
    with user_errors():
        nbytes = parse_size(size)
    c = client(run_dir)
    with rbd_errors():
        c.create(pool, name, nbytes)


@app.command("ls")
def ls(pool: Annotated[str, typer.Argument(help="Pool.")] = "rbd",
       long: Annotated[bool, typer.Option("--long", "-l", help="Size, parent, format, protection.")] = False,
       run_dir: RunDirOption = DEFAULT) -> None:
    """`rbd ls`: the images of a pool."""
    c = client(run_dir)
    with rbd_errors():
        names = c.list(pool)
        if not long:
            for n in names:
                print(n)
            return
        rows = [("NAME", "SIZE", "PARENT", "FMT", "PROT", "LOCK")]
        for n in names:
            info = c.info(pool, n)
            parent = f"{info.parent.pool}/{info.parent.image}@{info.parent.snap}" if info.HasField("parent") else ""
            rows.append((n, human(info.size), parent, "2", "", ""))
            for s in c.snaps(pool, n):
                rows.append((f"{n}@{s.name}", human(s.size), parent, "2", "yes" if s.protected else "", ""))
    widths = [max(len(r[i]) for r in rows) for i in range(6)]
    for r in rows:
        print("  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip())


def info_text(info: pb.CephRbdImage) -> str:
    lines = [f"rbd image '{info.name}':",
             f"\tsize {human(info.size)} in {info.objects} objects",
             f"\torder {info.order} ({human(1 << info.order)} objects)",
             f"\tsnapshot_count: {info.snapshot_count}",
             f"\tid: {info.id}",
             f"\tblock_name_prefix: rbd_data.{info.id}",
             "\tformat: 2",
             f"\tfeatures: {', '.join(info.features)}",
             "\top_features: ",
             "\tflags: ",
             f"\tcreate_timestamp: {ctime(info.created)}",
             f"\taccess_timestamp: {ctime(info.modified)}",
             f"\tmodify_timestamp: {ctime(info.modified)}"]
    if info.HasField("parent"):
        lines += [f"\tparent: {info.parent.pool}/{info.parent.image}@{info.parent.snap}",
                  f"\toverlap: {human(info.parent.overlap)}"]
    return "\n".join(lines) + "\n"


@app.command("info")
def info(image: Spec, run_dir: RunDirOption = DEFAULT) -> None:
    """`rbd info`: size, objects, order, id, features, timestamps, parent."""
    pool, name, _ = spec(image)
    c = client(run_dir)
    with rbd_errors():
        print(info_text(c.info(pool, name)), end="")


@app.command("resize")
def resize(image: Spec, size: SizeOpt,
           allow_shrink: Annotated[bool, typer.Option("--allow-shrink", help="Permit shrinking.")] = False,
           run_dir: RunDirOption = DEFAULT) -> None:
    """`rbd resize`."""
    pool, name, _ = spec(image)
    with user_errors():
        nbytes = parse_size(size)
    c = client(run_dir)
    with rbd_errors():
        c.resize(pool, name, nbytes, allow_shrink)
    _progress("Resizing image")


@app.command("rm")
def rm(image: Spec, run_dir: RunDirOption = DEFAULT) -> None:
    """`rbd rm`: refused while the image has snapshots (or clones of them)."""
    pool, name, _ = spec(image)
    c = client(run_dir)
    with rbd_errors():
        c.remove(pool, name)
    _progress("Removing image")


@app.command("clone")
def clone(parent: SnapSpec, child: Spec, run_dir: RunDirOption = DEFAULT) -> None:
    """`rbd clone`: a copy-on-write child of a protected snapshot."""
    ppool, pname, psnap = spec(parent)
    if not psnap:
        fail("rbd: snapshot name was not specified")
    cpool, cname, _ = spec(child)
    c = client(run_dir)
    with rbd_errors():
        c.clone(ppool, pname, psnap, cpool, cname)


@app.command("import")
def import_(path: Annotated[Path, typer.Argument(help="File to import.", exists=True, dir_okay=False)],
            image: Spec, run_dir: RunDirOption = DEFAULT) -> None:
    """`rbd import`: a new image holding the file's bytes."""
    pool, name, _ = spec(image)
    data = path.read_bytes()
    c = client(run_dir)
    with rbd_errors():
        c.create(pool, name, len(data))
        c.write(pool, name, 0, data)
    _progress("Importing image")


@app.command("export")
def export(image: Spec, path: Annotated[Path, typer.Argument(help="File to write.")],
           run_dir: RunDirOption = DEFAULT) -> None:
    """`rbd export`: the image's (or a snapshot's) bytes into a file."""
    pool, name, snap = spec(image)
    c = client(run_dir)
    with rbd_errors():
        size = c.info(pool, name).size
        if snap:
            size = next((s.size for s in c.snaps(pool, name) if s.name == snap), size)
        path.write_bytes(c.read(pool, name, 0, size, snap))
    _progress("Exporting image")


def _snap(image: str, method: str, progress: str | None, run_dir: Path) -> None:
    pool, name, snap = spec(image)
    if not snap:
        fail("rbd: snapshot name was not specified")
    c = client(run_dir)
    with rbd_errors():
        c.snap(method, pool, name, snap)
    if progress:
        _progress(progress)


@snap_app.command("create")
def snap_create(image: SnapSpec, run_dir: RunDirOption = DEFAULT) -> None:
    """`rbd snap create`."""
    _snap(image, "SnapCreate", "Creating snap", run_dir)


@snap_app.command("rollback")
def snap_rollback(image: SnapSpec, run_dir: RunDirOption = DEFAULT) -> None:
    """`rbd snap rollback`: the image's contents and size as at the snapshot."""
    _snap(image, "SnapRollback", "Rolling back to snapshot", run_dir)


@snap_app.command("rm")
def snap_rm(image: SnapSpec, run_dir: RunDirOption = DEFAULT) -> None:
    """`rbd snap rm`: refused while protected."""
    _snap(image, "SnapRemove", "Removing snap", run_dir)


@snap_app.command("protect")
def snap_protect(image: SnapSpec, run_dir: RunDirOption = DEFAULT) -> None:
    """`rbd snap protect`: needed before cloning."""
    _snap(image, "SnapProtect", None, run_dir)


@snap_app.command("unprotect")
def snap_unprotect(image: SnapSpec, run_dir: RunDirOption = DEFAULT) -> None:
    """`rbd snap unprotect`: refused while the snapshot has clones."""
    _snap(image, "SnapUnprotect", None, run_dir)


@snap_app.command("ls")
def snap_ls(image: Spec, run_dir: RunDirOption = DEFAULT) -> None:
    """`rbd snap ls`."""
    pool, name, _ = spec(image)
    c = client(run_dir)
    with rbd_errors():
        snaps = c.snaps(pool, name)
    if not snaps:
        return
    rows = [("SNAPID", "NAME", "SIZE", "PROTECTED", "TIMESTAMP")]
    rows += [(str(s.id), s.name, human(s.size), "yes" if s.protected else "", ctime(s.timestamp)) for s in snaps]
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    for r in rows:
        print(f"{r[0]:>{widths[0]}}  " + "  ".join(v.ljust(w) for v, w in zip(r[1:], widths[1:], strict=True)))
