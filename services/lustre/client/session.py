"""The mount's FUSE session: the kernel's requests (client/kernel.py) served by a path-based operations
object (client/fuse.py: LustreFuse), with libfuse's high-level semantics where the mount relied on them:
a node id per path, a file unlinked while open renamed to a hidden name until its last close, setattr
as chmod, chown, truncate and utimens in that order, READDIRPLUS entries with their attributes.

What it adds over libfuse 3.14: FUSE_HANDLE_KILLPRIV_V2, so a write() is one request (the kernel no longer
asks for `security.capability` first; the write itself says when setuid bits and file capabilities go),
and the kernel's cache invalidated by path from the mount's lock callbacks (`invalidate`). Directories are
opened without a request (OPENDIR answered ENOSYS once: the kernel then sends no OPENDIR or RELEASEDIR and
keeps the entries it reads), and a listing's offsets are hashes of the names, as Lustre's readdir cookies.

Worker threads read /dev/fuse, each serving its request to the end, more started while every one is
busy (up to MAX_THREADS), as libfuse's multithreaded loop does."""

from __future__ import annotations

import bisect
import errno
import functools
import hashlib
import logging
import os
import queue
import stat
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from services.lustre.client import kernel as k
from services.lustre.client.kernel import FuseOSError
from services.lustre.client.stats import UNITS, Stats

log = logging.getLogger("lustre.client")

MiB = 1024 * 1024
MAX_WRITE = MiB
MAX_THREADS = 32
HIDDEN = ".fuse_hidden"
UNKNOWN_INO = 0xFFFFFFFF   # libfuse's FUSE_UNKNOWN_INO, for "." and ".."
UTIME_NOW = (1 << 30) - 1
UTIME_OMIT = (1 << 30) - 2
EXPIRE_WAIT_S = 0.2
RELEASE_WAIT_S = 0.05
TOUCH_WINDOW_NS = 1_000_000_000

_context = threading.local()

# the llite counter of each request that has one alone (READ, WRITE, SETATTR and CREATE: `_tally`); LOOKUP,
# FLUSH and READLINK have none in Lustre's table
LLITE_OPS = {
    k.OPEN: "open", k.RELEASE: "close", k.FSYNC: "fsync", k.FSYNCDIR: "fsync", k.READDIR: "readdir",
    k.READDIRPLUS: "readdir", k.GETATTR: "getattr", k.LINK: "link", k.UNLINK: "unlink",
    k.SYMLINK: "symlink", k.MKDIR: "mkdir", k.RMDIR: "rmdir", k.MKNOD: "mknod", k.RENAME: "rename",
    k.STATFS: "statfs", k.SETXATTR: "setxattr", k.GETXATTR: "getxattr", k.LISTXATTR: "listxattr",
    k.REMOVEXATTR: "removexattr",
}
assert set(LLITE_OPS.values()) <= set(UNITS)


def context() -> tuple[int, int, int]:
    """The calling process's uid, gid and pid for the request this thread serves (fuse_get_context)."""
    return getattr(_context, "who", (0, 0, 0))


@dataclass
class Node:
    path: str
    lookups: int = 0
    opens: int = 0
    hidden: bool = False
    retired: bool = False   # no lookup reaches it any more (`retire`); it keeps its path for the kernel's calls


class Session:
    def __init__(self, ops: Any, channel: k.Channel, timeout: float, want: int, stats: Stats | None = None) -> None:
        self.ops = ops
        self.stats = stats   # llite.*.stats: each request answered, by Lustre's counter names
        self.ch = channel
        self.timeout = k.valid(timeout)
        self.want = want
        self.flags = 0   # what INIT agreed with the kernel
        self._mu = threading.Lock()
        self.nodes: dict[int, Node] = {k.ROOT_ID: Node("/", lookups=1)}
        self.ids: dict[str, int] = {"/": k.ROOT_ID}
        self.next_id = 2
        self.hidden_seq = 0
        # directory node id -> its listing as read from offset 0, until the kernel reads its end: (cookies,
        # entries, full)
        self.listings: dict[int, tuple[list[int], list[tuple[str, dict | None]], bool]] = {}
        self.idle = 0
        self.threads = 0
        self.done = threading.Event()
        # (parent node id, name) to expire, or an Event that `settle` waits on
        self.expiring: queue.SimpleQueue = queue.SimpleQueue()
        threading.Thread(target=self._expire, name="fuse-expire", daemon=True).start()
        self.handlers: dict[int, Callable[[int, int, memoryview], None]] = {
            k.LOOKUP: self.lookup, k.GETATTR: self.getattr, k.SETATTR: self.setattr,
            k.READLINK: self.readlink, k.SYMLINK: self.symlink, k.MKNOD: self.mknod, k.MKDIR: self.mkdir,
            k.UNLINK: self.unlink, k.RMDIR: self.rmdir, k.RENAME: self.rename, k.LINK: self.link,
            k.OPEN: self.open, k.READ: self.read, k.WRITE: self.write, k.STATFS: self.statfs,
            k.RELEASE: self.release, k.FSYNC: self.fsync, k.SETXATTR: self.setxattr,
            k.GETXATTR: self.getxattr, k.LISTXATTR: self.listxattr, k.REMOVEXATTR: self.removexattr,
            k.FLUSH: self.flush, k.INIT: self.init, k.OPENDIR: self.opendir, k.READDIR: self.readdir,
            k.READDIRPLUS: self.readdirplus, k.FSYNCDIR: self.fsyncdir,
            k.CREATE: self.create, k.DESTROY: self.destroy,
        }

    # ---- the loop ----------------------------------------------------------------------------
    def serve(self) -> None:
        """Serve until the file system is unmounted (or `stop`)."""
        self._spawn()
        self.done.wait()

    def stop(self) -> None:
        self.done.set()
        self.expiring.put(None)

    def _spawn(self) -> None:
        with self._mu:
            self.threads += 1
        threading.Thread(target=self._worker, name=f"fuse-{self.threads}", daemon=True).start()

    def _worker(self) -> None:
        buf = bytearray(MAX_WRITE + 4096)
        view = memoryview(buf)
        while not self.done.is_set():
            with self._mu:
                self.idle += 1
            try:
                n = self.ch.read(buf)
            except OSError:
                log.exception("reading /dev/fuse")
                n = 0
            with self._mu:
                self.idle -= 1
                more = self.idle == 0 and self.threads < MAX_THREADS
            if n == 0:
                self.done.set()
                return
            if more:
                self._spawn()
            self._dispatch(view[:n])

    def _dispatch(self, req: memoryview) -> None:
        _len, op, unique, nodeid, uid, gid, pid, extlen, _pad = k.IN_HEADER.unpack_from(req)
        body = req[k.IN_HEADER.size + extlen * 8:]
        if op in (k.FORGET, k.BATCH_FORGET):   # no reply
            self._forget(op, nodeid, body)
            return
        if op == k.INTERRUPT:   # the request it names runs to its end (libfuse's default, without intr)
            return
        handler = self.handlers.get(op)
        if handler is None:
            self.ch.error(unique, errno.ENOSYS)
            return
        _context.who = (uid, gid, pid)
        t0 = time.perf_counter_ns()
        try:
            handler(unique, nodeid, body)
        except OSError as e:
            self.ch.error(unique, e.errno if isinstance(e.errno, int) and e.errno > 0 else errno.EIO)
            return
        except Exception:
            log.exception("FUSE opcode %d", op)
            self.ch.error(unique, errno.EIO)
            return
        if self.stats is not None:
            self._tally(op, body, (time.perf_counter_ns() - t0) // 1000)

    def _tally(self, op: int, body: memoryview, usecs: int) -> None:
        """Count a request answered, as llite tallies its operations (ll_stats_ops_tally): a setattr that
        sets the size as a truncate, a create as a create and an open."""
        s = self.stats
        assert s is not None
        if op == k.READ or op == k.WRITE:
            size = k.READ_IN.unpack_from(body)[2]
            s.add("read" if op == k.READ else "write", usecs)
            s.add("read_bytes" if op == k.READ else "write_bytes", size)
        elif op == k.SETATTR:
            s.add("truncate" if k.SETATTR_IN.unpack_from(body)[0] & k.FATTR_SIZE else "setattr", usecs)
        elif op == k.CREATE:
            s.add("create", usecs)
            s.add("open", usecs)
        elif (name := LLITE_OPS.get(op)) is not None:
            s.add(name, usecs)

    # ---- nodes -------------------------------------------------------------------------------
    def path(self, nodeid: int) -> str:
        node = self.nodes.get(nodeid)
        if node is None:
            raise FuseOSError(errno.ESTALE)
        if "\0" in node.path:   # unlinked, removed or replaced: no name reaches it any more
            raise FuseOSError(errno.ENOENT)
        return node.path

    @staticmethod
    def join(parent: str, name: bytes) -> str:
        try:
            text = name.decode()
        except UnicodeDecodeError:   # the MDS's names are UTF-8 (protobuf strings)
            raise FuseOSError(errno.EINVAL) from None
        return f"{parent.rstrip('/')}/{text}"

    def child(self, nodeid: int, name: bytes) -> str:
        return self.join(self.path(nodeid), name)

    def _ref(self, path: str) -> int:
        """The node id of `path`, one more lookup the kernel holds on it."""
        with self._mu:
            nid = self.ids.get(path)
            if nid is None:
                nid = self.next_id
                self.next_id += 1
                self.nodes[nid] = Node(path)
                self.ids[path] = nid
            self.nodes[nid].lookups += 1
            return nid

    def _forget(self, op: int, nodeid: int, body: memoryview) -> None:
        if op == k.FORGET:
            pairs = [(nodeid, k.U64.unpack_from(body)[0])]
        else:
            count = k.PAIR.unpack_from(body)[0]
            pairs = [struct_pair(body, 8 + 16 * i) for i in range(count)]
        with self._mu:
            for nid, n in pairs:
                node = self.nodes.get(nid)
                if node is None or nid == k.ROOT_ID:
                    continue
                node.lookups -= n
                if node.lookups <= 0 and node.opens <= 0:
                    self._drop_node(nid)

    def _drop_node(self, nid: int) -> None:
        node = self.nodes.pop(nid)
        self.listings.pop(nid, None)
        if self.ids.get(node.path) == nid:
            del self.ids[node.path]

    def _moved(self, old: str, new: str) -> None:
        """A rename: the node at `old` and every node under it now live under `new`."""
        with self._mu:
            prefix = old.rstrip("/") + "/"
            gone = self.ids.pop(new, None)
            if gone is not None and gone in self.nodes:   # the replaced target: its inode lives on unnamed
                self.nodes[gone].path = f"{new}\0replaced"
            for nid, node in self.nodes.items():
                if node.path == old or node.path.startswith(prefix):
                    moved = new + node.path[len(old):]
                    if self.ids.get(node.path) == nid:
                        del self.ids[node.path]
                    node.path = moved
                    if not node.retired:
                        self.ids[moved] = nid

    def entry(self, unique: int, path: str) -> None:
        """Reply with `path`'s entry: its node id (one more lookup) and attributes."""
        st = self.ops.getattr(path, None)
        nid = self._ref(path)
        s, ns = self.timeout
        self.ch.reply(unique, k.ENTRY.pack(nid, 0, s, s, ns, ns), k.pack_attr(st))

    def invalidate(self, path: str) -> None:
        """The kernel's cached attributes and pages of `path` dropped (nothing if it holds no such node)."""
        nid = self.ids.get(path)
        if nid is not None:
            self.ch.notify(k.NOTIFY_INVAL_INODE, k.INVAL_INODE.pack(nid, 0, 0))

    # Under FUSE_WRITEBACK_CACHE the kernel keeps a regular file's size, mtime and ctime as its own and
    # ignores what a reply says (fs/fuse/inode.c: fuse_get_cache_mask). Another client's change reaches it
    # by the two calls below.
    def retire(self, path: str, opens: int = 0) -> bool:
        """`path`'s node answers no more lookups: the kernel's next lookup of the name gets a new node id, so
        a new inode with the MDS's attributes (fuse_dentry_revalidate drops a dentry whose node id changed),
        and the name's dentry is expired (queued: `settle` waits for it). False if the kernel holds the file
        open more than `opens` times (see `grow`)."""
        parent, _, name = path.rpartition("/")
        with self._mu:
            nid = self.ids.get(path)
            node = self.nodes.get(nid) if nid is not None else None
            if node is None:
                return True
            if node.opens > opens:
                return False
            del self.ids[path]   # the node keeps its path: what the kernel still asks of it reaches the file
            node.retired = True
            pid = self.ids.get(parent or "/")
        if pid is not None:
            self.expiring.put((pid, name.encode("utf-8", "surrogateescape")))
        return True

    def settle(self) -> None:
        """Wait until the names retired so far are expired, at most EXPIRE_WAIT_S in all."""
        done = threading.Event()
        self.expiring.put(done)
        done.wait(EXPIRE_WAIT_S)

    def grow(self, path: str, size: int) -> None:
        """The kernel's size of an open `path` moved up to `size` (another client wrote past its end): a
        one-byte store at the new end (fs/fuse/dev.c: fuse_notify_store grows i_size), whose page is
        dropped at once so that its bytes are read from the OSTs."""
        nid = self.ids.get(path)
        if nid is None or size <= 0:
            return
        last = size - 1
        self.ch.notify(k.NOTIFY_STORE, k.STORE.pack(nid, last, 1, 0), b"\0")
        self.ch.notify(k.NOTIFY_INVAL_INODE, k.INVAL_INODE.pack(nid, last - last % k.PAGE, k.PAGE))

    def _expire(self) -> None:
        """Expire dentries on a thread of their own: notify_inval_entry takes the directory's lock (even
        with FUSE_EXPIRE_ONLY), which a request in that directory may hold while it waits on the MDS, whose
        change waits on the callback that asked for this. The callback waits for them at most EXPIRE_WAIT_S
        (`settle`), whatever their number."""
        while True:
            item = self.expiring.get()
            if item is None:
                return
            if isinstance(item, threading.Event):   # `settle`: everything queued before it is done
                item.set()
                continue
            pid, name = item
            self.ch.notify(k.NOTIFY_INVAL_ENTRY, k.INVAL_ENTRY.pack(pid, len(name), k.EXPIRE_ONLY), name, b"\0")

    # ---- requests ----------------------------------------------------------------------------
    def init(self, unique: int, nodeid: int, body: memoryview) -> None:
        major, minor, max_readahead, flags, _flags2 = k.INIT_IN.unpack_from(body)
        if major != 7 or minor < 31:
            self.ch.error(unique, errno.EPROTO)
            return
        self.ops.init(self)
        want = self.flags = flags & self.want
        self.ch.reply(unique, k.INIT_OUT.pack(7, min(minor, k.MINOR), max_readahead, want, 64, 48, MAX_WRITE, 1,
                                              MAX_WRITE // 4096, 0, 0))

    def destroy(self, unique: int, nodeid: int, body: memoryview) -> None:
        self.ch.reply(unique)

    def lookup(self, unique: int, nodeid: int, body: memoryview) -> None:
        self.entry(unique, self.child(nodeid, k.cstrings(body, 1)[0]))

    def getattr(self, unique: int, nodeid: int, body: memoryview) -> None:
        flags, _dummy, fh = struct_getattr(body)
        st = self.ops.getattr(self.path(nodeid), fh if flags & 1 else None)
        node = self.nodes.get(nodeid)
        if node is not None and node.hidden and st.get("st_nlink", 0) > 0:   # libfuse: its last name is gone
            st = dict(st, st_nlink=st["st_nlink"] - 1)
        s, ns = self.timeout
        self.ch.reply(unique, k.ATTR_OUT.pack(s, ns, 0), k.pack_attr(st))

    def setattr(self, unique: int, nodeid: int, body: memoryview) -> None:
        (v, _pad, fh, size, _owner, atime, mtime, _ctime, atimens, mtimens, _ctimens, mode, _u4, uid, gid,
         _u5) = k.SETATTR_IN.unpack_from(body)
        path = self.path(nodeid)
        fh_or_none = fh if v & k.FATTR_FH else None
        if v & k.FATTR_MODE:
            self.ops.chmod(path, mode)
        if v & (k.FATTR_UID | k.FATTR_GID):
            self.ops.chown(path, uid if v & k.FATTR_UID else -1, gid if v & k.FATTR_GID else -1)
        if v & k.FATTR_SIZE:
            if v & k.FATTR_KILL_SUIDGID:
                self.ops.killpriv(path, suidgid=True, caps=False)
            self.ops.truncate(path, size, fh_or_none)
        if v & (k.FATTR_ATIME | k.FATTR_MTIME):
            times = []
            for bit, now, sec, nsec in ((k.FATTR_ATIME, k.FATTR_ATIME_NOW, atime, atimens),
                                        (k.FATTR_MTIME, k.FATTR_MTIME_NOW, mtime, mtimens)):
                times.append(UTIME_NOW if v & now else sec * 1_000_000_000 + nsec if v & bit else UTIME_OMIT)
            if self._both_now(v):   # utime(NULL), touch: "now" on this client's clock, not the kernel's tick
                self.ops.utimens(path, (UTIME_NOW, UTIME_NOW))
                # the kernel keeps its own, coarser mtime: a new inode at the next lookup
                if not self.retire(path) and fh_or_none is None:
                    self._retire_after_release(path)
                self.settle()
            else:
                self.ops.utimens(path, tuple(times), touched=self._touched(v, times[1]))
        st = self.ops.getattr(path, fh_or_none)
        s, ns = self.timeout
        self.ch.reply(unique, k.ATTR_OUT.pack(s, ns, 0), k.pack_attr(st))

    def _retire_after_release(self, path: str) -> None:
        """`retire` once the RELEASE of a handle just closed has come: the kernel sends it after close()
        returned, so `touch` right after a create can reach the mount first. RELEASE_WAIT_S at most: a file
        held open elsewhere keeps the kernel's mtime."""
        deadline = time.monotonic() + RELEASE_WAIT_S
        while time.monotonic() < deadline:
            time.sleep(0.001)
            if self.retire(path):
                return

    def _touched(self, valid: int, mtime: int) -> bool:
        """Whether an mtime is the kernel's "now": under the writeback cache it sends the time it keeps for a
        regular file instead of FATTR_MTIME_NOW (fs/fuse/dir.c: iattr_to_fattr, trust_local_cmtime), so a
        time within TOUCH_WINDOW_NS of ours is taken for one (an explicit time was checked by the kernel)."""
        return (bool(self.flags & k.WRITEBACK_CACHE) and bool(valid & k.FATTR_MTIME)
                and not valid & k.FATTR_MTIME_NOW and abs(mtime - time.time_ns()) < TOUCH_WINDOW_NS)

    def _both_now(self, valid: int) -> bool:
        """Under the writeback cache, whether a setattr sets both times to now (atime's FATTR_ATIME_NOW
        still comes; the mtime comes as the kernel's current_time(), a clock tick coarse, which can be older
        than the MDS's stamp of a change just before it)."""
        return (bool(self.flags & k.WRITEBACK_CACHE) and valid & (k.FATTR_ATIME_NOW | k.FATTR_MTIME)
                == k.FATTR_ATIME_NOW | k.FATTR_MTIME and not valid & k.FATTR_MTIME_NOW)

    def readlink(self, unique: int, nodeid: int, body: memoryview) -> None:
        self.ch.reply(unique, os.fsencode(self.ops.readlink(self.path(nodeid))))

    def symlink(self, unique: int, nodeid: int, body: memoryview) -> None:
        name, target = k.cstrings(body, 2)
        path = self.child(nodeid, name)
        self.ops.symlink(path, os.fsdecode(target))
        self.entry(unique, path)

    def mknod(self, unique: int, nodeid: int, body: memoryview) -> None:
        mode, rdev, _umask, _pad = k.MKNOD_IN.unpack_from(body)
        path = self.child(nodeid, k.cstrings(body[k.MKNOD_IN.size:], 1)[0])
        if stat.S_ISREG(mode):   # libfuse: a regular file is made by create and release
            fh = self.ops.create(path, mode, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            self.ops.release(path, fh)
        else:
            self.ops.mknod(path, mode, rdev)
        self.entry(unique, path)

    def mkdir(self, unique: int, nodeid: int, body: memoryview) -> None:
        mode, _umask = k.PAIR.unpack_from(body)
        path = self.child(nodeid, k.cstrings(body[k.PAIR.size:], 1)[0])
        self.ops.mkdir(path, mode)
        self.entry(unique, path)

    def _hide(self, path: str) -> str | None:
        """A file the kernel holds open is being unlinked or replaced: rename it to a hidden name in its
        directory (libfuse's hide_node) and return that name, or None if nothing holds it open."""
        nid = self.ids.get(path)
        node = self.nodes.get(nid) if nid is not None else None
        if node is None or node.opens <= 0:
            return None
        with self._mu:
            self.hidden_seq += 1
            hidden = f"{path.rsplit('/', 1)[0]}/{HIDDEN}{nid:08x}{self.hidden_seq:08x}"
        self.ops.rename(path, hidden)
        self._moved(path, hidden)
        node.hidden = True
        return hidden

    def unlink(self, unique: int, nodeid: int, body: memoryview) -> None:
        path = self.child(nodeid, k.cstrings(body, 1)[0])
        if self._hide(path) is None:
            self.ops.unlink(path)
            self._detach(path)
        self.ch.reply(unique)

    def _detach(self, path: str) -> None:
        """`path` names nothing any more: its node (until the kernel forgets it) reaches no name (`path`)."""
        with self._mu:
            nid = self.ids.pop(path, None)
            if nid is not None and nid in self.nodes:
                self.nodes[nid].path = f"{path}\0gone"

    def rmdir(self, unique: int, nodeid: int, body: memoryview) -> None:
        path = self.child(nodeid, k.cstrings(body, 1)[0])
        self.ops.rmdir(path)
        self._detach(path)
        self.ch.reply(unique)

    def rename(self, unique: int, nodeid: int, body: memoryview) -> None:
        newdir = k.U64.unpack_from(body)[0]
        old, new = k.cstrings(body[8:], 2)
        src, dst = self.child(nodeid, old), self.child(newdir, new)
        self._hide(dst)   # a replaced target still open lives on under a hidden name
        self.ops.rename(src, dst)
        self._moved(src, dst)
        self.ch.reply(unique)

    def link(self, unique: int, nodeid: int, body: memoryview) -> None:
        old = k.U64.unpack_from(body)[0]
        path = self.child(nodeid, k.cstrings(body[8:], 1)[0])
        self.ops.link(path, self.path(old))
        self.entry(unique, path)

    def open(self, unique: int, nodeid: int, body: memoryview) -> None:
        flags, open_flags = k.PAIR.unpack_from(body)
        path = self.path(nodeid)
        if open_flags & k.FUSE_OPEN_KILL_SUIDGID:
            self.ops.killpriv(path, suidgid=True, caps=False)
        fh = self.ops.open(path, flags)
        self._opened(nodeid)
        self.ch.reply(unique, k.OPEN_OUT.pack(fh, self.ops.open_flags(path, flags), 0))

    def create(self, unique: int, nodeid: int, body: memoryview) -> None:
        flags, mode, _umask, _open_flags = k.CREATE_IN.unpack_from(body)
        path = self.child(nodeid, k.cstrings(body[k.CREATE_IN.size:], 1)[0])
        fh = self.ops.create(path, mode, flags)
        try:
            st = self.ops.getattr(path, fh)
        except OSError:
            self.ops.release(path, fh)
            raise
        nid = self._ref(path)
        self._opened(nid)
        s, ns = self.timeout
        self.ch.reply(unique, k.ENTRY.pack(nid, 0, s, s, ns, ns), k.pack_attr(st),
                      k.OPEN_OUT.pack(fh, self.ops.open_flags(path, flags), 0))

    def _opened(self, nid: int) -> None:
        with self._mu:
            node = self.nodes.get(nid)
            if node is not None:
                node.opens += 1

    def read(self, unique: int, nodeid: int, body: memoryview) -> None:
        fh, offset, size, _flags, _owner, _oflags, _pad = k.READ_IN.unpack_from(body)
        self.ch.reply(unique, self.ops.read(self.path(nodeid), size, offset, fh))

    def write(self, unique: int, nodeid: int, body: memoryview) -> None:
        fh, offset, size, wflags, _owner, _oflags, _pad = k.READ_IN.unpack_from(body)
        path = self.path(nodeid)
        self.ops.killpriv(path, suidgid=bool(wflags & k.FUSE_WRITE_KILL_SUIDGID), caps=True)
        data = bytes(body[k.READ_IN.size:k.READ_IN.size + size])
        n = self.ops.write(path, data, offset, fh)
        self.ch.reply(unique, k.PAIR.pack(n, 0))

    def statfs(self, unique: int, nodeid: int, body: memoryview) -> None:
        s = self.ops.statfs(self.path(nodeid))
        self.ch.reply(unique, k.KSTATFS.pack(s["f_blocks"], s["f_bfree"], s["f_bavail"], s["f_files"],
                                             s["f_ffree"], s["f_bsize"], s["f_namemax"], s["f_frsize"], 0))

    def release(self, unique: int, nodeid: int, body: memoryview) -> None:
        fh = k.RELEASE_IN.unpack_from(body)[0]
        path = self.path(nodeid)
        try:
            self.ops.release(path, fh)
        finally:
            with self._mu:
                node = self.nodes.get(nodeid)
                if node is not None:
                    node.opens -= 1
                    last = node.opens <= 0
            if node is not None and last and node.hidden:   # the last close of an unlinked file
                node.hidden = False
                self.ops.unlink(node.path)
                with self._mu:
                    if self.ids.get(node.path) == nodeid:
                        del self.ids[node.path]
            if node is not None:
                with self._mu:
                    if node.opens <= 0 and node.lookups <= 0 and nodeid in self.nodes:
                        self._drop_node(nodeid)
        self.ch.reply(unique)

    def flush(self, unique: int, nodeid: int, body: memoryview) -> None:
        fh = k.RELEASE_IN.unpack_from(body)[0]
        path = self.path(nodeid)
        self.ops.flush(path, fh)
        if self.ops.appended(fh):   # the kernel's mtime is its own, older than the MDS's: a new inode next
            self.retire(path, opens=1)
            self.settle()
        self.ch.reply(unique)

    def fsync(self, unique: int, nodeid: int, body: memoryview) -> None:
        fh, flags, _pad = k.FSYNC_IN.unpack_from(body)
        self.ops.fsync(self.path(nodeid), flags & k.FUSE_FSYNC_FDATASYNC, fh)
        self.ch.reply(unique)

    def fsyncdir(self, unique: int, nodeid: int, body: memoryview) -> None:
        self.ch.reply(unique)

    # ---- extended attributes -----------------------------------------------------------------
    def setxattr(self, unique: int, nodeid: int, body: memoryview) -> None:
        size, flags = k.PAIR.unpack_from(body)
        rest = bytes(body[k.PAIR.size:])
        end = rest.index(b"\0")
        name = rest[:end].decode("utf-8", "surrogateescape")
        self.ops.setxattr(self.path(nodeid), name, rest[end + 1:end + 1 + size], flags)
        self.ch.reply(unique)

    def getxattr(self, unique: int, nodeid: int, body: memoryview) -> None:
        size, _pad = k.PAIR.unpack_from(body)
        name = k.cstrings(body[k.PAIR.size:], 1)[0].decode("utf-8", "surrogateescape")
        value = self.ops.getxattr(self.path(nodeid), name)
        self._sized(unique, size, bytes(value))

    def listxattr(self, unique: int, nodeid: int, body: memoryview) -> None:
        size, _pad = k.PAIR.unpack_from(body)
        names = self.ops.listxattr(self.path(nodeid))
        self._sized(unique, size, b"".join(n.encode("utf-8", "surrogateescape") + b"\0" for n in names))

    def _sized(self, unique: int, size: int, value: bytes) -> None:
        """getxattr/listxattr: size 0 asks for the length only; a buffer too small is ERANGE."""
        if size == 0:
            self.ch.reply(unique, k.PAIR.pack(len(value), 0))
        elif len(value) > size:
            self.ch.error(unique, errno.ERANGE)
        else:
            self.ch.reply(unique, value)

    def removexattr(self, unique: int, nodeid: int, body: memoryview) -> None:
        name = k.cstrings(body, 1)[0].decode("utf-8", "surrogateescape")
        self.ops.removexattr(self.path(nodeid), name)
        self.ch.reply(unique)

    # ---- directories -------------------------------------------------------------------------
    def opendir(self, unique: int, nodeid: int, body: memoryview) -> None:
        """ENOSYS: from then on the kernel opens and closes directories itself (fc->no_opendir, Linux 5.1),
        and keeps the entries it reads (FOPEN_CACHE_DIR is its default then): a listing of a directory
        unchanged since costs no request. Its own changes there reset its copy; another client's reach it
        as a callback's invalidation (client/locks.py). The kernel checked the permission already."""
        self.ch.error(unique, errno.ENOSYS)

    def readdir(self, unique: int, nodeid: int, body: memoryview) -> None:
        self._readdir(unique, nodeid, body, plus=False)

    def readdirplus(self, unique: int, nodeid: int, body: memoryview) -> None:
        self._readdir(unique, nodeid, body, plus=True)

    def _readdir(self, unique: int, nodeid: int, body: memoryview, plus: bool) -> None:
        """READDIR and READDIRPLUS: the listing is taken at offset 0 and kept per directory; entries go out in
        the order of their cookies, after the offset the kernel asks for, as many as fit its buffer. A
        cookie is a hash of the name, so a listing taken again meanwhile (by another reader) goes on after
        the same name. With READDIRPLUS each entry carries its node id and attributes (the kernel counts a
        lookup for it), so `ls -l` needs no LOOKUP per file, unless llite.*.statahead_max is 0 (then the
        kernel looks each one up)."""
        _fh, offset, size, _flags, _owner, _oflags, _pad = k.READ_IN.unpack_from(body)
        path = self.path(nodeid)
        listing = self.listings.get(nodeid)
        if offset == 0 or listing is None:
            items, full = self.ops.listing(path, plus)
            items = items[:2] + sorted(items[2:], key=lambda item: cookie(item[0]))   # after "." and ".."
            listing = [1, 2, *(cookie(name) for name, _st in items[2:])], items, full
            self.listings[nodeid] = listing
        cookies, items, full = listing
        start = bisect.bisect_right(cookies, offset)
        if start >= len(items):   # the end: the kernel has it all (the next listing starts at 0 again)
            self.listings.pop(nodeid, None)
        self.ch.reply(unique, self._dirents(path, cookies, items, start, size, plus, full))

    def _dirents(self, path: str, cookies: list[int], items: list, start: int, size: int, plus: bool,
                 full: bool) -> bytes:
        """The entries from index `start` that fit `size` bytes; `full`: the listing has every entry's
        attributes."""
        out = bytearray()
        s, ns = self.timeout
        for i in range(start, len(items)):
            name, st = items[i]
            raw = name.encode("utf-8", "surrogateescape")
            mode = st["st_mode"] if st is not None else stat.S_IFDIR
            ino = st["st_ino"] if st is not None else UNKNOWN_INO   # readdir(3) skips an entry of ino 0
            dirent = k.DIRENT.pack(ino, cookies[i], len(raw), (mode & 0o170000) >> 12)
            pad = b"\0" * (-(len(dirent) + len(raw)) % 8)
            if plus:
                head_len = k.ENTRY.size + k.ATTR.size
                if len(out) + head_len + len(dirent) + len(raw) + len(pad) > size:
                    break
                if not full or st is None or name in (".", ".."):
                    out += k.ENTRY.pack(0, 0, 0, 0, 0, 0) + k.pack_attr({"st_mode": mode})
                else:
                    nid = self._ref(self.join(path, raw))
                    out += k.ENTRY.pack(nid, 0, s, s, ns, ns) + k.pack_attr(st)
            elif len(out) + len(dirent) + len(raw) + len(pad) > size:
                break
            out += dirent + raw + pad
        return bytes(out)


@functools.lru_cache(maxsize=65536)
def cookie(name: str) -> int:
    """A directory entry's offset: a hash of its name, the same in every listing (Lustre's readdir cookies
    are name hashes too), above 2 (those are "." and "..") and below 2**63 (the kernel's loff_t)."""
    return 3 + (int.from_bytes(hashlib.blake2b(name.encode("utf-8", "surrogateescape"), digest_size=8).digest())
                >> 2)


def struct_pair(body: memoryview, at: int) -> tuple[int, int]:
    return k.U64.unpack_from(body, at)[0], k.U64.unpack_from(body, at + 8)[0]


def struct_getattr(body: memoryview) -> tuple[int, int, int]:
    if len(body) < 16:
        return 0, 0, 0
    flags, dummy = k.PAIR.unpack_from(body)
    return flags, dummy, k.U64.unpack_from(body, 8)[0]
