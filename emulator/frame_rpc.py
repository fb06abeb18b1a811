"""A service's unary gRPC calls without HTTP/2: each call one frame on a plain connection, as ptlrpc
carries Lustre's RPCs over LNet (a request message, a reply message, nothing in between).

Why: a gRPC Python call that does nothing costs 0.56 ms here (both ends' HTTP/2 framing, flow
control, the C core's threads and completion queues); the Lustre MDS's Create and Setattr take about
0.6 ms of work each, so the transport was half of every metadata operation of the mount. The same
calls, servicer and messages go over a socket instead: the servicer's methods run as they do under
gRPC (with their locks, errors and metadata), and the client raises `grpc.RpcError`s with the same
codes, details and trailing metadata, so the code above either transport is the same.

    request  >I length, then >HHI: method length, metadata pairs, message length; the method
             ("/pkg.Service/Method"), each pair as >HH lengths + key + value, the message
    reply    >I length, then >BHHI: status code, details length, trailing pairs, message length;
             the details, the pairs, the message

A connection carries one call at a time: each calling thread has its own connection per server
(`FramedChannel`), so a call is one send and one receive on the caller's thread, no hand-off. The
server's end is frame_rpc_server.py. Streaming methods stay on gRPC.

A call is three system calls where the reply fits one read: a peek that the kept connection is still
open, the send, the receive. The socket stays in blocking mode and the call's timeout is the kernel's
(SO_RCVTIMEO, SO_SNDTIMEO, set when it changes): a Python socket timeout would poll before every send
and receive, and each system call lets the GIL go to another thread and back.
"""

from __future__ import annotations

import socket
import struct
import threading
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import grpc

LENGTH = struct.Struct(">I")
REQUEST = struct.Struct(">HHI")
REPLY = struct.Struct(">BHHI")
PAIR = struct.Struct(">HH")
MAX_FRAME = 64 << 20
CONNECT_TIMEOUT_S = 5.0
FIRST_READ = 16 << 10   # a reply's first read: most replies (attributes, a small listing) come whole in it
TIMEVAL = struct.Struct("@ll")   # struct timeval, for SO_RCVTIMEO and SO_SNDTIMEO
CODES = {c.value[0]: c for c in grpc.StatusCode}
Metadata = Sequence[tuple[str, str]]


def framed_address(grpc_address: str, offset: int) -> tuple[str, int]:
    """The (host, port) a service's framed calls go to: its gRPC port + `offset`."""
    host, _, port = grpc_address.rpartition(":")
    return host.strip("[]"), int(port) + offset


def pack_pairs(pairs: Metadata) -> bytes:
    return b"".join(PAIR.pack(len(k.encode()), len(v.encode())) + k.encode() + v.encode() for k, v in pairs)


def unpack_pairs(view: memoryview, at: int, n: int) -> tuple[list[tuple[str, str]], int]:
    out = []
    for _ in range(n):
        lk, lv = PAIR.unpack_from(view, at)
        at += PAIR.size
        out.append((bytes(view[at: at + lk]).decode(), bytes(view[at + lk: at + lk + lv]).decode()))
        at += lk + lv
    return out, at


def request_frame(method: str, metadata: Metadata, message: bytes) -> bytes:
    m = method.encode()
    body = REQUEST.pack(len(m), len(metadata), len(message)) + m + pack_pairs(metadata) + message
    return LENGTH.pack(len(body)) + body


def reply_frame(code: grpc.StatusCode, details: str, trailing: Metadata, message: bytes) -> bytes:
    d = details.encode()
    body = REPLY.pack(code.value[0], len(d), len(trailing), len(message)) + d + pack_pairs(trailing) + message
    return LENGTH.pack(len(body)) + body


class FramedRpcError(grpc.RpcError):
    """A framed call that failed, read as a failed gRPC call is (code, details, trailing metadata)."""

    def __init__(self, code: grpc.StatusCode, details: str, trailing: Metadata = ()) -> None:
        super().__init__(f"{code.name}: {details}")
        self._code, self._details, self._trailing = code, details, tuple(trailing)

    def code(self) -> grpc.StatusCode:
        return self._code

    def details(self) -> str:
        return self._details

    def trailing_metadata(self) -> tuple[tuple[str, str], ...]:
        return self._trailing

    def initial_metadata(self) -> tuple:
        return ()

    def debug_error_string(self) -> str:
        return str(self)


def recv_exact(sock: socket.socket, n: int) -> bytearray:
    """Exactly `n` bytes from a blocking socket, one syscall per call where the kernel allows (not one
    per segment); ConnectionError if the peer closes first. (Lustre's bulk port reads with it too.)"""
    buf = bytearray(n)
    _fill(sock, memoryview(buf))
    return buf


def _fill(sock: socket.socket, view: memoryview) -> None:
    got, n = 0, len(view)
    while got < n:
        k = sock.recv_into(view[got:], n - got, socket.MSG_WAITALL)
        if k == 0:
            raise ConnectionError("the peer closed the connection")
        got += k


def recv_frame(sock: socket.socket) -> memoryview:
    """A frame's body, from a blocking socket: its length and what came with it in one read, the rest
    (a body longer than FIRST_READ) after."""
    head = bytearray(FIRST_READ)
    got = sock.recv_into(head)
    if got == 0:
        raise ConnectionError("the peer closed the connection")
    if got < LENGTH.size:
        _fill(sock, memoryview(head)[got:LENGTH.size])
        got = LENGTH.size
    (n,) = LENGTH.unpack_from(head)
    if n > MAX_FRAME or got > LENGTH.size + n:
        raise ConnectionError(f"a reply frame of {n} bytes ({got} read)")
    if got == LENGTH.size + n:
        return memoryview(head)[LENGTH.size:got]
    body = bytearray(n)
    view = memoryview(body)
    view[:got - LENGTH.size] = memoryview(head)[LENGTH.size:got]
    _fill(sock, view[got - LENGTH.size:])
    return view


def _open(sock: socket.socket) -> bool:
    """Whether a kept connection is still open: nothing to read on it between calls (a server that
    closed it, or was killed, left an end of file or a reset there)."""
    try:
        sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT)
    except BlockingIOError:
        return True
    except OSError:
        return False
    return False   # an end of file, or bytes no call asked for


class _Held:
    """A thread's connection (its thread-local value: collected when the thread ends), and the timeout
    its socket has (the kernel's: SO_RCVTIMEO and SO_SNDTIMEO)."""

    __slots__ = ("sock", "timeout", "__weakref__")

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.timeout: float | None = None

    def set_timeout(self, timeout: float | None) -> None:
        """A send or receive that waits longer than `timeout` (None: forever) fails with EAGAIN."""
        if timeout == self.timeout:
            return
        us = 0 if timeout is None else max(1, int(timeout * 1_000_000))
        tv = TIMEVAL.pack(*divmod(us, 1_000_000))
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, tv)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, tv)
        self.timeout = timeout


class FramedChannel:
    """Stands where a `grpc.Channel` does for a service's generated stub: its unary methods go over
    framed connections to `address` (one per calling thread, made on first use and again after a
    failure). Its streaming methods are refused (UNIMPLEMENTED): they stay on a gRPC channel."""

    def __init__(self, address: tuple[str, int]) -> None:
        self.address = address
        self._local = threading.local()
        self._lock = threading.Lock()
        self._socks: set[socket.socket] = set()
        self.closed = False

    def unary_unary(self, method: str, request_serializer: Callable[[Any], bytes] | None = None,
                    response_deserializer: Callable[[bytes], Any] | None = None, **_: Any) -> Callable[..., Any]:
        def call(request: Any, timeout: float | None = None, metadata: Metadata | None = None, **_: Any) -> Any:
            message = request_serializer(request) if request_serializer else request
            code, details, trailing, reply = self.call(method, message, timeout, metadata or ())
            if code is not grpc.StatusCode.OK:
                raise FramedRpcError(code, details, trailing)
            return response_deserializer(bytes(reply)) if response_deserializer else bytes(reply)
        return call

    def _streaming(self, method: str, *_: Any, **__: Any) -> Callable[..., Any]:
        def refuse(*_: Any, **__: Any) -> Any:
            raise FramedRpcError(grpc.StatusCode.UNIMPLEMENTED, f"{method}: a streaming call is not framed")
        return refuse

    unary_stream = stream_unary = stream_stream = _streaming

    def call(self, method: str, message: bytes, timeout: float | None,
             metadata: Metadata) -> tuple[grpc.StatusCode, str, list[tuple[str, str]], memoryview]:
        """One call on this thread's connection: (code, details, trailing metadata, reply message).
        `timeout` bounds each wait for the server (the send, and each read of the reply)."""
        held = self._held()
        sock = held.sock
        try:
            held.set_timeout(timeout)
            sock.sendall(request_frame(method, metadata, message))
            body = recv_frame(sock)
        except (TimeoutError, BlockingIOError):   # the kernel's timeout: EAGAIN on a blocking socket
            self._drop(sock)   # a late reply would answer the next call
            raise FramedRpcError(grpc.StatusCode.DEADLINE_EXCEEDED, f"{method}: no reply in {timeout} s") from None
        except OSError as e:
            self._drop(sock)
            raise FramedRpcError(grpc.StatusCode.UNAVAILABLE, f"{method} to {self._where()}: {e}") from None
        code, ld, nt, lm = REPLY.unpack_from(body)
        at = REPLY.size
        details = bytes(body[at: at + ld]).decode()
        trailing, at = unpack_pairs(body, at + ld, nt)
        return CODES.get(code, grpc.StatusCode.UNKNOWN), details, trailing, body[at: at + lm]

    def _where(self) -> str:
        return f"{self.address[0]}:{self.address[1]}"

    def _held(self) -> _Held:
        held = getattr(self._local, "held", None)
        if held is not None:
            if _open(held.sock):
                return held
            self._drop(held.sock)   # the server closed it since (restarted): a new connection, as gRPC makes
        if self.closed:
            raise FramedRpcError(grpc.StatusCode.UNAVAILABLE, f"the channel to {self._where()} is closed")
        try:
            sock = socket.create_connection(self.address, timeout=CONNECT_TIMEOUT_S)
        except OSError as e:
            raise FramedRpcError(grpc.StatusCode.UNAVAILABLE, f"cannot connect to {self._where()}: {e}") from None
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.settimeout(None)   # blocking: the calls' timeouts are the kernel's (_Held.set_timeout)
        with self._lock:
            self._socks.add(sock)
        held = self._local.held = _Held(sock)
        weakref.finalize(held, self._forget, sock)   # the thread ended: its connection goes with it
        return held

    def _drop(self, sock: socket.socket) -> None:
        self._local.held = None
        self._forget(sock)

    def _forget(self, sock: socket.socket) -> None:
        with self._lock:
            self._socks.discard(sock)
        sock.close()

    def close(self) -> None:
        """Every thread's connection closed (a call in flight on one fails UNAVAILABLE)."""
        self.closed = True
        with self._lock:
            socks, self._socks = self._socks, set()
        for s in socks:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()
