"""The Lustre client mount: a FUSE filesystem over the MDS and the OSSs, as llite is over the MDC and the
OSCs. The kernel's requests come through client/session.py (the FUSE protocol on /dev/fuse, several
threads), which calls the path-based operations here.

Data: reads and writes are split by the file's RAID0 layout and go to the OSTs' objects, the
pieces of one request in flight together. Size: as on Lustre the size a writer makes is known to
it first; the client keeps it per open file and sends it to the MDS on fsync and close (and stat from
the same mount sees it at once). A file created here is under this client's write lock
(mds/ldlm.py): its close sends nothing, and its last writes and size stay here until the MDS calls
the lock back (another client reads or changes it), an fsync, an unmount, or the kernel's dirty
expiry; a Lustre close sends no data either (ll_flush only reports earlier write errors).
Attributes (of getattr, readdir, and a change's reply) and a directory's listing are kept while this
client holds their lock (client/locks.py: the MDS calls it back when another client changes them), as
llite keeps inode attributes and directory pages under LDLM locks: a second `ls -l`, a stat, or a listing
of a directory nobody changed costs no MDS call.

Extended attributes: `lustre.lov` is the file's layout in the binary `struct lov_user_md_v1` that
real Lustre returns (`getfattr -n lustre.lov -e hex FILE`); setting it on a file without objects
gives the file that layout, on a directory sets its default, and on a file that already has a
layout it is ignored (as Lustre does, so that `rsync -X`/`cp --preserve=xattr` work). `user.*`,
`security.*` and `trusted.*` go to the MDS, which checks who may (services/lustre/xattrs.py); `ls -l`
asks for `security.*` names, so those are asked of the MDS only for an inode whose attributes say it has
some (`privileged_xattrs`). `system.*` (ACLs) are refused (`unsupported`).

Times are integer nanoseconds end to end (the MDS's, the wire's, the kernel's). A read moves atime as
llite does at close, and a listing moves its directory's, under relatime (services/lustre/namespace.py:
read_atime).

Errors: a refused call raises the client's ClientError, an OSError carrying the errno the MDS or OSS
sent (services/lustre/errors.py); the session returns any OSError's errno to the kernel as it is, so the
operations let it through.
"""

from __future__ import annotations

import errno
import logging
import os
import stat
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clustertwin.v1 import lustre_pb2 as pb
from services.lustre.client import kernel as k
from services.lustre.client.core import ClientError, Gate, LustreClient, ReadAhead
from services.lustre.client.kernel import FuseOSError
from services.lustre.client.locks import KernelCache, Locks
from services.lustre.client.session import HIDDEN, UTIME_NOW, UTIME_OMIT, context
from services.lustre.client.tunables import Tunables
from services.lustre.client.writeback import Osc, WriteBack
from services.lustre.errors import LustreError
from services.lustre.fid import Fid
from services.lustre.layout import Layout
from services.lustre.mds.ldlm import UUID_KEY
from services.lustre.namespace import ATIME_DIFF_NS, FID_DIR, atime_moves
from services.lustre.wire import layout_from_pb, lov_xattr, parse_lov_xattr
from services.lustre.xattrs import PRIVILEGED, STORED

log = logging.getLogger("lustre.client")

ATTR_CACHE_S = 5.0      # the client's attributes without a lock stream
# under a lock, attributes are kept at most this long, by the client and by the kernel (its entry and attr
# timeouts): ldlm.namespaces.*.lru_max_age; a blocking callback drops them sooner (client/locks.py)
LRU_MAX_AGE_S = 3900.0
ATTRS_MAX = 65536       # attributes kept under locks at most; past it the oldest go (Lustre's lock LRU)
MiB = 1024 * 1024
KEPT_MAX = 1024         # files whose last writes the client keeps after close (the oldest go first past it)
LOV = "lustre.lov"
SELINUX_LABEL = "security.selinux"


@dataclass
class OpenFile:
    path: str
    layout: Layout | None
    size: int
    fid: str
    refs: int = 0
    dirty: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)
    sending: threading.Lock = field(default_factory=threading.Lock)   # held while what was kept is written back
    ra: ReadAhead | None = None
    wb: WriteBack | None = None   # its dirty data (client/writeback.py)
    written: bool = False         # written since the last close: the MDS gets its size and mtime
    stale: bool = False           # another client changed it (a blocking callback): ask its size again
    read: bool = False            # read since the last close: the MDS gets the access time (relatime)
    mtime_ns: int = 0             # the kernel's mtime of its writes (fuse_flush_times), sent with the size
    # pages the kernel read through a handle open for writing: a write into part of a page not cached makes
    # the kernel read it first (fuse_write_begin), which is no user's read; a page still here at close was
    partial: set[int] = field(default_factory=set)


def _err(e: LustreError | ClientError) -> FuseOSError:
    return FuseOSError(e.errno or errno.EIO)


def attr_dict(a: pb.LustreAttr, size: int | None = None) -> dict[str, Any]:
    sz = a.size if size is None else size
    return {"st_mode": a.mode, "st_ino": a.ino, "st_nlink": a.nlink, "st_uid": a.uid, "st_gid": a.gid,
            "st_size": sz, "st_blocks": (sz + 511) // 512, "st_blksize": 4 * MiB,
            "st_atime": a.atime_ns, "st_mtime": a.mtime_ns, "st_ctime": a.ctime_ns,
            "st_rdev": a.rdev}


def read_moves_atime(a: pb.LustreAttr, now: int, atime_diff_ns: int = ATIME_DIFF_NS) -> bool:
    """Whether a read at `now` of a file with attributes `a` moves the atime the MDS keeps (by the MDS's
    own rule, services/lustre/namespace.py: atime_moves, with its mdd.*.atime_diff)."""
    return atime_moves(a.atime_ns, a.mtime_ns, a.ctime_ns, now, atime_diff_ns)


def groups_of(pid: int) -> list[int]:
    """The caller's supplementary groups (FUSE gives only uid, gid and pid; the kernel's are in /proc)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("Groups:"):
                    return [int(g) for g in line.split()[1:]]
    except OSError:
        pass
    return []


def dirty_expire_s() -> float:
    """The kernel's vm.dirty_expire_centisecs: how long written pages may stay dirty before its flusher
    writes them back (a Lustre client's pages are page cache pages), 30 s by default."""
    try:
        return int(Path("/proc/sys/vm/dirty_expire_centisecs").read_text()) / 100
    except (OSError, ValueError):
        return 30.0


def selinux_enabled() -> bool:
    """Whether this host runs SELinux (its file system is mounted), as the kernel's selinux_is_enabled()."""
    return os.path.isdir("/sys/fs/selinux")


class LustreFuse:
    def __init__(self, client: LustreClient, tunables: Tunables | None = None, uuid: str | None = None) -> None:
        self.c = client
        self.t = tunables or Tunables()
        self.osc = Osc(client, self.t)
        client.mdc_gate = Gate(lambda: self.t.mdc_max_rpcs_in_flight)
        self.kernel = KernelCache()
        self.selinux = selinux_enabled()   # without it, security.selinux is refused (unsupported)
        self.known: set[str] = set()   # paths whose attributes the kernel was given (a callback drops them there)
        self.locks: Locks | None = None
        self.linked: dict[str, str] = {}   # path -> FID of the hard-linked files the kernel was given
        if uuid:   # coherent caching under the MDS's locks (client/locks.py)
            client.md_metadata = ((UUID_KEY, uuid),)
            self.locks = Locks(client, uuid, self._drop, self._drop_all)
        self._mu = threading.Lock()
        self.files: dict[str, OpenFile] = {}
        self.hidden: dict[str, OpenFile] = {}   # libfuse's hidden name -> the open orphan it stands for
        self.handles: dict[int, OpenFile] = {}
        self.next_fh = 1
        self.appenders: set[int] = set()   # handles opened with O_APPEND
        self.writers: set[int] = set()     # handles opened for writing
        self.appends: set[int] = set()     # O_APPEND handles that wrote
        self.attrs: dict[str, tuple[float, pb.LustreAttr]] = {}
        # directory -> every name in it, while this mount holds the directory's lock (listed whole, or made
        # here): a name not in it is ENOENT without asking the MDS (Lustre's negative dentries, kept
        # under the parent's lock); `callbacks` counts blocking callbacks (one during a change: not kept)
        self.names: dict[str, set[str]] = {}
        self.callbacks = 0
        self._statfs: tuple[float, dict[str, int]] | None = None
        # files created here whose write lock the MDS gave this client (mds/ldlm.py), and of those the ones
        # closed with their last writes and size still here (path -> when), written back later
        self.wlocks: set[str] = set()
        self.kept: dict[str, float] = {}
        self._wb_wake = threading.Event()
        self.expire_s = dirty_expire_s()
        # the MDT's mdd.*.atime_diff: llite sends every read's atime in its close and the MDT drops those
        # within it; this mount sends only the ones the MDT would keep (learn_mdt_params)
        self.mdt_atime_diff_ns = ATIME_DIFF_NS

    # ---- helpers -----------------------------------------------------------------------------
    def cred(self) -> pb.LustreCred:
        uid, gid, pid = context()
        return pb.LustreCred(uid=uid, gid=gid, groups=groups_of(pid) if uid else ())

    def _attr(self, path: str, fresh: bool = False) -> pb.LustreAttr:
        if not fresh and (self.locks is None or self.locks.held):   # no lock, no cache
            hit = self.attrs.get(path)
            if hit and hit[0] > time.monotonic():
                return hit[1]
            parent, _, name = path.rpartition("/")
            names = self.names.get(parent or "/") if name else None
            if names is not None and name not in names:
                raise FuseOSError(errno.ENOENT)
        callbacks = self.callbacks
        a = self.c.getattr(path, self.cred())
        if self.locks is not None:   # the reply came with its lock
            self._keep(path, a, callbacks)
        return a

    def _listed(self, path: str, names: set[str], callbacks: int) -> None:
        """`names` is all of directory `path` (if no callback came since `callbacks` was read)."""
        if self.callbacks == callbacks and (self.locks is None or self.locks.held):
            self.names[path] = names

    def _drop(self, path: str, subtree: bool = False) -> None:
        """A blocking callback: what this mount cached of `path` (and under it) is gone, the kernel's too."""
        paths = {path}
        if subtree:
            prefix = path.rstrip("/") + "/"
            paths |= {p for p in list(self.attrs) + list(self.known) + list(self.names) if p.startswith(prefix)}
        self._drop_paths(paths)

    def _drop_paths(self, paths: set[str]) -> None:
        self.callbacks += 1
        for p in paths:
            if p in self.wlocks:   # another client wants it: what was kept goes to the servers first
                self._give_up_logged(p)
        for p in paths:
            cached = self.attrs.pop(p, None)
            self.names.pop(p, None)
            of = self.files.get(p)
            if of is not None:
                of.stale = True
                if of.ra is not None:
                    of.ra.invalidate()
            self.known.discard(p)
            self.kernel.invalidate(p)
            if p != "/" and not (cached is not None and stat.S_ISDIR(cached[1].mode)):
                self._recache(p, of)
        self.kernel.settle()   # the names retired above are expired in the kernel before the cancel

    def _recache(self, path: str, of: OpenFile | None) -> None:
        """Under the kernel's writeback cache (it keeps a file's size and times as its own): a file not open
        here gets a new inode at its next lookup; one open here only for reading grows to the size another
        client wrote (the store that grows it would land in a writer's dirty pages)."""
        if self.kernel.retire(path) or of is None or of.written or of.dirty \
                or any(self.handles.get(fh) is of for fh in list(self.writers)):
            return
        try:
            a = self.c.getattr(path, pb.LustreCred())   # the MDS made the change before it called back
        except (LustreError, ClientError):
            return
        with of.lock:
            grew = a.size > of.size
            if grew:
                of.size = a.size
                of.stale = False
        if grew:
            self.kernel.grow(path, a.size)

    def _refresh(self, of: OpenFile) -> None:
        """An open file another client changed since (a blocking callback): its size now."""
        if of.stale:
            of.stale = False
            a = self.c.getattr(of.path, self.cred())
            with of.lock:
                of.size = max(of.size, a.size) if of.dirty else a.size

    def _drop_all(self) -> None:
        self.learn_mdt_params()   # the MDS this lock stream reached may be another (a failover): its values
        try:   # the MDS that held the write locks is gone (or forgot them): written back first
            self.give_up_writes()
        except OSError as e:
            log.warning("writing back after the lock stream came back: %s", e)
        self._drop_paths({*list(self.known), *list(self.attrs), *list(self.files), *list(self.names)})

    def _forget(self, *paths: str) -> None:
        for p in paths:
            self.attrs.pop(p, None)
            self.names.pop(p, None)
            parent = p.rsplit("/", 1)[0] or "/"
            self.attrs.pop(parent, None)
            self.names.pop(parent, None)

    def _open_state(self, path: str, a: pb.LustreAttr, flags: int = 0) -> int:
        with self._mu:
            of = self.files.get(path)
            if of is None:
                of = OpenFile(path, layout_from_pb(a.layout) if a.HasField("layout") else None, a.size, a.fid)
                self.files[path] = of
            of.refs += 1
            fh = self.next_fh
            self.next_fh += 1
            self.handles[fh] = of
            if flags & os.O_APPEND:
                self.appenders.add(fh)
            if flags & os.O_ACCMODE != os.O_RDONLY:
                self.writers.add(fh)
            return fh

    def _of(self, path: str, fh: int | None) -> OpenFile | None:
        if fh:
            of = self.handles.get(fh)
            if of is not None:
                return of
        return self.files.get(path)

    def _flush_data(self, of: OpenFile) -> None:
        """Every byte written through `of` sent and acknowledged (fsync, close, and before a read of it)."""
        if of.wb is not None:
            of.wb.flush()

    def _push_size(self, of: OpenFile) -> None:
        """The size and mtime a writer made, to the MDS (which revokes the other clients' locks on it)."""
        if not (of.dirty or of.written):
            return
        with of.lock:
            if not (of.dirty or of.written):
                return
            callbacks = self.callbacks
            a = self._md_setattr(of.path, size=of.size, grow_only=True, mtime_ns=of.mtime_ns or time.time_ns())
            of.dirty = of.written = False
            of.mtime_ns = 0
        self.attrs.pop(of.path, None)   # its directory is unchanged
        self._keep(of.path, a, callbacks)   # the stat that follows (ours: under our lock)

    def _ensure_layout(self, of: OpenFile) -> Layout:
        if of.layout is None:
            with of.lock:
                if of.layout is None:
                    a = self.c.setstripe(of.path, cred=self.cred())
                    of.layout = layout_from_pb(a.layout)
        return of.layout

    # ---- attributes --------------------------------------------------------------------------
    def getattr(self, path: str, fh: int | None = None) -> dict[str, Any]:
        path = self._real(path)
        a = self._attr(path)
        self.known.add(path)
        if a.nlink > 1 and not stat.S_ISDIR(a.mode):
            self.linked[path] = a.fid
        of = self._of(path, fh) if not stat.S_ISDIR(a.mode) else None
        if of is not None and of.stale:
            self._refresh(of)
        return attr_dict(a, of.size if of is not None else None)

    def chmod(self, path: str, mode: int) -> int:
        self._setattr(path, mode=mode & 0o7777)
        return 0

    def chown(self, path: str, uid: int, gid: int) -> int:
        kw = {}
        if uid != -1 and uid != 0xFFFFFFFF:
            kw["uid"] = uid
        if gid != -1 and gid != 0xFFFFFFFF:
            kw["gid"] = gid
        if kw:
            self._setattr(path, **kw)
        return 0

    def utimens(self, path: str, times: tuple[int, int] | None = None, touched: bool = False) -> int:
        """`touched`: the mtime may be the kernel's "now" (under its writeback cache the kernel sends the
        time, not FATTR_MTIME_NOW), so only write access was needed, which the kernel checked."""
        path = self._real(path)
        of = self.files.get(path)
        if of is not None and of.written and times is not None and times[0] == UTIME_OMIT \
                and times[1] not in (UTIME_NOW, UTIME_OMIT):
            of.mtime_ns = times[1]   # the kernel's mtime of writes it holds (fuse_flush_times): sent at close
            return 0
        if of is not None:   # the writes before it are older than the times it sets (cp -p, tar)
            self._flush_data(of)
            self._push_size(of)
        now = time.time_ns()   # UTIME_NOW is the caller's now: this client's clock (mds/servicer.py: inode times)
        kw: dict[str, Any] = {}
        if times is None:
            kw = {"atime_ns": now, "mtime_ns": now}
        else:
            for key, t in zip(("atime_ns", "mtime_ns"), times, strict=True):
                if t == UTIME_OMIT:
                    continue
                kw[key] = now if t == UTIME_NOW else t
                if t != UTIME_NOW and not (touched and key == "mtime_ns"):
                    kw["explicit_times"] = True
        if kw:
            self._setattr(path, **kw)
        return 0

    def _md_setattr(self, path: str, **kw: Any) -> pb.LustreAttr:
        r = self.c.mdcall("Setattr", pb.LustreMdsSetattrRequest(path=path, cred=self.cred(), **kw))
        self._drop_names(r.linked)
        return r.attr

    def _drop_names(self, paths: Any) -> None:
        """A hard-linked file changed: what this mount and the kernel hold under its other names goes
        (each name is its own inode to libfuse's path-based API; the MDS names them in its answer)."""
        for p in paths:
            self.attrs.pop(p, None)
            self.kernel.invalidate(p)

    def _setattr(self, path: str, **kw: Any) -> pb.LustreAttr:
        path = self._real(path)
        self.attrs.pop(path, None)   # its directory is unchanged
        a = self._md_setattr(path, **kw)
        self._keep(path, a)   # the getattr libfuse makes next
        return a

    def truncate(self, path: str, length: int, fh: int | None = None) -> int:
        path = self._real(path)
        of = self._of(path, fh)
        if of is not None:
            self._flush_data(of)
            self._push_size(of)
            layout = of.layout
        else:
            a = self._attr(path, fresh=True)
            layout = layout_from_pb(a.layout) if a.HasField("layout") else None
        self._setattr(path, size=length)
        if layout is not None:
            self.c.punch(layout, length)
        if of is not None:
            of.size = length
            if of.ra is not None:
                of.ra.invalidate()
        return 0

    def learn_mdt_params(self) -> None:
        """The MDT's tunables this mount acts on, asked of the MDS at mount (an MDS that does not answer
        leaves Lustre's defaults)."""
        try:
            for p in self.c.mdcall("GetParams", pb.LustreMdsGetParamsRequest()).params:
                self.learn_mdt_param(p.name, p.value)
        except ClientError as e:
            log.warning("the MDS's parameters: %s; keeping the defaults", e)

    def learn_mdt_param(self, name: str, value: int) -> None:
        """A tunable of the MDT changed (`twin lustre lctl set_param mdd.*`)."""
        if name.startswith("mdd.") and name.endswith(".atime_diff"):
            self.mdt_atime_diff_ns = value * 10**9

    def statfs(self, path: str) -> dict[str, int]:
        hit = self._statfs
        if hit and hit[0] > time.monotonic():
            return hit[1]
        r = self.c.statfs()
        bs = 4096
        active = [o for o in r.osts if o.active]
        out = {"f_bsize": bs, "f_frsize": bs, "f_blocks": sum(o.capacity_bytes for o in active) // bs,
               "f_bfree": sum(o.avail_bytes for o in active) // bs,
               "f_bavail": sum(o.avail_bytes for o in active) // bs,
               "f_files": sum(m.inodes_total for m in r.mdts),
               "f_ffree": sum(m.inodes_total - m.inodes_used for m in r.mdts),
               "f_favail": sum(m.inodes_total - m.inodes_used for m in r.mdts), "f_namemax": 255}
        self._statfs = (time.monotonic() + 1.0, out)
        return out

    # ---- namespace ---------------------------------------------------------------------------
    def _list(self, path: str) -> list[tuple[str, pb.LustreAttr]]:
        """A directory's entries and their attributes, in name order: kept here under the directory's lock
        (every name, and each one's attributes under its own), else from the MDS, whose reply brings those
        locks. Listing is reading the directory: its atime moves as a file's does at close (relatime)."""
        entries = self._listed_here(path)
        if entries is None:
            callbacks = self.callbacks
            entries = [(e.name, e.attr) for e in self.c.readdir(path, self.cred())]
            self._listed(path, {name for name, _a in entries}, callbacks)
            base = path.rstrip("/")
            for name, a in entries:
                self._keep(f"{base}/{name}", a, callbacks)
        self._read_atime(path)
        return entries

    def _listed_here(self, path: str) -> list[tuple[str, pb.LustreAttr]] | None:
        """Directory `path` as this mount holds it under its locks, or None if any of it is not held."""
        names = self.names.get(path)
        if names is None or self.locks is None or not self.locks.held:
            return None
        base = path.rstrip("/")
        now = time.monotonic()
        out = []
        for name in sorted(names):
            hit = self.attrs.get(f"{base}/{name}")
            if hit is None or hit[0] <= now:
                return None
            out.append((name, hit[1]))
        return out

    def readdir(self, path: str, fh: int) -> list[Any]:
        out: list[Any] = [".", ".."]
        for name, a in self._list(path):
            out.append((name, {"st_mode": a.mode, "st_ino": a.ino}, 0))
        return out

    def listing(self, path: str, plus: bool) -> tuple[list[tuple[str, dict[str, Any] | None]], bool]:
        """A directory's entries for the kernel, and whether each carries its full attributes: with
        READDIRPLUS they do, unless llite.*.statahead_max is 0 (then the kernel looks each one up)."""
        if plus and self.t.statahead_max != 0:
            return self.readdir_plus(path), True
        return [(e, None) if isinstance(e, str) else (e[0], e[1]) for e in self.readdir(path, 0)], False

    def readdir_plus(self, path: str) -> list[tuple[str, dict[str, Any] | None]]:
        """readdir with every entry's attributes (READDIRPLUS): `ls -l` then needs no LOOKUP each."""
        base = path.rstrip("/")
        out: list[tuple[str, dict[str, Any] | None]] = [(".", None), ("..", None)]
        for name, a in self._list(path):
            p = f"{base}/{name}"
            self.known.add(p)
            of = self.files.get(p)
            out.append((name, attr_dict(a, of.size if of is not None and not stat.S_ISDIR(a.mode) else None)))
        return out

    def mkdir(self, path: str, mode: int) -> int:
        self._forget(path)
        callbacks = self.callbacks
        self.c.mkdir(path, mode & 0o7777, self.cred())
        self._listed(path, set(), callbacks)   # new and empty; the MDS gave this client its lock
        return 0

    def rmdir(self, path: str) -> int:
        self._forget(path)
        self.c.rmdir(path, self.cred())
        return 0

    def unlink(self, path: str) -> int:
        if path in self.hidden:   # libfuse's last close of a file unlinked while open: the orphan goes
            of = self.hidden.pop(path)
            self.c.mdcall("Unlink", pb.LustreMdsUnlinkRequest(path=of.path, cred=self.cred()))
            return 0
        hit = self.attrs.get(path)
        fid = self.linked.pop(path, None) or (hit[1].fid if hit is not None and hit[1].nlink > 1 else None)
        self.give_up_write(path, discard=fid is None)
        parent, _, name = path.rpartition("/")
        names = self.names.get(parent or "/")
        self._forget(path)
        callbacks = self.callbacks
        r = self.c.unlink(path, self.cred())
        if r.HasField("parent"):   # the directory as the unlink left it (the kernel asks for it next)
            self._keep(parent or "/", r.parent, callbacks)
        if names is not None:   # changed in place: a copy per unlink costs as much as the directory is big
            names.discard(name)
            self._listed(parent or "/", names, callbacks)
        if fid is not None:   # a hard-linked file: its other names' link count fell
            self._other_names(fid, path)
        with self._mu:
            self.files.pop(path, None)
        return 0

    def _real(self, path: str) -> str:
        """The path the MDS knows: a hidden name stands for its orphan's FID path."""
        of = self.hidden.get(path)
        return of.path if of is not None else path

    def _orphan(self, path: str, hidden: str, of: OpenFile) -> int:
        """unlink(2) of a file this mount holds open, which libfuse turns into a rename to a hidden name
        of its own: the last name goes on the MDS, which keeps the inode and its objects as an orphan
        reached by FID; libfuse's unlink of the hidden name at the last close destroys it (as llite's
        MDS_CLOSE of an orphan). The hidden name never reaches the MDS: listings do not show it and the
        directory can be removed meanwhile, as on Lustre."""
        self._forget(path)
        self.c.mdcall("Unlink", pb.LustreMdsUnlinkRequest(path=path, cred=self.cred(), open=True))
        with self._mu:
            self.files.pop(path, None)
            of.path = FID_DIR + of.fid
            self.files[of.path] = of
            self.hidden[hidden] = of
        return 0

    def rename(self, old: str, new: str) -> int:
        self.give_up_writes(old)
        self.give_up_writes(new)
        of = self.files.get(old)
        if of is not None and new.rsplit("/", 1)[-1].startswith(HIDDEN) and self._attr(old, fresh=True).nlink == 1:
            return self._orphan(old, new, of)
        of = self.files.get(old)
        if of is not None:
            self._flush_data(of)
            self._push_size(of)
        self._forget(old, new)
        self._drop_names(self.c.mdcall("Rename", pb.LustreMdsRenameRequest(src=old, dst=new, cred=self.cred())).linked)
        with self._mu:
            moved = self.files.pop(old, None)
            self.files.pop(new, None)
            if moved is not None:
                moved.path = new
                self.files[new] = moved
        return 0

    # ---- hard links, symlinks and special files ----------------------------------------------
    def _other_names(self, fid: str, but: str) -> None:
        """A file's link count changed: what this mount and the kernel cached of its other names
        (each its own inode to libfuse's path-based API) goes."""
        cached = [p for p, (_exp, a) in list(self.attrs.items()) if a.fid == fid]
        for p in set(cached) | {p for p, f in list(self.linked.items()) if f == fid}:
            if p != but:
                self.attrs.pop(p, None)
                self.kernel.invalidate(p)

    def link(self, target: str, source: str) -> int:
        """`ln source target`: a second name on the MDS, which counts the file's links."""
        self.give_up_write(source)
        of = self.files.get(source)
        if of is not None:   # the size its writer made, to the MDS first (the new name's stat shows it)
            self._flush_data(of)
            self._push_size(of)
        self._forget(source, target)
        a = self.c.mdcall("Link", pb.LustreMdsLinkRequest(src=source, dst=target, cred=self.cred())).attr
        self._keep(target, a)
        self.linked[source] = self.linked[target] = a.fid
        self._other_names(a.fid, target)
        return 0

    def symlink(self, target: str, source: str) -> int:
        """`ln -s source target`: `source` is the link's body, kept as given (relative or absolute)."""
        self._forget(target)
        a = self.c.mdcall("Symlink", pb.LustreMdsSymlinkRequest(path=target, target=source, cred=self.cred())).attr
        self._keep(target, a)
        return 0

    def readlink(self, path: str) -> str:
        return self.c.mdcall("Readlink", pb.LustreMdsReadlinkRequest(path=path, cred=self.cred())).target

    def mknod(self, path: str, mode: int, dev: int) -> int:
        """FIFOs, sockets (bind of an AF_UNIX socket) and device nodes: inodes on the MDS, nothing behind them
        (the kernel serves a FIFO's or socket's I/O itself)."""
        self._forget(path)
        a = self.c.mdcall("Mknod", pb.LustreMdsMknodRequest(path=path, mode=mode, rdev=dev, cred=self.cred())).attr
        self._keep(path, a)
        return 0

    # ---- files -------------------------------------------------------------------------------
    def create(self, path: str, mode: int, flags: int = 0) -> int:
        parent, _, name = path.rpartition("/")
        parent = parent or "/"
        names = self.names.get(parent)
        self._forget(path)
        callbacks = self.callbacks
        r = self.c.mdcall("Create", pb.LustreMdsCreateRequest(path=path, mode=mode & 0o7777, cred=self.cred()))
        self._keep(path, r.attr)   # libfuse's getattr after create
        if self.callbacks == callbacks and self.locks is not None and self.locks.held:   # the MDS gave it
            self.wlocks.add(path)
        if self.callbacks == callbacks:   # the directory as the create left it (the kernel asks for it next)
            self._keep(parent, r.parent)
            if names is not None:   # in place: concurrent creates here each add theirs to the same set
                names.add(name)
                self._listed(parent, names, callbacks)
        return self._open_state(path, r.attr, flags)

    def open(self, path: str, flags: int) -> int:
        a = self._attr(path, fresh=path not in self.files)
        if stat.S_ISDIR(a.mode):
            raise FuseOSError(errno.EISDIR)
        if flags & os.O_TRUNC and stat.S_ISREG(a.mode):   # libfuse's default atomic_o_trunc: the open truncates
            self.truncate(path, 0)
            a = self.attrs[path][1]
        return self._open_state(path, a, flags)

    def appended(self, fh: int) -> bool:
        """Whether handle `fh` wrote with O_APPEND (the MDS set the size and mtime, not the kernel)."""
        return fh in self.appends

    def open_flags(self, path: str, flags: int) -> int:
        """FOPEN_* of an open: O_APPEND, and every open while osc.*.max_dirty_mb is 0 (no writes cached),
        bypass the kernel's page cache (each write() a request, answered once on the OSTs). Otherwise the
        kernel keeps the file's pages across opens while this client holds the MDS's locks, as llite keeps
        pages under its extent locks: another client's change calls the lock back, which drops the
        kernel's pages and inode first (`_drop_paths`), so what it keeps is never older than the last
        change a close or fsync made. Without the lock stream every open drops them.

        The pages go too when a read would move the file's atime: a read the kernel answers from its
        pages never reaches the mount (FUSE inodes are S_NOATIME), so the open makes the read come here
        and the close send its atime, as llite's close carries the atime its reads set."""
        if flags & os.O_APPEND or self.t.max_dirty_mb == 0:
            return k.FOPEN_DIRECT_IO
        if self.locks is None or not self.locks.held:
            return 0
        hit = self.attrs.get(self._real(path))
        if hit is None or hit[0] <= time.monotonic():
            return 0
        if read_moves_atime(hit[1], time.time_ns(), self.mdt_atime_diff_ns):
            return 0
        return k.FOPEN_KEEP_CACHE

    def read(self, path: str, size: int, offset: int, fh: int) -> bytes:
        of = self._of(path, fh)
        if of is None or of.layout is None:
            return b""
        if of.wb is not None and of.wb.dirty():
            self._flush_data(of)
        self._refresh(of)
        if size == k.PAGE and offset % k.PAGE == 0 and fh in self.writers:
            of.partial.add(offset // k.PAGE)
        else:
            of.read = True
        ra_bytes = self.t.max_read_ahead_mb * MiB
        ra = of.ra
        if ra is None or ra.max_bytes != ra_bytes:
            ra = of.ra = ReadAhead(self.c, of.layout, ra_bytes) if ra_bytes else None
        data = ra.read(offset, size, of.size) if ra is not None else None
        return data if data is not None else self.c.read(of.layout, offset, size, of.size)

    def write(self, path: str, data: bytes, offset: int, fh: int) -> int:
        of = self._of(path, fh)
        if of is None:
            raise FuseOSError(errno.EBADF)
        layout = self._ensure_layout(of)
        if of.ra is not None:
            of.ra.invalidate()
        if fh in self.appenders:
            self.appends.add(fh)
            return self._append(of, layout, data, offset)
        wb = of.wb
        if wb is None or wb.layout is not layout:
            with of.lock:
                if of.wb is None or of.wb.layout is not layout:
                    of.wb = WriteBack(self.osc, layout)
                wb = of.wb
        wb.write(offset, data)
        of.written = True
        n = len(data)
        end = offset + n
        if of.partial:
            of.partial.difference_update(range(offset // k.PAGE, (end - 1) // k.PAGE + 1))
        if end > of.size:
            with of.lock:
                if end > of.size:
                    of.size = end
                    of.dirty = True
        return n

    def _append(self, of: OpenFile, layout: Layout, data: bytes, offset: int) -> int:
        """An O_APPEND write lands at the end of the file as the MDS knows it, whatever the kernel's
        offset: Lustre takes a whole-file PW extent lock and glimpses the size for it. Here the MDS moves
        the end past the data in one call (Setattr append) and the data is on the OSTs before write()
        returns, so appenders on two clients never write over each other. The MDS revokes the other
        clients' locks on the file (their cached size goes)."""
        self._flush_data(of)   # this client's earlier writes, and their size, first
        self._push_size(of)
        callbacks = self.callbacks
        a = self._md_setattr(of.path, append=len(data), mtime_ns=time.time_ns())
        self.c.write(layout, a.size - len(data), data)
        with of.lock:
            of.size = max(of.size, a.size)
        self._keep(of.path, a, callbacks)
        if a.size > offset + len(data):   # the kernel's end (its offset) is behind: other clients appended
            self.kernel.grow(of.path, a.size)
        return len(data)

    def _keep(self, path: str, a: pb.LustreAttr, callbacks: int | None = None) -> None:
        """A reply's attributes of `path` cached: under its lock (the MDS calls it back), or for ATTR_CACHE_S
        without a lock stream. Not if a blocking callback came since `callbacks` was read: the reply may be
        older than another client's change the callback was for."""
        if callbacks is not None and self.callbacks != callbacks:
            return
        self.attrs[path] = (time.monotonic() + (ATTR_CACHE_S if self.locks is None else LRU_MAX_AGE_S), a)
        if len(self.attrs) > ATTRS_MAX:   # the oldest quarter goes (dicts keep insertion order)
            for p in list(self.attrs)[:ATTRS_MAX // 4]:
                self.attrs.pop(p, None)

    def flush(self, path: str, fh: int) -> int:
        of = self._of(path, fh)
        if of is not None and not self._may_keep(of):
            # close: the data to the OSTs and the size to the MDS at once, both awaited
            wb = of.wb
            sent = wb.send_all() if wb is not None else []
            try:
                self._push_size(of)
            finally:
                if wb is not None:
                    wb.wait(sent)
        if of is not None:
            if of.partial:   # pages read and then not written: a user's read after all
                of.partial.clear()
                of.read = True
            if of.read:
                self._push_atime(of)
        return 0

    def _push_atime(self, of: OpenFile) -> None:
        """A read's access time to the MDS at close, as llite packs it into MDS_CLOSE."""
        of.read = False
        self._read_atime(of.path)

    def _read_atime(self, path: str) -> None:
        """A read of `path` now, sent to the MDS only when it would move its atime there (by the
        attributes this mount holds under its lock): relatime, and more than mdd.*.atime_diff after the
        stored atime (llite packs it into the close it sends anyway; the MDT drops it), so most reads and
        listings cost nothing."""
        now = time.time_ns()
        if not read_moves_atime(self._attr(path), now, self.mdt_atime_diff_ns):
            return
        callbacks = self.callbacks
        a = self._md_setattr(path, atime_ns=now, read_atime=True)
        self._keep(path, a, callbacks)
        self.kernel.invalidate(path)   # the kernel's cached atime is the old one

    def fsync(self, path: str, datasync: int, fh: int) -> int:
        of = self._of(path, fh)
        if of is None:
            return 0
        self._flush_data(of)
        self._push_size(of)
        if of.layout is not None:
            self.c.sync(of.layout)
        return 0

    def release(self, path: str, fh: int) -> int:
        with self._mu:
            of = self.handles.pop(fh, None)
            self.appenders.discard(fh)
            self.writers.discard(fh)
            self.appends.discard(fh)
        if of is None:
            return 0
        with self._mu:
            keep = self._may_keep(of)
            if keep:
                of.refs -= 1
                if of.refs <= 0:
                    self.kept.pop(of.path, None)
                    self.kept[of.path] = time.monotonic()
        if keep:
            if len(self.kept) > KEPT_MAX:
                self._wb_wake.set()
            return 0
        try:
            self._flush_data(of)
            self._push_size(of)
        finally:
            with self._mu:
                of.refs -= 1
                self._drop_closed(of)
        return 0

    def _drop_closed(self, of: OpenFile) -> None:
        """`of` out of the files this mount holds once nothing has it open or kept (under self._mu)."""
        if of.refs <= 0 and of.path not in self.kept and self.files.get(of.path) is of:
            del self.files[of.path]

    # ---- what is kept after close, under the write lock ---------------------------------------
    def _may_keep(self, of: OpenFile) -> bool:
        """Whether `of`'s last writes and size may stay here after close: a file this client created holds
        its write lock (the MDS calls it back before anyone else sees the file), and what it holds is less
        than one write RPC (a partial RPC, which Lustre's OSC keeps until writeback, fsync or a lock
        conflict). Off with max_dirty_mb=0, or when the lock stream is down."""
        if of.path not in self.wlocks or self.t.max_dirty_mb == 0 or self.locks is None or not self.locks.held:
            return False
        if of.wb is not None and of.wb.buffered >= self.t.rpc_bytes:
            return False
        return of.written or of.dirty or (of.wb is not None and of.wb.dirty())

    def write_back(self, path: str) -> None:
        """What a closed file kept here: its data to the OSTs and its size to the MDS (the write lock
        stays: later writes here may be kept again)."""
        with self._mu:
            if self.kept.pop(path, None) is None:
                return
            of = self.files.get(path)
            if of is None or of.refs > 0:   # open again: its next close keeps or sends it
                return
        with of.sending:
            try:
                self._flush_data(of)
                self._push_size(of)
            finally:
                with self._mu:
                    self._drop_closed(of)

    def give_up_write(self, path: str, discard: bool = False) -> None:
        """The write lock on `path` ends (called back, or the path is removed or moved here): what was
        kept written back first, or with `discard` (an unlink) dropped, as Lustre drops the dirty pages
        of a destroyed object."""
        with self._mu:
            if path not in self.wlocks:
                return
            self.wlocks.discard(path)
            self.kept.pop(path, None)
            of = self.files.get(path)
        if of is None:
            return
        with of.sending:   # a write-back of it already running ends first
            if discard:
                if of.wb is not None:
                    of.wb.discard()
                of.dirty = of.written = False
            else:
                self._flush_data(of)
                self._push_size(of)
            with self._mu:
                self._drop_closed(of)

    def give_up_writes(self, under: str | None = None) -> None:
        """Every write lock (or those on `under` and below it) given up: written back, several at once
        (an unmount has its grace period to do it in); the first failure is raised once all were tried."""
        prefix = under.rstrip("/") + "/" if under is not None else "/"
        paths = [p for p in list(self.wlocks) if p == under or p.startswith(prefix)]
        if len(paths) <= 1:
            for p in paths:
                self.give_up_write(p)
            return
        with ThreadPoolExecutor(self.t.mdc_max_rpcs_in_flight, thread_name_prefix="lustre-giveup") as pool:
            list(pool.map(self.give_up_write, paths))   # every one tried; the first failure raised

    def _give_up_logged(self, path: str) -> None:
        """give_up_write, a failure logged: the caller (a callback, an unmount) goes on with the others."""
        try:
            self.give_up_write(path)
        except OSError as e:
            log.warning("writing back %s: %s", path, e)

    def _write_behind(self) -> None:
        """Kept files written back once they are older than the kernel's dirty_expire_centisecs (as the
        kernel's flusher writes back a Lustre client's dirty pages), or when more than KEPT_MAX are kept."""
        while True:
            self._wb_wake.wait(1.0)
            self._wb_wake.clear()
            now = time.monotonic()
            with self._mu:
                over = len(self.kept) - KEPT_MAX
                due = [p for i, (p, t) in enumerate(self.kept.items()) if i < over or now - t >= self.expire_s]
            for p in due:
                try:
                    self.write_back(p)
                except OSError as e:   # the file went meanwhile, or its servers: the next access says so
                    log.warning("writing back %s: %s", p, e)

    # ---- extended attributes -----------------------------------------------------------------
    def getxattr(self, path: str, name: str, position: int = 0) -> bytes:
        if self.unsupported(name):
            raise FuseOSError(errno.EOPNOTSUPP)
        if name == LOV:
            a = self._attr(path)
            if a.HasField("layout"):
                f = Fid.parse(a.fid)
                return lov_xattr(layout_from_pb(a.layout), f.seq, f.oid, f.ver)
            raise FuseOSError(errno.ENODATA)
        if not name.startswith(STORED) or name.startswith(PRIVILEGED) and not self._attr(path).privileged_xattrs:
            raise FuseOSError(errno.ENODATA)
        return self.c.mdcall("Getxattr", pb.LustreMdsGetxattrRequest(path=path, name=name,
                                                                     cred=self.cred())).value

    def listxattr(self, path: str) -> list[str]:
        a = self._attr(path)
        names = self.c.listxattr(path, self.cred())
        return ([LOV] if a.HasField("layout") else []) + names

    def setxattr(self, path: str, name: str, value: bytes, options: int, position: int = 0) -> int:
        if name == LOV:
            a = self._attr(path, fresh=True)
            if a.HasField("layout") and not stat.S_ISDIR(a.mode):
                return 0   # the file already has its layout: ignored, as Lustre does
            try:
                layout, _fid = parse_lov_xattr(bytes(value))
                self.c.setstripe(path, count=layout.stripe_count, size=layout.stripe_size,
                                 index=-1, cred=self.cred())
            except (LustreError, ClientError) as e:
                raise _err(e) from None
            self._forget(path)
            of = self.files.get(path)
            if of is not None:
                of.layout = None
                a = self._attr(path, fresh=True)
                of.layout = layout_from_pb(a.layout) if a.HasField("layout") else None
            return 0
        if not name.startswith(STORED) or self.unsupported(name):
            raise FuseOSError(errno.ENOTSUP)
        self.attrs.pop(path, None)   # its privileged_xattrs may change
        self._drop_names(self.c.mdcall("Setxattr", pb.LustreMdsSetxattrRequest(
            path=path, name=name, value=bytes(value), flags=options, cred=self.cred())).linked)
        return 0

    def unsupported(self, name: str) -> bool:
        """The xattrs this mount refuses with EOPNOTSUPP, for reads, changes and removal:
        POSIX ACLs, which it keeps none of (as Linux answers for a file system without ACL support), and
        security.selinux on a host without SELinux (as Lustre's llite does: LU-549, lustre/llite/xattr.c).
        coreutils' `ls -l` then stops asking for them on this mount."""
        return name.startswith("system.") or name == SELINUX_LABEL and not self.selinux

    def removexattr(self, path: str, name: str) -> int:
        if self.unsupported(name):
            raise FuseOSError(errno.EOPNOTSUPP)
        if not name.startswith(STORED):
            raise FuseOSError(errno.ENODATA if name != LOV else errno.EPERM)
        self.attrs.pop(path, None)
        self._drop_names(self.c.mdcall("Removexattr", pb.LustreMdsRemovexattrRequest(
            path=path, name=name, cred=self.cred())).linked)
        return 0

    def access(self, path: str, amode: int) -> int:
        return 0

    def init(self, session: Any) -> None:
        """The kernel's INIT: from now on the mount's lock callbacks reach the kernel's cache."""
        self.kernel.attach(session)
        if self.locks is not None:
            self.locks.start()
            threading.Thread(target=self._write_behind, name="lustre-writebehind", daemon=True).start()

    def killpriv(self, path: str, suidgid: bool, caps: bool) -> None:
        """What the kernel leaves to the mount under FUSE_HANDLE_KILLPRIV_V2: a write by someone without
        CAP_FSETID (`suidgid`) drops setuid, and setgid of a group-executable file; any write (`caps`)
        drops the file's capabilities (security.capability), as file_remove_privs() would. Asked of the
        attributes this mount holds: most files have neither, and cost nothing here."""
        a = self._attr(self._real(path))
        if suidgid and a.mode & (stat.S_ISUID | stat.S_ISGID):
            drop = stat.S_ISUID | (stat.S_ISGID if a.mode & stat.S_IXGRP else 0)
            if a.mode & drop:
                self._setattr(path, mode=a.mode & 0o7777 & ~drop)
        if caps and a.privileged_xattrs:
            try:
                self.removexattr(self._real(path), CAPABILITY)
            except OSError as e:
                if e.errno != errno.ENODATA:
                    raise


CAPABILITY = "security.capability"
MOUNT_OPTIONS = "nosuid,nodev,allow_other,default_permissions,subtype=lustre,max_read=1048576"
# what the kernel may do (client/kernel.py): the read-ahead and writes of 1 MiB, READDIRPLUS for every
# chunk of a listing (not READDIRPLUS_AUTO), the setuid/capability duty on writes (KILLPRIV_V2), and the
# page cache keeping writes (WRITEBACK_CACHE: write() answered from memory, the pages sent in 1 MiB writes
# at writeback, fsync and close, as llite keeps dirty pages for the OSC)
WANT = (k.ASYNC_READ | k.ATOMIC_O_TRUNC | k.BIG_WRITES | k.DO_READDIRPLUS | k.ASYNC_DIO | k.PARALLEL_DIROPS
        | k.MAX_PAGES | k.HANDLE_KILLPRIV_V2 | k.WRITEBACK_CACHE)


def mount(client: LustreClient, mountpoint: str, control: Path | None = None) -> None:
    """Mount (blocks until unmounted, or SIGTERM/SIGINT/SIGHUP unmounts it); `control`: the socket
    `twin lustre lctl` reaches its tunables on."""
    import signal

    from services.lustre.client.session import Session
    from services.lustre.client.stats import Stats
    from services.lustre.client.tunables import Registry, instance_id

    instance = instance_id(mountpoint, os.getpid())
    fs = LustreFuse(client, uuid=f"{client.fsname}-{instance}")
    fs.learn_mdt_params()   # now: its lock stream, which asks again, starts only at the kernel's INIT
    stats = Stats()
    if control is not None:
        from services.lustre.client import control as ctl

        ctl.serve(control, Registry(fs.t, client.fsname, sorted(client.osts), instance), stats,
                  fs.learn_mdt_param)
    # default_permissions: the kernel checks mode bits, sticky directories and chown on the attributes it
    # holds (coherent under the MDS's locks), as llite's ll_inode_permission runs generic_permission on the
    # client; the MDS checks each change again with the caller's credentials
    fd = k.mount(mountpoint, f"{MOUNT_OPTIONS},fsname={client.fsname}")
    session = Session(fs, k.Channel(fd), LRU_MAX_AGE_S, WANT, stats)
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda *_: session.stop())
    try:
        session.serve()
    finally:
        try:
            fs.give_up_writes()   # unmounted or stopped: what was kept after close goes to the servers
        except Exception:  # noqa: BLE001 - the unmount goes on; what could not be sent is in the log
            log.exception("writing back at unmount")
        if fs.locks is not None:
            fs.locks.stop()
        k.unmount(mountpoint)
        os.close(fd)


__all__ = ["LustreFuse", "mount"]
