"""The MDS namespace: inodes, FIDs, directories, permissions, and each file's layout.

A deterministic state machine (no I/O, no wall clock: every mutation takes `now`). Requests are
validated whole before anything changes, and refusals are `LustreError`s named by POSIX errno.

Files get their layout at creation (objects allocated on OSTs through the `Allocator`, object ids
from a per-OST counter as the MDS's OSP precreates them), unless created with `delay_layout`
(`O_LOV_DELAY_CREATE`, as `lfs setstripe` does before setting one). Directories carry an optional
default `StripeSpec`; new files take it, and new subdirectories inherit it.

The OST states passed in are the MDS's statfs view; this model also accounts objects and bytes on
them so that one process (tests, `twin lustre estimate`) sees consistent `lfs df` figures. The OSS
daemons will own those figures and report them back.
"""

from __future__ import annotations

import stat as st
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from services.lustre.errors import LustreError
from services.lustre.fid import ROOT_FID, Fid, FidAllocator
from services.lustre.layout import Allocator, Layout, StripeObject, StripeSpec, resolve
from services.lustre.ost import MdtState, OstState

FIRST_OBJID = 2  # the first object id a fresh OST hands out (the FIDELITY §5 sample shows objid 2)
OST_SEQ_BASE = 0x240000400  # sequence (the `group` column) of OST0000's objects; modelled
OST_SEQ_STRIDE = 0x40000000
NAME_MAX = 255
PATH_MAX = 4096   # a symlink's body is at most PATH_MAX - 1 bytes, as Linux's symlink(2)
SPECIAL = (st.S_IFIFO, st.S_IFSOCK, st.S_IFCHR, st.S_IFBLK)   # mknod's inode-only types
FID_DIR = "/.lustre/fid/"   # a file by its FID, as Lustre's hidden .lustre/fid directory gives it

R, W, X = 4, 2, 1
RELATIME_NS = 24 * 3600 * 10**9   # relatime: an atime a day old moves on a read even if newer than mtime
# mdd.*.atime_diff, Lustre's default (MAX_ATIME_DIFF, 60 s): a reader's atime no more than this after the stored
# one is not saved (mdd_fix_attr drops LA_ATIME from a close's times), so a file or directory read
# over and over costs the MDT one atime write a minute
ATIME_DIFF_NS = 60 * 10**9


def atime_moves(atime: int, mtime: int, ctime: int, when: int, atime_diff: int = ATIME_DIFF_NS) -> bool:
    """Whether a read at `when` moves an atime the MDT keeps: under relatime (Linux's default, which
    llite follows) only if atime is not after mtime or ctime, or is a day old, and then only if `when`
    is more than `atime_diff` after it (mdd.*.atime_diff)."""
    if atime > max(mtime, ctime) and when - atime < RELATIME_NS:
        return False
    return when - atime > atime_diff


def ost_seq(index: int) -> int:
    """The FID sequence of objects on OST `index` (the `group` column of `lfs getstripe`)."""
    return OST_SEQ_BASE + index * OST_SEQ_STRIDE


@dataclass(frozen=True)
class Cred:
    """Who is asking: uid, primary gid and supplementary groups. uid 0 bypasses permission bits."""

    uid: int = 0
    gid: int = 0
    groups: tuple[int, ...] = ()


ROOT = Cred()


@dataclass
class Inode:
    fid: Fid
    ino: int
    is_dir: bool
    mode: int  # permission bits (07777)
    uid: int
    gid: int
    ctime: int   # times: integer nanoseconds since the epoch, as the MDT's struct timespec
    mtime: int
    atime: int
    size: int = 0
    nlink: int = 1
    children: dict[str, Inode] = field(default_factory=dict)
    layout: Layout | None = None  # files
    default_spec: StripeSpec | None = None  # directories
    kind: int = st.S_IFREG  # the file type of a non-directory: S_IFREG, S_IFLNK or one of SPECIAL
    target: str = ""  # a symlink's body
    rdev: int = 0  # a device node's device number

    @property
    def st_mode(self) -> int:
        return (st.S_IFDIR if self.is_dir else self.kind) | self.mode

    @property
    def is_reg(self) -> bool:
        return not self.is_dir and self.kind == st.S_IFREG


@dataclass(frozen=True)
class Stat:
    fid: Fid
    ino: int
    mode: int  # including file type bits
    nlink: int
    uid: int
    gid: int
    size: int
    blocks: int  # 512-byte blocks
    atime: int
    mtime: int
    ctime: int


def split(path: str) -> list[str]:
    """Path components of an absolute path inside the filesystem ("/" is the root)."""
    if not path.startswith("/"):
        raise LustreError("EINVAL", f"path {path!r} must be absolute inside the filesystem (start with /)")
    parts = [p for p in path.split("/") if p and p != "."]
    if ".." in parts:
        raise LustreError("EINVAL", f"path {path!r}: '..' is not supported, give a normalised path")
    for p in parts:
        if len(p.encode()) > NAME_MAX:
            raise LustreError("ENAMETOOLONG", f"name {p[:20]!r}... longer than {NAME_MAX} bytes")
    return parts


class Namespace:
    """One filesystem's namespace on MDT0000."""

    def __init__(
        self,
        fsname: str,
        osts: Sequence[OstState],
        now: int,
        *,
        mdt: MdtState | None = None,
        allocator: Allocator | None = None,
    ) -> None:
        if not fsname or len(fsname) > 8 or not fsname.replace("_", "").isalnum():
            raise LustreError("EINVAL", f"filesystem name {fsname!r}: 1-8 letters, digits or '_'")
        if len({o.index for o in osts}) != len(osts):
            raise LustreError("EINVAL", "duplicate OST index")
        self.fsname = fsname
        self.osts: dict[int, OstState] = {o.index: o for o in sorted(osts, key=lambda o: o.index)}
        self.mdt = mdt or MdtState()
        self.allocator = allocator or Allocator()
        self.fids = FidAllocator()
        self.atime_diff_ns = ATIME_DIFF_NS
        self.next_objid: dict[int, int] = {i: FIRST_OBJID for i in self.osts}
        self._next_ino = 2
        self.mdt.take_inode()
        self.root = Inode(ROOT_FID, 1, True, 0o755, 0, 0, now, now, now, nlink=2)
        self.by_fid: dict[Fid, Inode] = {ROOT_FID: self.root}
        self.orphans: dict[int, Inode] = {}   # unlinked while open: ino -> inode, objects kept

    # ---- lookup -----------------------------------------------------------------------------

    def lookup(self, path: str, cred: Cred = ROOT) -> Inode:
        found = self.find(path, cred)
        if isinstance(found, str):
            raise LustreError("ENOENT", f"{found}: no such file or directory")
        return found

    def find(self, path: str, cred: Cred = ROOT) -> Inode | str:
        """`lookup`, with a missing name answered by the path up to it instead of ENOENT: a create asks
        this of every new name, and an exception per create cost more than the walk."""
        if path.startswith(FID_DIR):
            node = self._by_fid_path(path)
            if node.ino not in self.orphans and cred.uid != 0:   # no path walk: root only, as open-by-handle
                raise LustreError("EACCES", f"{path}: files by FID are root's (orphans: their opener's)")
            return node
        node = self.root
        walked = ""
        for name in split(path):
            if not node.is_dir:
                raise LustreError("ENOTDIR", f"{walked or '/'} is not a directory (looking up {path})")
            self._check(node, X, cred, walked or "/")
            walked += "/" + name
            child = node.children.get(name)
            if child is None:
                return walked
            node = child
        return node

    def stat(self, path: str, cred: Cred = ROOT) -> Stat:
        n = self.lookup(path, cred)
        return Stat(n.fid, n.ino, n.st_mode, n.nlink, n.uid, n.gid, n.size, (n.size + 511) // 512,
                    n.atime, n.mtime, n.ctime)

    def fid2path(self, fid: Fid) -> str:
        target = self.by_fid.get(fid)
        if target is None:
            raise LustreError("ENOENT", f"no file with FID {fid}")
        for path, node in self.walk("/"):
            if node is target:
                return path
        raise LustreError("ENOENT", f"no file with FID {fid}")  # pragma: no cover - by_fid is kept in sync

    def readdir(self, path: str, cred: Cred = ROOT) -> list[str]:
        d = self.lookup(path, cred)
        if not d.is_dir:
            raise LustreError("ENOTDIR", f"{path} is not a directory")
        self._check(d, R, cred, path)
        return sorted(d.children)

    def walk(self, path: str = "/") -> Iterator[tuple[str, Inode]]:
        """Every (path, inode) under `path`, itself first, depth-first in name order."""
        start = self.lookup(path)
        base = "/" + "/".join(split(path))
        stack = [(base, start)]
        while stack:
            p, n = stack.pop()
            yield p, n
            if n.is_dir:
                for name in sorted(n.children, reverse=True):
                    stack.append(((p.rstrip("/") + "/" + name), n.children[name]))

    # ---- creation ---------------------------------------------------------------------------

    def mkdir(self, path: str, now: int, mode: int = 0o755, cred: Cred = ROOT,
              spec: StripeSpec | None = None) -> Inode:
        """A new directory; its default layout is `spec`, else the parent's (inherited at creation)."""
        if spec is not None:
            spec.validate(self._ost_count())
        parent, name = self._new_entry(path, cred)
        self.mdt.take_inode()
        d = self._inode(True, mode, cred, now, parent)
        d.nlink = 2
        d.default_spec = spec if spec is not None else parent.default_spec
        parent.children[name] = d
        parent.nlink += 1
        parent.mtime = parent.ctime = now
        return d

    def create(self, path: str, now: int, mode: int = 0o644, cred: Cred = ROOT,
               spec: StripeSpec | None = None, delay_layout: bool = False) -> Inode:
        """A new empty regular file with objects allocated per `spec` + the directory default."""
        given = spec or StripeSpec()
        given.validate(self._ost_count())
        parent, name = self._new_entry(path, cred)
        objects = None if delay_layout else self._plan(given, parent.default_spec)
        self.mdt.take_inode()
        f = self._inode(False, mode, cred, now, parent)
        if objects is not None:
            f.layout = self._commit(objects, resolve(given, parent.default_spec).size, gen=0)
        parent.children[name] = f
        parent.mtime = parent.ctime = now
        return f

    def setstripe(self, path: str, spec: StripeSpec, now: int, cred: Cred = ROOT) -> Inode:
        """`lfs setstripe`: a directory's default; a new file with this layout; or the layout of a
        file created without one. A file that already has a layout is refused with EEXIST."""
        spec.validate(self._ost_count())
        try:
            node = self.lookup(path, cred)
        except LustreError as e:
            if e.name != "ENOENT":
                raise
            return self.create(path, now, cred=cred, spec=spec)
        self._check_owner(node, cred, path)
        if node.is_dir:
            node.default_spec = None if spec == StripeSpec() and node is not self.root else spec
            node.ctime = now
            return node
        if not node.is_reg:
            raise LustreError("EINVAL", f"{path} is not a regular file or directory: it has no layout")
        if node.layout is not None:
            raise LustreError("EEXIST", f"{path} already has a layout; layouts are set at creation (use lfs migrate)")
        parent = self.lookup("/" + "/".join(split(path)[:-1]), cred)
        objects = self._plan(spec, parent.default_spec)
        node.layout = self._commit(objects, resolve(spec, parent.default_spec).size, gen=0)
        node.ctime = now
        return node

    def migrate(self, path: str, spec: StripeSpec, now: int, cred: Cred = ROOT) -> list[StripeObject]:
        """`lfs migrate`: a new layout (generation + 1) for an existing file. Returns the old objects,
        which the caller copies from and then destroys on their OSTs."""
        spec.validate(self._ost_count())
        f = self._file(path, cred)
        if not f.is_reg:
            raise LustreError("EINVAL", f"{path} is not a regular file: it has no objects to migrate")
        self._check(f, W, cred, path)
        parent = self.lookup("/" + "/".join(split(path)[:-1]), cred)
        snapshot = (self.allocator.rr_cursor, dict(self.allocator.credits))
        objects = self._plan(spec, parent.default_spec)
        stripe_size = resolve(spec, parent.default_spec).size
        probe = Layout(stripe_size, tuple(StripeObject(i, 0, 0) for i in objects))
        for slot, i in enumerate(objects):
            if probe.object_size(slot, f.size) > self.osts[i].avail_bytes:
                self.allocator.rr_cursor, self.allocator.credits = snapshot
                raise LustreError("ENOSPC", f"{path}: OST{i:04x} has no room for its part of the migrated file")
        old = f.layout
        gen = old.gen + 1 if old else 0
        new = self._commit(objects, stripe_size, gen=gen)
        size = f.size
        if old:
            self._release(old, size)
        f.layout = new
        self._account(new, 0, size)
        f.ctime = now
        return list(old.objects) if old else []

    def link(self, src: str, dst: str, now: int, cred: Cred = ROOT) -> Inode:
        """A hard link: `dst` a second name of the file at `src` (its nlink counts the names)."""
        node = self.lookup(src, cred)
        if node.is_dir:
            raise LustreError("EPERM", f"{src} is a directory: hard links to directories are not allowed")
        parent, name = self._new_entry(dst, cred)
        node.nlink += 1
        node.ctime = now
        parent.children[name] = node
        parent.mtime = parent.ctime = now
        return node

    def symlink(self, path: str, target: str, now: int, cred: Cred = ROOT) -> Inode:
        """A symbolic link whose body is `target` (not resolved: dangling links are allowed)."""
        if not target:
            raise LustreError("ENOENT", f"{path}: a symlink's target may not be empty")
        if len(target.encode()) >= PATH_MAX:
            raise LustreError("ENAMETOOLONG", f"{path}: symlink target longer than {PATH_MAX - 1} bytes")
        parent, name = self._new_entry(path, cred)
        self._special_inode_free()
        self.mdt.take_inode()
        node = self._inode(False, 0o777, cred, now, parent)
        node.kind, node.target, node.size = st.S_IFLNK, target, len(target.encode())
        parent.children[name] = node
        parent.mtime = parent.ctime = now
        return node

    def mknod(self, path: str, mode: int, rdev: int, now: int, cred: Cred = ROOT) -> Inode:
        """mknod(2): a FIFO, socket or device node (an inode, nothing behind it), or an empty regular file."""
        kind = st.S_IFMT(mode) or st.S_IFREG
        if kind == st.S_IFREG:
            return self.create(path, now, mode, cred, delay_layout=True)
        if kind not in SPECIAL:
            raise LustreError("EINVAL", f"{path}: mknod makes FIFOs, sockets, device nodes and regular files "
                              f"(file type {kind:o} given)")
        if kind in (st.S_IFCHR, st.S_IFBLK) and cred.uid != 0:
            raise LustreError("EPERM", f"{path}: only root may make device nodes")
        parent, name = self._new_entry(path, cred)
        self._special_inode_free()
        self.mdt.take_inode()
        node = self._inode(False, mode, cred, now, parent)
        node.kind, node.rdev = kind, rdev if kind in (st.S_IFCHR, st.S_IFBLK) else 0
        parent.children[name] = node
        parent.mtime = parent.ctime = now
        return node

    # ---- removal and rename ----------------------------------------------------------------

    def unlink(self, path: str, now: int, cred: Cred = ROOT, open_: bool = False) -> list[StripeObject]:
        """Remove a file; returns its objects, which the OSSs destroy. `open_`: a client holds it open, so
        with its last name it becomes an orphan (reached by FID_DIR + FID) whose objects stay until that
        path is unlinked; unlinking a FID_DIR path destroys an orphan."""
        if path.startswith(FID_DIR):
            node = self._by_fid_path(path)
            if self.orphans.pop(node.ino, None) is None:
                raise LustreError("EBUSY", f"{path}: a file with names is unlinked by name")
            return self._destroy(node)
        parent, name, node = self._existing_entry(path, cred)
        if node.is_dir:
            raise LustreError("EISDIR", f"{path} is a directory (use rmdir)")
        self._check_sticky(parent, node, cred, path)
        del parent.children[name]
        parent.mtime = parent.ctime = now
        if open_ and node.nlink == 1:
            node.nlink, node.ctime = 0, now
            self.orphans[node.ino] = node
            return []
        return self._drop_link(node, now)

    def rmdir(self, path: str, now: int, cred: Cred = ROOT) -> None:
        if not split(path):
            raise LustreError("EBUSY", "cannot remove the filesystem root")
        parent, name, node = self._existing_entry(path, cred)
        if not node.is_dir:
            raise LustreError("ENOTDIR", f"{path} is not a directory")
        if node.children:
            raise LustreError("ENOTEMPTY", f"{path} is not empty ({len(node.children)} entries)")
        self._check_sticky(parent, node, cred, path)
        del parent.children[name]
        parent.nlink -= 1
        parent.mtime = parent.ctime = now
        self._destroy(node)

    def rename(self, src: str, dst: str, now: int, cred: Cred = ROOT) -> list[StripeObject]:
        """POSIX rename; a replaced destination file's objects are returned for destruction."""
        sparent, sname, node = self._existing_entry(src, cred)
        dparts = split(dst)
        if not dparts:
            raise LustreError("EBUSY", "cannot rename onto the filesystem root")
        dparent = self._dir("/" + "/".join(dparts[:-1]), cred)
        dname = dparts[-1]
        self._check(dparent, W | X, cred, "/" + "/".join(dparts[:-1]))
        self._check_sticky(sparent, node, cred, src)
        existing = dparent.children.get(dname)
        if existing is node:
            return []
        if existing is not None:
            self._check_sticky(dparent, existing, cred, dst)
        if node.is_dir and dparts[: len(split(src))] == split(src):
            raise LustreError("EINVAL", f"cannot move {src} into itself ({dst})")
        if existing is not None:
            if node.is_dir and not existing.is_dir:
                raise LustreError("ENOTDIR", f"cannot replace file {dst} with directory {src}")
            if not node.is_dir and existing.is_dir:
                raise LustreError("EISDIR", f"cannot replace directory {dst} with file {src}")
            if existing.is_dir and existing.children:
                raise LustreError("ENOTEMPTY", f"{dst} is not empty")
        freed: list[StripeObject] = []
        if existing is not None:
            del dparent.children[dname]
            if existing.is_dir:
                dparent.nlink -= 1
                freed = self._destroy(existing)
            else:
                freed = self._drop_link(existing, now)
        del sparent.children[sname]
        dparent.children[dname] = node
        if node.is_dir:
            sparent.nlink -= 1
            dparent.nlink += 1
        for p in (sparent, dparent):
            p.mtime = p.ctime = now
        node.ctime = now
        return freed

    # ---- attributes -------------------------------------------------------------------------

    def set_size(self, path: str, size: int, now: int, cred: Cred = ROOT) -> None:
        """The file's size after writes or truncate; object bytes on the OSTs follow the layout."""
        if size < 0:
            raise LustreError("EINVAL", f"size {size} is negative")
        f = self._file(path, cred)
        if not f.is_reg:
            raise LustreError("EINVAL", f"{path} is not a regular file: it has no size to set")
        self._check(f, W, cred, path)
        if f.layout is None and size > 0:
            parent = self.lookup("/" + "/".join(split(path)[:-1]), cred)
            f.layout = self._commit(self._plan(StripeSpec(), parent.default_spec),
                                    resolve(StripeSpec(), parent.default_spec).size, gen=0)
        if f.layout is not None:
            self._account(f.layout, f.size, size)
        f.size = size
        f.mtime = f.ctime = now

    def chmod(self, path: str, mode: int, now: int, cred: Cred = ROOT) -> None:
        n = self.lookup(path, cred)
        mode &= 0o7777
        if mode != n.mode and mode == n.mode & ~(st.S_ISUID | st.S_ISGID) and not n.is_dir:
            n.mode = mode   # a writer's kernel dropping setuid/setgid (ATTR_KILL_SUID): anyone's write may
            n.ctime = now
            return
        self._check_owner(n, cred, path)
        if cred.uid != 0 and n.gid != cred.gid and n.gid not in cred.groups:
            mode &= ~st.S_ISGID   # setgid only for a member of the file's group (Linux clears it silently)
        n.mode = mode
        n.ctime = now

    def chown(self, path: str, uid: int, gid: int, now: int, cred: Cred = ROOT) -> None:
        """chown(2): root changes anything; the owner may only change the group, to one of their own."""
        n = self.lookup(path, cred)
        if cred.uid != 0:
            if uid != n.uid:
                raise LustreError("EPERM", f"{path}: only root may change the owner")
            if cred.uid != n.uid or gid != n.gid and gid != cred.gid and gid not in cred.groups:
                raise LustreError("EPERM", f"{path}: the owner may change the group only to one of their groups")
        n.uid, n.gid = uid, gid
        if not n.is_dir:   # a changed owner drops setuid, and setgid of a group-executable file (Linux)
            n.mode &= ~(st.S_ISUID | (st.S_ISGID if n.mode & st.S_IXGRP else 0))
        n.ctime = now

    def set_times(self, path: str, atime: int | None, mtime: int | None, now: int, explicit: bool,
                  cred: Cred = ROOT) -> None:
        """utimensat(2): times set to given values only by the owner (EPERM), to now also by a writer (EACCES)."""
        n = self.lookup(path, cred)
        if cred.uid not in (0, n.uid):
            if explicit:
                raise LustreError("EPERM", f"{path}: only the owner may set explicit times")
            self._check(n, W, cred, path)
        if atime is not None:
            n.atime = atime
        if mtime is not None:
            n.mtime = mtime
        n.ctime = now

    def read_atime(self, path: str, when: int, cred: Cred = ROOT) -> bool:
        """A reader's access at `when`, saved when it moves the atime (`atime_moves`, with this
        namespace's `atime_diff_ns`). Needs read permission; ctime stays. True when atime changed."""
        n = self.lookup(path, cred)
        self._check(n, R, cred, path)
        if not atime_moves(n.atime, n.mtime, n.ctime, when, self.atime_diff_ns):
            return False
        n.atime = when
        return True

    # ---- internals --------------------------------------------------------------------------

    def _ost_count(self) -> int:
        return max(self.osts) + 1 if self.osts else 0

    def _inode(self, is_dir: bool, mode: int, cred: Cred, now: int, parent: Inode | None = None) -> Inode:
        fid = self.fids.allocate()
        node = Inode(fid, self._next_ino, is_dir, mode & 0o7777, cred.uid, cred.gid, now, now, now)
        if parent is not None and parent.mode & st.S_ISGID:   # a setgid directory: its group, and for
            node.gid = parent.gid                              # a subdirectory its setgid bit (Linux)
            if is_dir:
                node.mode |= st.S_ISGID
        self._next_ino += 1
        self.by_fid[fid] = node
        return node

    def _dir(self, path: str, cred: Cred) -> Inode:
        d = self.lookup(path, cred)
        if not d.is_dir:
            raise LustreError("ENOTDIR", f"{path} is not a directory")
        return d

    def _file(self, path: str, cred: Cred) -> Inode:
        f = self.lookup(path, cred)
        if f.is_dir:
            raise LustreError("EISDIR", f"{path} is a directory")
        return f

    def _new_entry(self, path: str, cred: Cred) -> tuple[Inode, str]:
        parts = split(path)
        if not parts:
            raise LustreError("EEXIST", "/ exists (the filesystem root)")
        ppath = "/" + "/".join(parts[:-1])
        parent = self._dir(ppath, cred)
        if parts[-1] in parent.children:
            raise LustreError("EEXIST", f"{path} already exists")
        self._check(parent, W | X, cred, ppath)
        return parent, parts[-1]

    def _existing_entry(self, path: str, cred: Cred) -> tuple[Inode, str, Inode]:
        parts = split(path)
        if not parts:
            raise LustreError("EBUSY", "the filesystem root cannot be removed or moved")
        ppath = "/" + "/".join(parts[:-1])
        parent = self._dir(ppath, cred)
        self._check(parent, X, cred, ppath)
        node = parent.children.get(parts[-1])
        if node is None:
            raise LustreError("ENOENT", f"{path}: no such file or directory")
        self._check(parent, W | X, cred, ppath)
        return parent, parts[-1], node

    def _check(self, node: Inode, want: int, cred: Cred, path: str) -> None:
        if cred.uid == 0:
            return
        if cred.uid == node.uid:
            bits = (node.mode >> 6) & 7
        elif node.gid == cred.gid or node.gid in cred.groups:
            bits = (node.mode >> 3) & 7
        else:
            bits = node.mode & 7
        if bits & want != want:
            need = "".join(c for c, b in (("r", R), ("w", W), ("x", X)) if want & b)
            raise LustreError(
                "EACCES", f"{path}: permission denied (uid {cred.uid} needs {need}, mode {node.mode:04o} "
                f"owner {node.uid}:{node.gid})"
            )

    def _check_owner(self, node: Inode, cred: Cred, path: str) -> None:
        if cred.uid not in (0, node.uid):
            raise LustreError("EPERM", f"{path}: only the owner (uid {node.uid}) or root may do this")

    def _check_sticky(self, parent: Inode, node: Inode, cred: Cred, path: str) -> None:
        # EPERM, as Linux's may_delete answers a sticky-directory refusal
        if parent.mode & st.S_ISVTX and cred.uid not in (0, node.uid, parent.uid):
            raise LustreError("EPERM", f"{path}: sticky directory, only the owner may remove or rename it")

    def _plan(self, spec: StripeSpec, default: StripeSpec | None) -> list[int]:
        """OST indices for a new layout (allocator state advances only when committed)."""
        eff = resolve(spec, default)
        snapshot = (self.allocator.rr_cursor, dict(self.allocator.credits))
        chosen = self.allocator.choose(eff, list(self.osts.values()))
        for i in chosen:
            if self.osts[i].inodes_free == 0:  # pragma: no cover - full OSTs are excluded by choose
                self.allocator.rr_cursor, self.allocator.credits = snapshot
                raise LustreError("ENOSPC", f"OST{i:04x} has no free inodes")
        if self.mdt.inodes_free == 0 or self.mdt.avail_bytes < self.mdt.bytes_per_inode:
            self.allocator.rr_cursor, self.allocator.credits = snapshot
            raise LustreError("ENOSPC", f"MDT{self.mdt.index:04x}: no free inodes")
        return chosen

    def _commit(self, osts: list[int], stripe_size: int, gen: int) -> Layout:
        objects = []
        for i in osts:
            self.osts[i].add_object()
            objects.append(StripeObject(i, self.next_objid[i], ost_seq(i)))
            self.next_objid[i] += 1
        return Layout(stripe_size, tuple(objects), gen)

    def _account(self, layout: Layout, old_size: int, new_size: int) -> None:
        deltas = {}
        for slot, o in enumerate(layout.objects):
            deltas[o.ost] = layout.object_size(slot, new_size) - layout.object_size(slot, old_size)
        for ost, d in deltas.items():
            if d > self.osts[ost].avail_bytes:
                raise LustreError("ENOSPC", f"OST{ost:04x}: no space for {d} more bytes")
        for ost, d in deltas.items():
            self.osts[ost].grow(d)

    def _release(self, layout: Layout, size: int) -> None:
        for slot, o in enumerate(layout.objects):
            self.osts[o.ost].remove_object(layout.object_size(slot, size))

    def _by_fid_path(self, path: str) -> Inode:
        try:
            node = self.by_fid.get(Fid.parse(path[len(FID_DIR):]))
        except (ValueError, LustreError):
            node = None
        if node is None:
            raise LustreError("ENOENT", f"{path}: no file with that FID")
        return node

    def _special_inode_free(self) -> None:
        if self.mdt.inodes_free == 0 or self.mdt.avail_bytes < self.mdt.bytes_per_inode:
            raise LustreError("ENOSPC", f"MDT{self.mdt.index:04x}: no free inodes")

    def _drop_link(self, node: Inode, now: int) -> list[StripeObject]:
        """One name of a non-directory gone: its objects are freed with the last one."""
        node.nlink -= 1
        node.ctime = now
        return self._destroy(node) if node.nlink <= 0 else []

    def _destroy(self, node: Inode) -> list[StripeObject]:
        self.by_fid.pop(node.fid, None)
        self.mdt.release_inode()
        if node.layout is None:
            return []
        self._release(node.layout, node.size)
        return list(node.layout.objects)
