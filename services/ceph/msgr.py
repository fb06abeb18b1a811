"""The OSDs' messenger: chunk operations over a plain TCP connection, as Ceph's msgr2 carries RADOS
ops, beside the OSD's gRPC service. A frame is two 4-byte big-endian lengths, a serialized
CephOsdChunkStreamRequest (to the OSD) or CephOsdChunkStreamResponse (back), and a data segment: the
chunks' bytes, each operation's `data_length` of it in order, as msgr2 carries a message's payload in
its own segment. The bytes go from the sender's buffers to the socket (one `sendmsg`) and from the
socket into one buffer at the receiver, never through a protobuf field (which copied each 512 KiB
chunk three times more at each end, under the GIL). These are the ChunkStream's messages without
gRPC's HTTP/2 framing, flow control and threads, which cost more CPU per small chunk than the chunk's
own write (two thirds of a 4 KiB PUT's CPU was stream messages in the monitor and the OSDs). The OSD
listens on `msgr_address(its storage address and gRPC port)` (plan.py).

`MsgrLink` is the client's end of one OSD's connection, with `OsdLink`'s contract (remote_chunkstore.py):
`submit` from any thread sends the operation from that thread and returns a Future of its `Reply` (a
`cork`ed one waits in the link's outbox for `push`, which sends all that waits as one frame: the
deletes of many objects cost the OSD one message); one reader thread per connection sets results by
id; a connection that breaks (the OSD killed, a send timing out) fails every operation waiting on it
with `LinkDown`, and the link is `dead`.
The OSD's end is msgr_server.py. To an OSD on the same host (in the same network namespace) the link
is a Unix socket, and a chunk read comes as the descriptor of the file it lies in (msgr_local.py).
"""

from __future__ import annotations

import itertools
import logging
import socket
import struct
import threading
from concurrent.futures import Future

from clustertwin.v1 import ceph_pb2 as pb
from emulator import fdpass
from services.ceph import msgr_local
from services.ceph.extent import FileExtent

log = logging.getLogger("ceph_msgr")

HEADER = struct.Struct(">II")   # the message's bytes, the data segment's bytes
MAX_FRAME = 256 << 20
IOV_MAX = 1024   # buffers one sendmsg takes (Linux's UIO_MAXIOV)
Data = bytes | bytearray | memoryview
Reply = tuple[pb.CephChunkOpResult, Data | FileExtent]   # a result and its chunk (b"" but for a get)
Ops = list[tuple[pb.CephChunkOp, Data]]     # operations as the OSD receives them: each with its data
PORT_OFFSET = 200   # an OSD's messenger port: its gRPC port + this (6800 + n -> 7000 + n, in Ceph's 6800-7300)


MON_FRAMED_PORT = 6789   # the monitor's legacy msgr1 port; here its CephMon unary calls, framed (frame_rpc.py)


def msgr_address(grpc_address: str) -> str:
    host, _, port = grpc_address.rpartition(":")
    return f"{host}:{int(port) + PORT_OFFSET}"


def mon_framed_address(grpc_address: str) -> tuple[str, int]:
    """Where the monitor at `grpc_address` (its msgr2 port, 3300) answers framed calls."""
    host, _, _port = grpc_address.rpartition(":")
    return host.strip("[]"), MON_FRAMED_PORT


def frame(msg: pb.CephOsdChunkStreamRequest | pb.CephOsdChunkStreamResponse,
          data: list[Data | FileExtent]) -> list[Data | FileExtent]:
    """The frame's parts, to send as they are: header and message in one, then the data segment's. Each
    operation with data has its `data_length` set already."""
    body = msg.SerializeToString()
    return [HEADER.pack(len(body), sum(len(d) for d in data)) + body, *data]


def split(items: list[tuple[pb.CephChunkOp, Data]] | list[Reply], data: Data) -> None:
    """(the receiver's) Each item's bytes out of the frame's data segment, by its `data_length`."""
    view, off = memoryview(data), 0
    for i, (msg, _) in enumerate(items):
        if msg.data_length:
            items[i] = (msg, view[off: off + msg.data_length])  # type: ignore[assignment]
            off += msg.data_length
    if off != len(view):
        raise ValueError(f"a data segment of {len(view)} bytes for {off} bytes of operations")


def sendmsg_all(sock: socket.socket, parts: list[Data]) -> None:
    """`sendall` for a list of buffers: one `sendmsg` while the socket takes them whole (at most
    IOV_MAX of them a call, as the kernel allows)."""
    views = [memoryview(p) for p in parts if len(p)]
    i = 0
    while i < len(views):
        n = sock.sendmsg(views[i: i + IOV_MAX])
        while i < len(views) and n >= len(views[i]):
            n -= len(views[i])
            i += 1
        if n:
            views[i] = views[i][n:]


def forget(waiting: dict[int, Future[Reply]], lock: threading.Lock, fut: Future[Reply]) -> None:
    """A caller gave up on `fut` (its timeout): its result, if it ever comes, is dropped."""
    with lock:
        for op_id, f in list(waiting.items()):
            if f is fut:
                del waiting[op_id]


class LinkDown(Exception):
    """The connection an operation was on ended before its result came (the OSD killed, stopped, away)."""


class MsgrLink:
    def __init__(self, address: str, osd: int, timeout: float, local: bool = True) -> None:
        """`local`: over the OSD's Unix socket if it is on this host (msgr_local.py), else TCP."""
        self.osd = osd
        self.dead = False
        self._waiting: dict[int, Future[Reply]] = {}
        self._lock = threading.Lock()       # _waiting, dead
        self._send_lock = threading.Lock()  # one frame at a time on the wire
        self._ids = itertools.count(1)
        self._outbox: list[tuple[pb.CephChunkOp, Data]] = []
        self._why = ""
        host, _, port = address.rpartition(":")
        here = msgr_local.connect(address, timeout) if local else None
        self.local = here is not None
        try:
            self._sock = here or socket.create_connection((host, int(port)), timeout=timeout)
        except OSError as e:   # the OSD not listening (killed, restarting): this link is born dead
            self.dead, self._why = True, f"UNAVAILABLE: cannot connect to osd.{osd} at {address}: {e}"
            return
        if not self.local:
            self._sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        # Blocking, with the kernel bounding sends (SO_SNDTIMEO) rather than Python's timeout, which
        # makes the socket non-blocking: a blocking recv(n, MSG_WAITALL) takes a whole chunk in one
        # call into a buffer it need not zero first.
        self._sock.settimeout(None)
        secs = int(timeout)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO,
                              struct.pack("ll", secs, int((timeout - secs) * 1e6)))
        threading.Thread(target=self._read, name=f"osd.{osd}-msgr", daemon=True).start()

    def submit(self, op: pb.CephChunkOp, data: Data = b"", cork: bool = False) -> Future[Reply]:
        """`data`: a put's chunk, sent from this buffer (left unchanged until the result comes)."""
        fut: Future[Reply] = Future()
        with self._lock:
            if self.dead:
                fut.set_exception(LinkDown(self._why or f"UNAVAILABLE: the connection to osd.{self.osd} ended"))
                return fut
            op.id = next(self._ids)
            self._waiting[op.id] = fut
            self._outbox.append((op, data))
        if not cork:
            self.push()
        return fut

    def post(self, op: pb.CephChunkOp) -> None:
        """Queue an operation whose result nobody waits for (id 0: the OSD sends none back), to leave
        with the next `push`: RGW's garbage collector deleting chunks."""
        with self._lock:
            if not self.dead:
                op.id = 0
                self._outbox.append((op, b""))

    def push(self) -> None:
        """Send what waits in the outbox, as one frame (in the order it was submitted)."""
        with self._send_lock:
            with self._lock:
                ops, self._outbox = self._outbox, []
            if not ops or self.dead:
                return
            for op, data in ops:
                op.data_length = len(data)
            try:
                sendmsg_all(self._sock, frame(pb.CephOsdChunkStreamRequest(ops=[op for op, _ in ops]),
                                              [data for _, data in ops if len(data)]))
            except OSError as e:   # a send that timed out leaves half a frame: the connection is unusable
                self._fail(f"UNAVAILABLE: sending to osd.{self.osd}: {e!r}")

    def forget(self, fut: Future[Reply]) -> None:
        forget(self._waiting, self._lock, fut)

    def close(self) -> None:
        self._fail("UNAVAILABLE: closed")

    def _recv(self, n: int) -> bytes:
        """Exactly `n` bytes, in one call (a 512 KiB chunk is not received and copied piece by piece)."""
        data = self._sock.recv(n, socket.MSG_WAITALL)
        if len(data) < n:
            raise ConnectionError("the OSD closed the connection")
        return data

    def _read(self) -> None:
        try:
            while True:
                fds: list[int] = []
                if self.local:
                    header, fds = fdpass.recv_with_fds(self._sock, HEADER.size)
                else:
                    header = self._recv(HEADER.size)
                n, nbytes = HEADER.unpack(header)
                try:
                    reply = pb.CephOsdChunkStreamResponse.FromString(self._recv(n))
                    replies: list[Reply] = [(r, b"") for r in reply.results]
                    if nbytes:
                        split(replies, self._recv(nbytes))   # the chunks: one buffer, viewed per result
                    if fds:
                        _read_files(replies, fds)
                finally:
                    fdpass.close_all(fds)
                with self._lock:
                    futs = [(self._waiting.pop(r.id, None), (r, data)) for r, data in replies]
                for fut, got in futs:
                    if fut is not None:
                        fut.set_result(got)
        except (OSError, ValueError, struct.error) as e:
            self._fail(f"UNAVAILABLE: osd.{self.osd}: {e}")

    def _fail(self, why: str) -> None:
        with self._lock:
            was_dead, self.dead = self.dead, True
            self._why = self._why or why
            waiting, self._waiting, self._outbox = self._waiting, {}, []
        if not was_dead:
            try:
                self._sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            self._sock.close()
        for fut in waiting.values():
            fut.set_exception(LinkDown(why))


FILES = msgr_local.FileMaps()   # the OSDs' segments this process has mapped (links on this host)


def _read_files(replies: list[Reply], fds: list[int]) -> None:
    """(a link on this host) The chunks the OSD passed as the descriptors of the files they lie in:
    views of those files, in the order of the results that have them."""
    files = iter(fds)
    for i, (r, _) in enumerate(replies):
        if r.file_length:
            fd = next(files, None)
            if fd is None:
                raise ValueError("a result names a file the frame did not pass")
            replies[i] = (r, FILES.view(fd, r.file_offset, r.file_length))
