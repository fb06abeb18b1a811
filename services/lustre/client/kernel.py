"""The FUSE kernel protocol, spoken on /dev/fuse without libfuse (include/uapi/linux/fuse.h, protocol 7.38).

The Lustre mount needs what libfuse 3.14's high-level API does not give: FUSE_HANDLE_KILLPRIV_V2 (without
it the kernel asks for `security.capability` before every write(): two FUSE round trips per write), and
node ids for the kernel's cache (notify_inval_inode / notify_inval_entry) under the MDS's locks.

Here: mounting through fusermount3 (as libfuse does: the device fd comes back over a socket), the wire
structures, reading requests and writing replies and notifications. What the requests mean is in
client/session.py."""

from __future__ import annotations

import errno
import os
import shutil
import socket
import struct
import subprocess

# opcodes (enum fuse_opcode)
LOOKUP, FORGET, GETATTR, SETATTR, READLINK, SYMLINK = 1, 2, 3, 4, 5, 6
MKNOD, MKDIR, UNLINK, RMDIR, RENAME, LINK, OPEN, READ, WRITE, STATFS, RELEASE = 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18
FSYNC, SETXATTR, GETXATTR, LISTXATTR, REMOVEXATTR, FLUSH, INIT = 20, 21, 22, 23, 24, 25, 26
OPENDIR, READDIR, RELEASEDIR, FSYNCDIR, GETLK, SETLK, SETLKW, ACCESS, CREATE, INTERRUPT = range(27, 37)
BMAP, DESTROY, IOCTL, POLL, NOTIFY_REPLY, BATCH_FORGET, FALLOCATE, READDIRPLUS, RENAME2 = range(37, 46)
LSEEK, COPY_FILE_RANGE = 46, 47

# INIT flags
ASYNC_READ = 1 << 0
ATOMIC_O_TRUNC = 1 << 3
BIG_WRITES = 1 << 5
DO_READDIRPLUS = 1 << 13
ASYNC_DIO = 1 << 15
WRITEBACK_CACHE = 1 << 16
PARALLEL_DIROPS = 1 << 18
MAX_PAGES = 1 << 22
HANDLE_KILLPRIV_V2 = 1 << 28

# SETATTR valid bits
FATTR_MODE, FATTR_UID, FATTR_GID, FATTR_SIZE = 1 << 0, 1 << 1, 1 << 2, 1 << 3
FATTR_ATIME, FATTR_MTIME, FATTR_FH = 1 << 4, 1 << 5, 1 << 6
FATTR_ATIME_NOW, FATTR_MTIME_NOW, FATTR_KILL_SUIDGID = 1 << 7, 1 << 8, 1 << 11

FOPEN_DIRECT_IO = 1 << 0
FOPEN_KEEP_CACHE = 1 << 1
FUSE_WRITE_KILL_SUIDGID = 1 << 2
FUSE_OPEN_KILL_SUIDGID = 1 << 0
FUSE_FSYNC_FDATASYNC = 1 << 0

NOTIFY_INVAL_INODE, NOTIFY_INVAL_ENTRY, NOTIFY_STORE = 2, 3, 4
EXPIRE_ONLY = 1 << 0    # notify_inval_entry: the dentry times out, not dropped (kernel 6.2, protocol 7.38)
PAGE = 4096
ROOT_ID = 1
MINOR = 38

IN_HEADER = struct.Struct("<IIQQIIIHH")     # len, opcode, unique, nodeid, uid, gid, pid, total_extlen, pad
OUT_HEADER = struct.Struct("<IiQ")          # len, error, unique
ATTR = struct.Struct("<QQQQQQIIIIIIIIII")   # struct fuse_attr
ENTRY = struct.Struct("<QQQQII")            # nodeid, generation, entry/attr valid (s), their nsec
ATTR_OUT = struct.Struct("<QII")            # attr_valid, attr_valid_nsec, dummy
OPEN_OUT = struct.Struct("<QII")            # fh, open_flags, padding
INIT_IN = struct.Struct("<IIIII")           # major, minor, max_readahead, flags, flags2
INIT_OUT = struct.Struct("<IIIIHHIIHHI28x")
SETATTR_IN = struct.Struct("<IIQQQQQQIIIIIIII")
READ_IN = struct.Struct("<QQIIQII")         # fh, offset, size, flags, lock_owner, open flags, pad (also WRITE)
RELEASE_IN = struct.Struct("<QIIQ")         # fh, flags, release_flags, lock_owner (also FLUSH)
FSYNC_IN = struct.Struct("<QII")
CREATE_IN = struct.Struct("<IIII")          # flags, mode, umask, open_flags
MKNOD_IN = struct.Struct("<IIII")           # mode, rdev, umask, pad
PAIR = struct.Struct("<II")                 # OPEN, MKDIR, GETXATTR, LISTXATTR, SETXATTR (compat), ACCESS
U64 = struct.Struct("<Q")
KSTATFS = struct.Struct("<QQQQQIIII24x")
DIRENT = struct.Struct("<QQII")             # ino, off, namelen, type
INVAL_INODE = struct.Struct("<Qqq")
INVAL_ENTRY = struct.Struct("<QII")         # parent, namelen, flags; the name and a NUL follow
STORE = struct.Struct("<QQII")              # nodeid, offset, size, padding; the bytes follow


class FuseOSError(OSError):
    """An operation's refusal: its errno goes back to the kernel as the reply's error."""

    def __init__(self, code: int) -> None:
        super().__init__(code, os.strerror(code))


def pack_attr(st: dict) -> bytes:
    """A stat dict (st_* keys, times in integer ns) as struct fuse_attr."""
    times = []
    for key in ("st_atime", "st_mtime", "st_ctime"):
        ns = int(st.get(key, 0))
        times.append(divmod(ns, 1_000_000_000))
    size = st.get("st_size", 0)
    return ATTR.pack(st.get("st_ino", 0), size, st.get("st_blocks", (size + 511) // 512),
                     times[0][0], times[1][0], times[2][0], times[0][1], times[1][1], times[2][1],
                     st.get("st_mode", 0), st.get("st_nlink", 1), st.get("st_uid", 0), st.get("st_gid", 0),
                     st.get("st_rdev", 0), st.get("st_blksize", 4096), 0)


def valid(seconds: float) -> tuple[int, int]:
    whole = int(seconds)
    return whole, int((seconds - whole) * 1e9)


def cstrings(buf: memoryview | bytes, count: int) -> list[bytes]:
    """The first `count` NUL-terminated names of a request's body."""
    out, start = [], 0
    raw = bytes(buf)
    for _ in range(count):
        end = raw.index(b"\0", start)
        out.append(raw[start:end])
        start = end + 1
    return out


def fusermount() -> str:
    return shutil.which("fusermount3") or "fusermount3"


def mount(mountpoint: str, options: str) -> int:
    """Mount a FUSE file system on `mountpoint` and return the /dev/fuse fd that serves it. fusermount3
    does the mount(2) (root or not) and passes the fd back over a socket (_FUSE_COMMFD), as libfuse's
    fuse_kern_mount does."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        env = dict(os.environ, _FUSE_COMMFD=str(theirs.fileno()))
        proc = subprocess.Popen([fusermount(), "-o", options, "--", mountpoint], env=env,
                                pass_fds=(theirs.fileno(),), stderr=subprocess.PIPE)
        theirs.close()
        _msg, fds, _flags, _addr = socket.recv_fds(ours, 1, 1)
        err = proc.communicate(timeout=30)[1]
        if not fds:
            raise OSError(errno.EIO, f"fusermount3 could not mount {mountpoint}: {err.decode().strip()}")
        return fds[0]
    finally:
        ours.close()
        theirs.close()


def unmount(mountpoint: str) -> None:
    """libfuse's fuse_kern_unmount: a lazy unmount through fusermount3."""
    subprocess.run([fusermount(), "-u", "-q", "-z", "--", mountpoint], capture_output=True, timeout=30)


class Channel:
    """One /dev/fuse connection: requests in, replies and notifications out."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def read(self, buf: bytearray) -> int:
        """One request into `buf` (0 when the file system is unmounted)."""
        while True:
            try:
                return os.readv(self.fd, [buf])
            except InterruptedError:
                continue
            except OSError as e:
                if e.errno in (errno.ENOENT, errno.EINTR, errno.EAGAIN):   # an interrupted request: the next
                    continue
                if e.errno == errno.ENODEV:
                    return 0
                raise

    def reply(self, unique: int, *parts: bytes | memoryview) -> None:
        n = OUT_HEADER.size + sum(len(p) for p in parts)
        self._send([OUT_HEADER.pack(n, 0, unique), *parts])

    def error(self, unique: int, code: int) -> None:
        self._send([OUT_HEADER.pack(OUT_HEADER.size, -code, unique)])

    def notify(self, code: int, *parts: bytes) -> int:
        """A notification (unique 0, the code in the error field); 0 or the kernel's errno (ENOENT: it holds
        no such inode or entry)."""
        n = OUT_HEADER.size + sum(len(p) for p in parts)
        try:   # one writev is one message: no lock (a notification blocked in the kernel must not stop others)
            os.writev(self.fd, [OUT_HEADER.pack(n, code, 0), *parts])
        except OSError as e:
            return e.errno or errno.EIO
        return 0

    def _send(self, parts: list) -> None:
        try:
            os.writev(self.fd, parts)
        except OSError as e:   # the request was interrupted (ENOENT) or the mount is gone (ENODEV)
            if e.errno not in (errno.ENOENT, errno.ENODEV):
                raise
