"""The OSD's end of the messenger (msgr.py has the frames and the client's end): one asyncio protocol
per connection that takes frames as the socket delivers them and answers each operation as soon as
it is done.

An operation the OSD does at once (`Handler.now`: `fast` timing, a healthy disk, a chunk of up to
1 MiB) is answered from the callback that received it, its result in one reply frame with the
others of its frame; any other (`Handler.op`: the device model's wait, a big chunk's thread) runs as
a task and is answered when it ends, alone. Before, each frame went through a StreamReader, an
async generator and a queue, which cost more Python per small chunk than the OSD's own write.

Small frames are received into one reusable buffer (several a `recv`); a frame too big for it gets a
buffer of its own, received straight into (a 512 KiB chunk is not copied again). A chunk a reply
carries as a `FileExtent` (still in the OSD's log segment) is sent with sendfile: at once while the
socket takes it, else through asyncio's sendfile, replies after it waiting their turn. While the
socket is full the connection stops reading, so a client that does not read its replies stops
sending requests.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
from typing import Protocol

from clustertwin.v1 import ceph_pb2 as pb
from emulator.fdpass import MAX_FDS
from services.ceph.extent import FileExtent
from services.ceph.msgr import HEADER, MAX_FRAME, Data, Reply, frame, split
from services.ceph.msgr_local import LocalSender, local_name

log = logging.getLogger("ceph_msgr")
SCRATCH = 256 << 10   # the buffer small frames are received into
SPARE_MAX = 32 << 20  # a big frame's buffer kept for the next one up to this size


class Handler(Protocol):
    def now(self, op: pb.CephChunkOp, data: Data) -> Reply | None:
        """The operation done at once, or None: it goes to `op`."""

    async def op(self, op: pb.CephChunkOp, data: Data) -> Reply: ...


class Connection(asyncio.BufferedProtocol):
    def __init__(self, handler: Handler, local: bool = False) -> None:
        self.handler = handler
        self.local: LocalSender | None = None   # a connection from this host (msgr_local.py): its sender
        self.is_local = local
        self.transport: asyncio.Transport | None = None
        self.scratch = bytearray(SCRATCH)
        self.start = self.end = 0          # the scratch's bytes not yet taken as frames
        self.big: memoryview | None = None  # a frame too big for the scratch, received into its own buffer:
        self.big_got = self.big_n = 0       # the bytes of it come so far, its message's length
        self.big_buf: bytearray | None = None   # the buffer `big` views
        self.spare: bytearray | None = None  # a big frame's buffer no operation holds: the next one's
        self.sending: asyncio.Task[None] | None = None   # a sendfile that did not finish at once
        self.queued: list[list[Data | FileExtent]] = []   # frames waiting for it
        self.tasks: set[asyncio.Task[None]] = set()

    # -- receiving ---------------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport   # type: ignore[assignment]
        # Our own descriptor of the socket, for the sends asyncio's transport does not make (with
        # MSG_MORE, sendfile), made only while the transport has nothing queued.
        self.sock = socket.socket(fileno=os.dup(transport.get_extra_info("socket").fileno()))
        if self.is_local:
            self.local = LocalSender(self.sock, self._backlog)

    def _backlog(self, waiting: bool) -> None:
        assert self.transport is not None
        if waiting:
            self.transport.pause_reading()
        elif not self.transport.is_closing():
            self.transport.resume_reading()

    def get_buffer(self, sizehint: int) -> memoryview:
        if self.big is not None:
            return self.big[self.big_got:]
        return memoryview(self.scratch)[self.end:]

    def buffer_updated(self, nbytes: int) -> None:
        try:
            if self.big is not None:
                self.big_got += nbytes
                if self.big_got == len(self.big):
                    body, self.big = self.big, None
                    if self._frame(self.big_n, body) and len(self.big_buf or b"") <= SPARE_MAX:
                        self.spare = self.big_buf   # (zeroing a new buffer cost as much as receiving into it)
                    self.big_buf = None
                return
            self.end += nbytes
            self._frames()
        except ValueError as e:   # a frame that does not parse: the connection is unusable
            log.debug("messenger connection ended: %r", e)
            assert self.transport is not None
            self.transport.close()

    def _frames(self) -> None:
        """Take every whole frame in the scratch; a frame bigger than it goes on in its own buffer."""
        buf = self.scratch
        while self.end - self.start >= HEADER.size:
            n, nbytes = HEADER.unpack_from(buf, self.start)
            if n + nbytes > MAX_FRAME:
                raise ValueError(f"a frame of {n + nbytes} bytes (at most {MAX_FRAME})")
            at, have = self.start + HEADER.size, self.end - self.start - HEADER.size
            if have >= n + nbytes:
                self.start = at + n + nbytes
                self._frame(n, memoryview(bytes(memoryview(buf)[at: self.start])))   # (a copy: the scratch is reused)
                continue
            if HEADER.size + n + nbytes > len(buf):
                spare, self.spare = self.spare, None
                self.big_buf = spare if spare is not None and len(spare) >= n + nbytes else bytearray(n + nbytes)
                big = memoryview(self.big_buf)[: n + nbytes]
                big[:have] = buf[at: self.end]
                self.big, self.big_got, self.big_n = big, have, n
                self.start = self.end = 0
                return
            break
        left = self.end - self.start   # a frame's start: moved to the front for the rest to follow
        buf[:left] = buf[self.start: self.end]
        self.start, self.end = 0, left

    def _frame(self, n: int, body: memoryview) -> bool:
        """One request frame (its message's `n` bytes, then its data segment): each operation done at
        once or started; those done answered together. True if all were done at once (nothing holds
        the frame's buffer)."""
        ops: list[tuple[pb.CephChunkOp, Data]] = [
            (op, b"") for op in pb.CephOsdChunkStreamRequest.FromString(body[:n]).ops]
        split(ops, body[n:])
        done: list[Reply] = []
        all_now = True
        for op, data in ops:
            r = self.handler.now(op, data)
            if r is None:
                all_now = False
                t = asyncio.get_running_loop().create_task(self._later(op, data))
                self.tasks.add(t)
                t.add_done_callback(self.tasks.discard)
            elif op.id:   # id 0: the sender wants no result (msgr.MsgrLink.post)
                done.append(r)
        if done:
            self._send(done)
        return all_now

    async def _later(self, op: pb.CephChunkOp, data: Data) -> None:
        r = await self.handler.op(op, data)
        if op.id:
            self._send([r])

    def eof_received(self) -> bool:
        return False   # the client is done: close once the replies in flight are sent (asyncio does)

    def connection_lost(self, exc: Exception | None) -> None:
        if self.local is not None:
            self.local.close()
        self.sock.close()
        for t in self.tasks:
            t.cancel()
        if self.sending is not None:
            self.sending.cancel()
        for parts in self.queued:
            _close(parts)
        self.queued = []

    # -- sending -----------------------------------------------------------------------------------

    def pause_writing(self) -> None:
        assert self.transport is not None
        self.transport.pause_reading()   # the client not reading its replies: take no more requests

    def resume_writing(self) -> None:
        assert self.transport is not None
        if not self.transport.is_closing():
            self.transport.resume_reading()

    def _send(self, replies: list[Reply]) -> None:
        if self.local is not None:
            for i in range(0, len(replies), MAX_FDS):
                self._send_local(replies[i: i + MAX_FDS])
            return
        for r, data in replies:
            r.data_length = len(data)
        parts = frame(pb.CephOsdChunkStreamResponse(results=[r for r, _ in replies]),
                      [data for _, data in replies if len(data)])
        if self.transport is None or self.transport.is_closing():
            _close(parts)
        elif self.sending is not None:
            self.queued.append(parts)
        elif left := self._write(parts):
            self.sending = asyncio.get_running_loop().create_task(self._send_rest(left))

    def _send_local(self, replies: list[Reply]) -> None:
        """A frame to a client on this host: a chunk in a file goes as the file's descriptor, its
        place in the result."""
        inline: list[Data] = []
        extents: list[FileExtent] = []
        for r, data in replies:
            if isinstance(data, FileExtent):
                r.file_offset, r.file_length, r.data_length = data.offset, data.length, 0
                extents.append(data)
            else:
                r.data_length = len(data)
                if len(data):
                    inline.append(data)
        assert self.local is not None
        self.local.send(frame(pb.CephOsdChunkStreamResponse(results=[r for r, _ in replies]), inline),  # type: ignore[arg-type]
                        extents)

    def _write(self, parts: list[Data | FileExtent]) -> list[Data | FileExtent]:
        """Write the parts while nothing needs waiting for: what is left from a chunk the socket did
        not take whole (its extent cut to the rest)."""
        assert self.transport is not None
        for i, part in enumerate(parts):
            if not isinstance(part, FileExtent):
                more = i + 1 < len(parts) and isinstance(parts[i + 1], FileExtent)
                self.transport.write(part[_send_now(self.transport, self.sock, part):] if more else part)
                continue
            sent = _sendfile_now(self.transport, self.sock, part)
            if sent < len(part):
                part.offset, part.length = part.offset + sent, part.length - sent
                return parts[i:]
            part.close()
        return []

    async def _send_rest(self, parts: list[Data | FileExtent]) -> None:
        """Finish a frame through asyncio's sendfile, then the frames queued behind it, in order."""
        assert self.transport is not None
        loop = asyncio.get_running_loop()
        try:
            while parts:
                ext = parts[0]
                assert isinstance(ext, FileExtent)
                await loop.sendfile(self.transport, ext, ext.offset, len(ext), fallback=False)  # type: ignore[arg-type]
                ext.close()
                parts = self._write(parts[1:])
                while not parts and self.queued:
                    parts = self._write(self.queued.pop(0))
        except (OSError, RuntimeError) as e:   # the connection gone under it
            log.debug("messenger send ended: %r", e)
            _close(parts)
        finally:
            self.sending = None


def _close(parts: list[Data | FileExtent]) -> None:
    for part in parts:
        if isinstance(part, FileExtent):
            part.close()


def _send_now(transport: asyncio.Transport, sock: socket.socket, data: Data) -> int:
    """Send `data` now with MSG_MORE, as a chunk sent from its file follows (one TCP push for both: on
    loopback each push also runs the receiver's side); the bytes sent (0: left to the transport)."""
    if transport.get_write_buffer_size() or transport.is_closing():
        return 0
    try:
        return sock.send(data, socket.MSG_MORE)
    except (BlockingIOError, InterruptedError):
        return 0


def _sendfile_now(transport: asyncio.Transport, sock: socket.socket, extent: FileExtent) -> int:
    """What of the extent the socket takes now (nothing queued before it): the bytes sent. (asyncio's
    own sendfile costs more Python than the copy it saves, for a chunk the socket takes at once.)"""
    if transport.get_write_buffer_size() or transport.is_closing():
        return 0
    fd, sent = sock.fileno(), 0
    with contextlib.suppress(BlockingIOError, InterruptedError):
        while sent < len(extent):
            n = os.sendfile(fd, extent.fd, extent.offset + sent, len(extent) - sent)
            if n == 0:
                break
            sent += n
    return sent


async def serve(address: str, handler: Handler) -> list[asyncio.Server]:
    """Listen on `address` (TCP) and on its Unix socket for daemons on this host (msgr_local.py);
    each connection's operations go to `handler` (the OSD's servicer)."""
    host, _, port = address.rpartition(":")
    loop = asyncio.get_running_loop()
    tcp = await loop.create_server(lambda: Connection(handler), host, int(port))   # (TCP_NODELAY: asyncio's)
    bound = f"{host}:{tcp.sockets[0].getsockname()[1]}"   # (port 0: the one given)
    unix = await loop.create_unix_server(lambda: Connection(handler, local=True), local_name(bound))
    return [tcp, unix]
