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
from typing import Annotated, Any

import grpc
import typer

from clustertwin.v1 import ceph_pb2 as pb
from clustertwin.v1 import ceph_pb2_grpc as pb_grpc
from emulator.cli.common import DEFAULT, RunDirOption, fail, user_errors
from emulator.errors import TwinRpcError

app = typer.Typer(no_args_is_help=True, help=__doc__)
snap_app = typer.Typer(no_args_is_help=True, help="Snapshots: create, ls, rollback, rm, protect, unprotect.")
app.add_typer(snap_app, name="snap")

IO_PIECE = 16 << 20
_UNITS = {"": 1 << 20, "b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40, "p": 1 << 50}


class RbdClient:
    """The monitor's CephRbd service; write/read split big buffers into ≤ 16 MiB calls."""

    def __init__(self, address: str, timeout: float = 120.0) -> None:
        self.channel = grpc.insecure_channel(address, options=[("grpc.max_receive_message_length", 64 << 20),
                                                               ("grpc.max_send_message_length", 64 << 20)])
        self.stub = pb_grpc.CephRbdStub(self.channel)
        self.timeout = timeout

    def call(self, method: str, request: Any) -> Any:
        try:
            return getattr(self.stub, method)(request, timeout=self.timeout)
        except grpc.RpcError as e:
            raise TwinRpcError("ceph-mon", e.code(), e.details() or "") from None

    def create(self, pool: str, name: str, size: int) -> pb.RbdImage:
        return self.call("Create", pb.RbdCreateRequest(pool=pool, name=name, size=size))

    def remove(self, pool: str, name: str) -> None:
        self.call("Remove", pb.RbdImageRef(pool=pool, name=name))

    def write(self, pool: str, name: str, offset: int, data: bytes) -> int:
        mv = memoryview(data)
        for off in range(0, len(data), IO_PIECE):
            self.call("Write", pb.RbdWriteRequest(pool=pool, name=name, offset=offset + off,
                                                  data=bytes(mv[off: off + IO_PIECE])))
        return len(data)

    def read(self, pool: str, name: str, offset: int, length: int, snap: str = "") -> bytes:
        out = bytearray()
        while len(out) < length:
            n = min(IO_PIECE, length - len(out))
            got = self.call("Read", pb.RbdReadRequest(pool=pool, name=name, offset=offset + len(out), length=n,
                                                      snap=snap)).data
            out += got
            if len(got) < n:
                break
        return bytes(out)


def rbd_client(admin: Any) -> RbdClient:
    return RbdClient(admin.mon_address)


def parse_size(text: str) -> int:
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([bkmgtp]?)(?:i?b)?\s*", text.lower())
    if not m:
        raise ValueError(f"invalid size {text!r}: use e.g. 10G, 512M, 4096B")
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
    from emulator.cli.ceph import admin
    a = admin(run_dir)
    return RbdClient(a.mon_address)


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
        names = list(c.call("List", pb.RbdListRequest(pool=pool)).names)
        if not long:
            for n in names:
                print(n)
            return
        rows = [("NAME", "SIZE", "PARENT", "FMT", "PROT", "LOCK")]
        for n in names:
            info = c.call("Info", pb.RbdImageRef(pool=pool, name=n))
            parent = f"{info.parent.pool}/{info.parent.image}@{info.parent.snap}" if info.HasField("parent") else ""
            rows.append((n, human(info.size), parent, "2", "", ""))
            for s in c.call("SnapList", pb.RbdImageRef(pool=pool, name=n)).snaps:
                rows.append((f"{n}@{s.name}", human(s.size), parent, "2", "yes" if s.protected else "", ""))
    widths = [max(len(r[i]) for r in rows) for i in range(6)]
    for r in rows:
        print("  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip())


def info_text(info: pb.RbdImage) -> str:
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
        print(info_text(c.call("Info", pb.RbdImageRef(pool=pool, name=name))), end="")


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
        c.call("Resize", pb.RbdResizeRequest(pool=pool, name=name, size=nbytes, allow_shrink=allow_shrink))
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
        c.call("Clone", pb.RbdCloneRequest(parent_pool=ppool, parent=pname, snap=psnap, pool=cpool, name=cname))


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
        size = c.call("Info", pb.RbdImageRef(pool=pool, name=name)).size
        if snap:
            size = next((s.size for s in c.call("SnapList", pb.RbdImageRef(pool=pool, name=name)).snaps
                         if s.name == snap), size)
        path.write_bytes(c.read(pool, name, 0, size, snap))
    _progress("Exporting image")


def _snap(image: str, method: str, progress: str | None, run_dir: Path) -> None:
    pool, name, snap = spec(image)
    if not snap:
        fail("rbd: snapshot name was not specified")
    c = client(run_dir)
    with rbd_errors():
        c.call(method, pb.RbdSnapRef(pool=pool, image=name, snap=snap))
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
        snaps = c.call("SnapList", pb.RbdImageRef(pool=pool, name=name)).snaps
    if not snaps:
        return
    rows = [("SNAPID", "NAME", "SIZE", "PROTECTED", "TIMESTAMP")]
    rows += [(str(s.id), s.name, human(s.size), "yes" if s.protected else "", ctime(s.timestamp)) for s in snaps]
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    for r in rows:
        print(f"{r[0]:>{widths[0]}}  " + "  ".join(v.ljust(w) for v, w in zip(r[1:], widths[1:], strict=True)))
