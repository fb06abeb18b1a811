"""Framed unary calls (emulator/frame_rpc.py, frame_rpc_server.py) against a real listener on loopback:
the generated stub over a FramedChannel reaches the servicer's coroutine with the caller's metadata,
answers as gRPC would (the reply; an abort's code, details and trailing metadata; UNIMPLEMENTED for a
method the server lacks; UNKNOWN for a servicer that raised), and a server that goes away or does not
answer in time is UNAVAILABLE or DEADLINE_EXCEEDED, after which the next call connects again."""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Iterator

import grpc
import pytest

from clustertwin.v1 import lustre_pb2 as pb
from clustertwin.v1 import lustre_pb2_grpc as pb_grpc
from emulator.frame_rpc import LENGTH, REPLY, FramedChannel, FramedRpcError, recv_exact, request_frame
from emulator.frame_rpc_server import FramedServer
from services.lustre.errors import LustreError


class Servicer(pb_grpc.LustreMdsServicer):
    def __init__(self) -> None:
        self.seen: list[tuple] = []

    async def Getattr(self, request, context):  # noqa: N802, ANN001, ANN201
        self.seen.append(tuple(context.invocation_metadata()))
        if request.path == "/missing":
            await LustreError("ENOENT", f"{request.path}: no such entry").abort(context)
        if request.path == "/slow":
            await asyncio.sleep(1.0)
        if request.path == "/waits":
            await asyncio.sleep(0.1)
        if request.path == "/waits-then-fails":
            await asyncio.sleep(0.05)
            await LustreError("ENOENT", "gone after waiting").abort(context)
        if request.path == "/bug":
            raise RuntimeError("a servicer bug")
        return pb.LustreMdsGetattrResponse(attr=pb.LustreAttr(fid=request.path, size=len(request.path)))


class Listener:
    """A FramedServer on its own event loop thread."""

    def __init__(self, servicer: Servicer, port: int = 0) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.server = FramedServer()
        self.server.add(pb_grpc.add_LustreMdsServicer_to_server, servicer)
        self.port = asyncio.run_coroutine_threadsafe(self.server.start("127.0.0.1", port), self.loop).result(5)

    def close(self) -> None:
        async def stop() -> None:
            await self.server.close()
            for t in asyncio.all_tasks():   # the connections' handlers
                if t is not asyncio.current_task():
                    t.cancel()
        asyncio.run_coroutine_threadsafe(stop(), self.loop).result(5)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)
        self.loop.close()


@pytest.fixture
def served() -> Iterator[tuple[Servicer, Listener, FramedChannel]]:
    s = Servicer()
    lis = Listener(s)
    ch = FramedChannel(("127.0.0.1", lis.port))
    try:
        yield s, lis, ch
    finally:
        ch.close()
        lis.close()


def test_a_call_reaches_the_servicer_with_its_metadata_and_returns_its_reply(served) -> None:  # noqa: ANN001
    s, _, ch = served
    stub = pb_grpc.LustreMdsStub(ch)
    r = stub.Getattr(pb.LustreMdsGetattrRequest(path="/a/b"), timeout=5, metadata=(("lustre-client-uuid", "u1"),))
    assert r.attr.fid == "/a/b" and r.attr.size == 4
    assert s.seen == [(("lustre-client-uuid", "u1"),)]


def test_an_abort_answers_its_code_details_and_trailing_metadata(served) -> None:  # noqa: ANN001
    _, _, ch = served
    stub = pb_grpc.LustreMdsStub(ch)
    with pytest.raises(grpc.RpcError) as e:
        stub.Getattr(pb.LustreMdsGetattrRequest(path="/missing"), timeout=5)
    assert e.value.code() == grpc.StatusCode.NOT_FOUND
    assert e.value.details() == "/missing: no such entry"
    assert ("lustre-errno", "ENOENT") in e.value.trailing_metadata()
    assert stub.Getattr(pb.LustreMdsGetattrRequest(path="/x"), timeout=5).attr.fid == "/x"   # the connection goes on


def test_a_method_the_server_lacks_and_a_failing_servicer_are_answered_as_grpc_does(served) -> None:  # noqa: ANN001
    _, _, ch = served
    stub = pb_grpc.LustreMdsStub(ch)
    with pytest.raises(grpc.RpcError) as e:
        stub.Mkdir(pb.LustreMdsMkdirRequest(path="/d"), timeout=5)   # not implemented by this servicer
    assert e.value.code() == grpc.StatusCode.UNIMPLEMENTED
    with pytest.raises(grpc.RpcError) as e:
        stub.Getattr(pb.LustreMdsGetattrRequest(path="/bug"), timeout=5)
    assert e.value.code() == grpc.StatusCode.UNKNOWN and "a servicer bug" in e.value.details()
    raw = ch.unary_unary("/clustertwin.v1.NoSuchService/Nothing")
    with pytest.raises(grpc.RpcError) as e:
        raw(b"", timeout=5)
    assert e.value.code() == grpc.StatusCode.UNIMPLEMENTED
    with pytest.raises(FramedRpcError) as e:
        stub.Ldlm(iter(()))   # a stream is not framed
    assert e.value.code() == grpc.StatusCode.UNIMPLEMENTED


def test_no_reply_in_time_is_a_deadline_and_the_next_call_has_a_new_connection(served) -> None:  # noqa: ANN001
    _, _, ch = served
    stub = pb_grpc.LustreMdsStub(ch)
    with pytest.raises(grpc.RpcError) as e:
        stub.Getattr(pb.LustreMdsGetattrRequest(path="/slow"), timeout=0.2)
    assert e.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    # the slow reply, when it comes, is not taken for this call's
    assert stub.Getattr(pb.LustreMdsGetattrRequest(path="/after"), timeout=5).attr.fid == "/after"


def test_a_server_gone_is_unavailable_and_one_back_on_its_port_is_reached_again() -> None:
    s = Servicer()
    lis = Listener(s)
    port = lis.port
    ch = FramedChannel(("127.0.0.1", port))
    stub = pb_grpc.LustreMdsStub(ch)
    try:
        assert stub.Getattr(pb.LustreMdsGetattrRequest(path="/1"), timeout=5).attr.fid == "/1"
        lis.close()
        with pytest.raises(grpc.RpcError) as e:
            stub.Getattr(pb.LustreMdsGetattrRequest(path="/2"), timeout=5)
        assert e.value.code() == grpc.StatusCode.UNAVAILABLE
        with pytest.raises(grpc.RpcError) as e:   # nothing listens: refused
            stub.Getattr(pb.LustreMdsGetattrRequest(path="/3"), timeout=5)
        assert e.value.code() == grpc.StatusCode.UNAVAILABLE
        lis = Listener(s, port)
        assert stub.Getattr(pb.LustreMdsGetattrRequest(path="/4"), timeout=5).attr.fid == "/4"
        # a server restarted between two calls: the kept connection is found closed and made again,
        # the call succeeds (as a gRPC channel reconnects)
        lis.close()
        lis = Listener(s, port)
        assert stub.Getattr(pb.LustreMdsGetattrRequest(path="/5"), timeout=5).attr.fid == "/5"
    finally:
        ch.close()
        lis.close()


def test_each_thread_has_its_own_connection_while_it_lives(served) -> None:  # noqa: ANN001
    _, _, ch = served
    stub = pb_grpc.LustreMdsStub(ch)
    got: list[str] = []
    done, leave = threading.Barrier(5), threading.Barrier(5)

    def calls(t: int) -> None:
        for i in range(50):
            got.append(stub.Getattr(pb.LustreMdsGetattrRequest(path=f"/t{t}/{i}"), timeout=5).attr.fid)
        done.wait(10)
        leave.wait(10)

    threads = [threading.Thread(target=calls, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    done.wait(10)
    assert len(ch._socks) == 4   # noqa: SLF001 - while the 4 threads live
    leave.wait(10)
    for t in threads:
        t.join()
    assert sorted(got) == sorted(f"/t{t}/{i}" for t in range(4) for i in range(50))
    assert not ch._socks   # noqa: SLF001 - one connection per calling thread, closed when it ended
    stub.Getattr(pb.LustreMdsGetattrRequest(path="/main"), timeout=5)
    assert len(ch._socks) == 1   # noqa: SLF001 - this thread's
    ch.close()
    with pytest.raises(grpc.RpcError) as e:
        stub.Getattr(pb.LustreMdsGetattrRequest(path="/closed"), timeout=5)
    assert e.value.code() == grpc.StatusCode.UNAVAILABLE


def test_a_frame_too_big_closes_the_connection(served) -> None:  # noqa: ANN001
    _, lis, _ = served
    with socket.create_connection(("127.0.0.1", lis.port), timeout=5) as s:
        s.sendall((1 << 30).to_bytes(4, "big"))
        assert s.recv(1) == b""   # closed, nothing answered


def _replies(sock: socket.socket, n: int) -> list[tuple[int, bytes]]:
    """The next `n` reply frames: (status code, message)."""
    out = []
    for _ in range(n):
        (size,) = LENGTH.unpack(recv_exact(sock, LENGTH.size))
        body = bytes(recv_exact(sock, size))
        code, _ld, _nt, lm = REPLY.unpack_from(body)
        out.append((code, body[len(body) - lm:]))
    return out


def test_calls_sent_at_once_answer_in_order_when_one_waits_and_a_frame_comes_in_pieces(served) -> None:  # noqa: ANN001
    """Three calls in one write, the first of which waits (a task) and the second fails after waiting:
    the answers come in the order of the calls; then a frame sent a byte at a time is answered whole."""
    s, lis, _ = served
    method = "/clustertwin.v1.LustreMds/Getattr"
    frames = [request_frame(method, (), pb.LustreMdsGetattrRequest(path=p).SerializeToString())
              for p in ("/waits", "/waits-then-fails", "/now")]
    with socket.create_connection(("127.0.0.1", lis.port), timeout=5) as sock:
        sock.sendall(b"".join(frames))
        got = _replies(sock, 3)
        assert [code for code, _ in got] == [0, grpc.StatusCode.NOT_FOUND.value[0], 0]
        assert pb.LustreMdsGetattrResponse.FromString(got[0][1]).attr.fid == "/waits"
        assert pb.LustreMdsGetattrResponse.FromString(got[2][1]).attr.fid == "/now"
        one = request_frame(method, (), pb.LustreMdsGetattrRequest(path="/bytewise").SerializeToString())
        for i in range(len(one)):
            sock.sendall(one[i: i + 1])
        ((code, msg),) = _replies(sock, 1)
        assert code == 0 and pb.LustreMdsGetattrResponse.FromString(msg).attr.fid == "/bytewise"
    assert len(s.seen) == 4
