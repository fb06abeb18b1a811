"""The messenger between daemons on one host: a Unix socket beside the OSD's TCP port, and a chunk read
answered with the descriptor of the file it lies in (SCM_RIGHTS) rather than its bytes.

On one host, TCP over loopback costs both ends a copy and the protocol's work for every byte: a
64 MiB GET moved 64 MiB from the OSDs' page cache through sendfile into loopback TCP and out again
into the gateway (0.38 ms of CPU per MiB, sender and receiver together, on this machine), and the OSDs
spent as much CPU on it as the gateway did on the whole request. Here the OSD hands the gateway the
chunk's place in its log segment and the gateway reads it from the page cache itself (0.09 ms per MiB).
The OSD still does the read's work, as Ceph's does: it looks the chunk up, checks it is there and
answers; a killed OSD answers nothing and its chunks are missing as they are over TCP. Ceph itself
has no such path (its OSDs on one host still talk TCP; the closest is the RDMA messenger's
one-sided reads). The bytes reach the gateway unchanged and are CRC-checked there as before.

The socket is in the abstract namespace, named for the OSD's messenger address. Abstract names belong
to a network namespace, so only a daemon in the OSD's own namespace (the same host in the netns twin,
where loopback would carry the TCP too) finds it; any other connects over TCP, across the emulated
network and its faults.
"""

from __future__ import annotations

import asyncio
import logging
import mmap
import os
import socket
import threading
from collections import OrderedDict, deque
from collections.abc import Callable

from emulator import fdpass
from services.ceph.extent import FileExtent

log = logging.getLogger("ceph_msgr")

IOV_MAX = 1024


def local_name(address: str) -> str:
    """The abstract Unix socket of the messenger at `address` (HOST:PORT)."""
    return f"\0clustertwin-msgr-{address}"


def connect(address: str, timeout: float) -> socket.socket | None:
    """A connection to the messenger at `address` if it listens on this host (in this network
    namespace), else None."""
    return fdpass.connect(local_name(address), timeout)


class FileMaps:
    """The OSDs' segment files this process reads chunks from, mapped (most recently used kept): a chunk
    is a view of the page cache, CRC-checked and sent on to the S3 client from there, never copied
    into a buffer of ours. A segment is only appended to, so a mapping stays right for what it covers;
    one too short for a chunk is made again at the file's size. A segment compaction deleted stays
    mapped until it is pushed out (its pages are clean: the kernel may drop them meanwhile)."""

    def __init__(self, capacity: int = 64) -> None:
        self.capacity = capacity
        self._maps: OrderedDict[tuple[int, int], mmap.mmap] = OrderedDict()
        self._lock = threading.Lock()

    def __contains__(self, key: tuple[int, int]) -> bool:
        """Whether the file of (st_dev, st_ino) is mapped (its mmap holds a descriptor of it)."""
        with self._lock:
            return key in self._maps

    def view(self, fd: int, offset: int, length: int) -> memoryview:
        st = os.fstat(fd)
        if offset + length > st.st_size:
            raise ValueError(f"a chunk at {offset}+{length} past the end of its file ({st.st_size} bytes)")
        key = (st.st_dev, st.st_ino)   # (a mapped file's inode is held: no new file can take its number)
        with self._lock:
            m = self._maps.get(key)
            if m is None or len(m) < offset + length:
                m = self._maps[key] = mmap.mmap(fd, st.st_size, prot=mmap.PROT_READ)
                while len(self._maps) > self.capacity:
                    self._maps.popitem(last=False)   # (unmapped once no view of it is left)
            self._maps.move_to_end(key)
        return memoryview(m)[offset: offset + length]


class _Pending:
    """One frame on its way: its buffers, and the extents whose descriptors go with its first byte."""

    def __init__(self, parts: list[bytes | memoryview], extents: list[FileExtent]) -> None:
        self.views = [memoryview(p) for p in parts if len(p)]
        self.extents = extents

    def sent(self, n: int) -> None:
        for ext in self.extents:   # the kernel holds the files now
            ext.close()
        self.extents = []
        i = 0
        while i < len(self.views) and n >= len(self.views[i]):
            n -= len(self.views[i])
            i += 1
        self.views = self.views[i:]
        if n:
            self.views[0] = self.views[0][n:]


class LocalSender:
    """The OSD's replies on a connection from its own host, sent on the socket itself (asyncio's
    transport has no way to pass descriptors): at once while the socket takes them, else when it is
    writable again, in order. `backlog(True)` while frames wait, so the connection stops reading
    requests from a client that does not read its replies."""

    def __init__(self, sock: socket.socket, backlog: Callable[[bool], None]) -> None:
        self.sock = sock          # non-blocking: our own descriptor of the connection
        self.backlog = backlog
        self.queue: deque[_Pending] = deque()
        self.waiting = False
        self.closed = False

    def send(self, parts: list[bytes | memoryview], extents: list[FileExtent]) -> None:
        if self.closed:
            for ext in extents:
                ext.close()
            return
        self.queue.append(_Pending(parts, extents))
        if not self.waiting:
            self._flush()

    def close(self) -> None:
        self.closed = True
        if self.waiting:
            asyncio.get_running_loop().remove_writer(self.sock.fileno())
            self.waiting = False
        for p in self.queue:
            p.sent(0)
        self.queue.clear()

    def _flush(self) -> None:
        while self.queue:
            p = self.queue[0]
            try:
                n = self.sock.sendmsg(p.views[:IOV_MAX], fdpass.rights([e.fd for e in p.extents]))
            except (BlockingIOError, InterruptedError):
                n = -1
            except OSError as e:   # the client gone: connection_lost follows
                log.debug("messenger send ended: %r", e)
                self.close()
                return
            if n >= 0:
                p.sent(n)
                if not p.views:
                    self.queue.popleft()
                    continue
            if not self.waiting:
                asyncio.get_running_loop().add_writer(self.sock.fileno(), self._flush)
                self.waiting = True
                self.backlog(True)
            return
        if self.waiting:
            asyncio.get_running_loop().remove_writer(self.sock.fileno())
            self.waiting = False
            self.backlog(False)
