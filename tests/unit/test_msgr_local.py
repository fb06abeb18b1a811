"""The messenger between daemons on one host (services/ceph/msgr_local.py): chunk reads answered with
the descriptors of the OSD's segment files, more of them than one frame may carry, replies that wait
for a client that does not read, views that outlive the store's compaction, and TCP where there is
no socket on this host."""

from __future__ import annotations

import asyncio
import os
import socket
import threading
import time
from pathlib import Path

from clustertwin.v1 import ceph_pb2 as pb
from emulator.fdpass import MAX_FDS, recv_with_fds
from services.ceph.msgr import FILES, HEADER, MsgrLink, frame
from services.ceph.msgr_local import FileMaps, local_name
from services.ceph.msgr_server import serve
from services.ceph.osd.logstore import LogChunkStore
from tests.unit.test_msgr_sendfile import _get, _Handler, _key, _served
from tests.waiting import wait_for


def _fds_on(d: Path) -> int:
    """This process's descriptors of files under `d` (the store's segments, those passed for them, and the
    mappings' own). Sockets are left out: the server's end of the link is accepted on its loop, whenever
    that runs, so a count of every descriptor moved by one either way."""
    n = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            n += os.readlink(f"/proc/self/fd/{fd}").startswith(f"{d}/")
        except OSError:   # closed meanwhile (listdir's own descriptor, another thread's)
            pass
    return n


def test_more_chunks_than_one_frame_carries_arrive_each_from_its_file(tmp_path: Path) -> None:
    store = LogChunkStore(tmp_path)
    chunks = {f"c{i}": os.urandom(64 << 10) for i in range(MAX_FDS + 40)}
    for name, data in chunks.items():
        store.put(_key(name), data)
    handler = _Handler(store)
    address, loop = _served(handler)
    link = MsgrLink(address, 0, timeout=10)
    before = _fds_on(tmp_path)
    try:
        assert link.local
        futs = [link.submit(_get(n), cork=True) for n in chunks]
        link.push()   # one request frame; the replies need two frames (at most MAX_FDS descriptors each)
        got = [f.result(timeout=30) for f in futs]
    finally:
        link.close()
        loop.call_soon_threadsafe(loop.stop)
    assert [bytes(data) for _, data in got] == list(chunks.values())
    assert all(r.file_length == 64 << 10 and r.data_length == 0 for r, _ in got)   # passed as files, not bytes
    # the OSD closes its descriptors once passed (on its loop, just after the send the client saw) ...
    wait_for("the passed extents closed", lambda: all(ext.fd == -1 for ext in handler.sent), timeout=10)
    # ... and the client the ones it was passed: what is left is one per segment it mapped (CPython's mmap
    # keeps a descriptor of its file)
    mapped = sum((f.stat().st_dev, f.stat().st_ino) in FILES for f in tmp_path.rglob("seg.*"))
    assert mapped >= 1
    assert _fds_on(tmp_path) <= before + mapped


def test_replies_wait_for_a_client_that_does_not_read_then_arrive_in_order(tmp_path: Path) -> None:
    """Replies with their data in the frame (chunks the OSD holds in memory) fill the socket; the
    OSD keeps the rest, and sends all, in order, once the client reads."""
    store = LogChunkStore(tmp_path)
    handler = _Handler(store)
    address, loop = _served(handler)
    names = [f"later/m{i}" for i in range(40)]   # answered from memory by a task: 40 x 256 KiB
    for i, n in enumerate(names):
        store.put(_key(n), bytes([i]) * (256 << 10))
    ops = [_get(n) for n in names]
    for i, op in enumerate(ops):
        op.id = i + 1
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(local_name(address))
        sock.sendall(b"".join(bytes(p) for p in frame(pb.CephOsdChunkStreamRequest(ops=ops), [])))
        deadline = time.monotonic() + 10
        while handler.later < 40 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert handler.later == 40   # all answered, far more than the socket holds: the rest waits
        got: list[tuple[int, bytes]] = []
        while len(got) < 40:
            header, fds = recv_with_fds(sock, HEADER.size)
            assert not fds
            n, nbytes = HEADER.unpack(header)
            reply = pb.CephOsdChunkStreamResponse.FromString(_exactly(sock, n))
            data = _exactly(sock, nbytes)
            for r in reply.results:
                got.append((r.id, data[: r.data_length]))
                data = data[r.data_length:]
    finally:
        sock.close()
        loop.call_soon_threadsafe(loop.stop)
    assert [i for i, _ in got] == list(range(1, 41))
    assert [d for _, d in got] == [bytes([i]) * (256 << 10) for i in range(40)]


def _exactly(sock: socket.socket, n: int) -> bytes:
    data = sock.recv(n, socket.MSG_WAITALL) if n else b""
    assert len(data) == n
    return data


def test_a_view_outlives_the_segment_being_compacted_away(tmp_path: Path) -> None:
    store = LogChunkStore(tmp_path, segment_bytes=1 << 20)
    data = os.urandom(300 << 10)
    store.put(_key("keep"), data)
    ext = store.extent(_key("keep"))
    assert ext is not None
    maps = FileMaps(capacity=2)
    view = maps.view(ext.fd, ext.offset, ext.length)
    ext.close()
    for _ in range(12):   # overwrites roll segments over and compact the first one away
        store.put(_key("churn"), os.urandom(300 << 10))
    assert not (tmp_path / "current" / "seg.00000000").exists()   # the file the view is of is gone
    assert store.get(_key("keep")) == data and bytes(view) == data
    store.close()


def test_a_chunk_past_the_end_of_its_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "seg"
    path.write_bytes(b"x" * 4096)
    fd = os.open(path, os.O_RDONLY)
    try:
        maps = FileMaps()
        assert bytes(maps.view(fd, 4000, 96)) == b"x" * 96
        try:
            maps.view(fd, 4000, 97)
            raise AssertionError("a view past the end of the file was given")
        except ValueError as e:
            assert "past the end" in str(e)
    finally:
        os.close(fd)


def test_without_a_socket_on_this_host_the_link_is_tcp(tmp_path: Path) -> None:
    store = LogChunkStore(tmp_path)
    store.put(_key("a"), b"abc" * 50000)
    loop = asyncio.new_event_loop()
    tcp, unix = loop.run_until_complete(serve("127.0.0.1:0", _Handler(store)))
    unix.close()   # as an OSD in another network namespace is: its abstract socket not reachable from here
    loop.run_until_complete(unix.wait_closed())
    threading.Thread(target=loop.run_forever, daemon=True).start()
    link = MsgrLink(f"127.0.0.1:{tcp.sockets[0].getsockname()[1]}", 0, timeout=10)
    try:
        assert not link.local
        r, data = link.submit(_get("a")).result(timeout=10)
    finally:
        link.close()
        loop.call_soon_threadsafe(loop.stop)
    assert bytes(data) == b"abc" * 50000 and r.file_length == 0 and r.data_length == 150000
