"""Bulk reads: object data moved outside the RPC, as Lustre's ptlrpc moves bulk data by (RDMA) bulk
transfers next to the request/reply messages.

gRPC Python costs ~3 ms of CPU per MiB moved here (client and server together, HTTP/2 frames and
Python), which caps a streaming read through the mount far below the disk. So each OSS also listens
on its gRPC port + 1 for bulk reads: a fixed 44-byte request, a 28-byte reply header, then the bytes
straight from the object file with sendfile(2) (no copy through Python). Only reads: writes,
metadata and every error path stay on gRPC; a bulk read that fails in any way (refused connection,
the OSS does not serve the OST, a short reply) is retried by the caller over gRPC, whose client
does the failover (services.lustre.client.core).

    request  <QIQQQQ: magic, ost, seq, objid, offset, length      (little endian, 44 bytes)
    reply    <QiQQ:   magic, errno, nbytes, object_size  then nbytes of data (28 bytes + data)

A client on the OSS's own host (the same network namespace: the loopback twin) connects to the
abstract Unix socket named for the bulk address instead, and the reply brings the object file's
descriptor (SCM_RIGHTS, emulator/fdpass.py) in place of the bytes: the client reads them from the
page cache itself, which spares the OSS's sendfile into loopback TCP and the client's copy out of it.
The OSS still looks the object up and takes its NVMe time for the read. Clients on other hosts (the
netns twin) find no such socket and read over TCP as above.
"""

from __future__ import annotations

import errno
import logging
import os
import queue
import socket
import struct
import threading
from collections.abc import Callable

from emulator import fdpass
from emulator.frame_rpc import recv_exact

log = logging.getLogger("lustre.bulk")

MAGIC = 0x4C55535452424C4B   # "LUSTRBLK"
REQ = struct.Struct("<QIQQQQ")
REP = struct.Struct("<QiQQ")
MAX_LENGTH = 64 * 1024 * 1024


def bulk_address(grpc_address: str) -> tuple[str, int]:
    host, _, port = grpc_address.rpartition(":")
    return host.strip("[]"), int(port) + 1


def local_name(address: tuple[str, int]) -> str:
    """The abstract Unix socket of the bulk port at `address`, for clients on the OSS's host."""
    return f"\0clustertwin-bulk-{address[0]}:{address[1]}"


# ---- server (in the OSS) ---------------------------------------------------------------------
class BulkServer:
    """`lookup(ost)` gives the object store serving `ost` or None (-> ENODEV); `timed(store, nbytes,
    fn)` applies the OSS's NVMe time model around the transfer."""

    def __init__(self, grpc_address: str, lookup: Callable, timed: Callable) -> None:
        self.lookup, self.timed = lookup, timed
        host, port = bulk_address(grpc_address)
        self.sock = socket.create_server((host, port), family=socket.AF_INET6 if ":" in host else socket.AF_INET,
                                         reuse_port=False, backlog=64)
        self.local = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.local.bind(local_name((host, port)))
        self.local.listen(64)
        self.stop = threading.Event()

    def start(self) -> None:
        for listener in (self.sock, self.local):
            threading.Thread(target=self._accept, args=(listener,), daemon=True, name="bulk-accept").start()

    def close(self) -> None:
        self.stop.set()
        for listener in (self.sock, self.local):
            try:
                listener.shutdown(socket.SHUT_RDWR)   # (wakes the accepting thread)
            except OSError:
                pass
            listener.close()

    def _accept(self, listener: socket.socket) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            if conn.family != socket.AF_UNIX:
                conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            threading.Thread(target=self._serve, args=(conn,), daemon=True, name="bulk").start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            while not self.stop.is_set():
                try:
                    head = recv_exact(conn, REQ.size)
                except (ConnectionError, OSError):
                    return
                magic, ost, seq, objid, offset, length = REQ.unpack(head)
                if magic != MAGIC or length > MAX_LENGTH:
                    return
                try:
                    self._one(conn, ost, seq, objid, offset, length)
                except OSError:
                    return

    def _one(self, conn: socket.socket, ost: int, seq: int, objid: int, offset: int, length: int) -> None:
        store = self.lookup(ost)
        if store is None:
            conn.sendall(REP.pack(MAGIC, errno.ENODEV, 0, 0))
            return
        size = store.size(seq, objid) or 0
        n = max(0, min(length, size - offset))
        if n == 0:
            conn.sendall(REP.pack(MAGIC, 0, 0, size))
            return
        try:
            fd = os.open(store.path(seq, objid), os.O_RDONLY)
        except FileNotFoundError:
            conn.sendall(REP.pack(MAGIC, 0, 0, 0))
            return
        try:
            if conn.family == socket.AF_UNIX:   # a client on this host: the file, not its bytes
                self.timed(store, n, lambda: conn.sendmsg([REP.pack(MAGIC, 0, n, size)], fdpass.rights([fd])))
                return
            conn.sendall(REP.pack(MAGIC, 0, n, size))

            def send() -> None:
                done = 0
                while done < n:
                    k = os.sendfile(conn.fileno(), fd, offset + done, n - done)
                    if k == 0:   # the file shrank under us: pad (the client asked for n bytes)
                        conn.sendall(bytes(n - done))
                        return
                    done += k
            self.timed(store, n, send)
        finally:
            os.close(fd)


# ---- client ------------------------------------------------------------------------------------
def _read_file(fds: list[int], offset: int, n: int) -> bytes:
    """(a client on the OSS's host) The object's bytes from the file the OSS passed; a file shorter
    than the OSS said (truncated meanwhile) reads as zeros past its end, as the TCP path pads."""
    if not n:
        return b""
    if len(fds) != 1:
        raise BulkError(errno.EPROTO, f"a bulk reply of {n} bytes with {len(fds)} files")
    data = os.pread(fds[0], n, offset)
    return data + bytes(n - len(data)) if len(data) < n else data

class BulkError(OSError):
    pass


class BulkClient:
    """Pooled connections to one OSS's bulk port; `read` blocks (call it from worker threads)."""

    def __init__(self, grpc_address: str, timeout: float = 30.0, local: bool = True) -> None:
        """`local`: through the OSS's Unix socket when it is on this host, else TCP."""
        self.address = bulk_address(grpc_address)
        self.timeout = timeout
        self.local = local
        self.pool: queue.SimpleQueue[socket.socket] = queue.SimpleQueue()

    def _conn(self) -> socket.socket:
        try:
            return self.pool.get_nowait()
        except queue.Empty:
            s = fdpass.connect(local_name(self.address), self.timeout) if self.local else None
            if s is None:
                s = socket.create_connection(self.address, timeout=self.timeout)
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            return s

    def read(self, ost: int, seq: int, objid: int, offset: int, length: int) -> bytes:
        s = self._conn()
        try:
            s.sendall(REQ.pack(MAGIC, ost, seq, objid, offset, length))
            if s.family == socket.AF_UNIX:
                head, fds = fdpass.recv_with_fds(s, REP.size)
                try:
                    magic, err, n, _size = REP.unpack(head)
                    data = _read_file(fds, offset, n) if magic == MAGIC and not err else b""
                finally:
                    fdpass.close_all(fds)
            else:
                magic, err, n, _size = REP.unpack(recv_exact(s, REP.size))
                data = bytes(recv_exact(s, n)) if n and magic == MAGIC else b""
            if magic != MAGIC:
                raise BulkError(errno.EPROTO, "bad bulk reply")
        except BaseException:
            s.close()
            raise
        self.pool.put(s)
        if err:
            raise BulkError(err, f"bulk read of OST{ost:04x}: {os.strerror(err)}")
        return data

    def close(self) -> None:
        while True:
            try:
                self.pool.get_nowait().close()
            except queue.Empty:
                return
