"""Chunk reads sent from the OSD's files (services/ceph/extent.py, msgr.py): the messenger's server
sends a chunk still in its log segment with sendfile, a real MsgrLink receives it whole and in
order with the buffers around it, and an extent outlives its store closing or compacting the file."""

from __future__ import annotations

import asyncio
import os
import threading
from pathlib import Path

import pytest

from clustertwin.v1 import ceph_pb2 as pb
from services.ceph.extent import FileExtent
from services.ceph.msgr import Data, MsgrLink, Reply
from services.ceph.msgr_server import SCRATCH, serve
from services.ceph.osd.logstore import LogChunkStore
from tests.waiting import wait_for


def _key(name: str) -> tuple[str, str, int]:
    return ("5.1", name, 0)


def test_an_extent_reads_its_chunk_after_the_store_closed_the_file(tmp_path: Path) -> None:
    store = LogChunkStore(tmp_path)
    data = os.urandom(300 << 10)
    store.put(_key("a"), data)
    ext = store.extent(_key("a"))
    assert ext is not None and len(ext) == len(data) and store.extent(_key("missing")) is None
    store.close()   # the segment's own descriptor gone: the extent has its duplicate
    assert ext.read() == data and ext.fd == -1


class _Handler:
    """A messenger handler as the OSD's servicer is one: gets answered with the chunk's extent at
    once, puts stored at once, anything else (here: a get of "later/...") through a task."""

    def __init__(self, store: LogChunkStore) -> None:
        self.store, self.later = store, 0
        self.sent: list[FileExtent] = []

    def now(self, op: pb.CephChunkOp, data: Data) -> Reply | None:
        key = (op.key.pg, op.key.object, op.key.shard)
        if op.op == "put":
            self.store.put(key, bytes(data))
            return pb.CephChunkOpResult(id=op.id, found=True), b""
        if op.key.object.startswith("later/"):
            return None
        ext = self.store.extent(key)
        assert ext is not None
        self.sent.append(ext)
        return pb.CephChunkOpResult(id=op.id, found=True), ext

    async def op(self, op: pb.CephChunkOp, data: Data) -> Reply:
        await asyncio.sleep(0.05)
        self.later += 1
        got = self.store.get((op.key.pg, op.key.object, op.key.shard))
        return pb.CephChunkOpResult(id=op.id, found=got is not None), got or b""


def _served(handler: _Handler) -> tuple[str, asyncio.AbstractEventLoop]:
    loop = asyncio.new_event_loop()
    tcp, _ = loop.run_until_complete(serve("127.0.0.1:0", handler))
    threading.Thread(target=loop.run_forever, daemon=True).start()
    return f"127.0.0.1:{tcp.sockets[0].getsockname()[1]}", loop


def _get(name: str) -> pb.CephChunkOp:
    return pb.CephChunkOp(op="get", key=pb.CephChunkKey(pg="5.1", object=name, shard=0))


@pytest.mark.parametrize("local", [False, True], ids=["tcp", "this-host"])
def test_chunks_sent_from_their_file_arrive_whole_and_in_order(tmp_path: Path, local: bool) -> None:
    """Over TCP the chunks go with sendfile; to a client on this host (msgr_local.py) as their files'
    descriptors, read by the client."""
    store = LogChunkStore(tmp_path)
    # 8 MiB: more than the socket takes at once, so the send goes on once the receiver reads
    chunks = {name: os.urandom(size) for name, size in (("small", 70 << 10), ("big", 8 << 20), ("mid", 512 << 10))}
    for name, data in chunks.items():
        store.put(_key(name), data)
    handler = _Handler(store)
    address, loop = _served(handler)
    link = MsgrLink(address, 0, timeout=10, local=local)
    assert link.local is local
    try:
        futs = [link.submit(_get(n), cork=True) for n in chunks]
        link.push()   # one frame of three gets: one reply frame with three chunks
        got = [f.result(timeout=30) for f in futs]
    finally:
        link.close()
        loop.call_soon_threadsafe(loop.stop)
    assert [bytes(data) for _, data in got] == list(chunks.values())
    assert all(r.found for r, _ in got)
    assert len(handler.sent) == 3
    # each descriptor closed once sent (on the server's loop, just after the send the client saw)
    wait_for("the sent extents closed", lambda: all(ext.fd == -1 for ext in handler.sent), timeout=10)


@pytest.mark.parametrize("local", [False, True], ids=["tcp", "this-host"])
def test_puts_small_and_bigger_than_the_receive_buffer_then_gets_done_at_once_or_later(tmp_path: Path,
                                                                                      local: bool) -> None:
    """Frames of every size through one connection: many small puts (several frames a recv), a put
    bigger than the server's receive buffer (SCRATCH), gets answered at once and after a wait,
    each result matched to its operation."""
    store = LogChunkStore(tmp_path)
    handler = _Handler(store)
    address, loop = _served(handler)
    link = MsgrLink(address, 0, timeout=10, local=local)
    assert link.local is local
    small = {f"s{i}": os.urandom(4096 + i) for i in range(200)}
    big = {"later/big": os.urandom(SCRATCH * 3 + 5), "b2": os.urandom(SCRATCH + 1)}
    try:
        puts = [link.submit(pb.CephChunkOp(op="put", key=pb.CephChunkKey(pg="5.1", object=n, shard=0)), d)
                for n, d in {**small, **big}.items()]
        assert all(f.result(timeout=30)[0].found for f in puts)
        gets = {n: link.submit(_get(n), cork=True) for n in ("later/big", "s7", "b2", "s199")}
        link.push()
        got = {n: bytes(f.result(timeout=30)[1]) for n, f in gets.items()}
    finally:
        link.close()
        loop.call_soon_threadsafe(loop.stop)
    assert got == {"later/big": big["later/big"], "s7": small["s7"], "b2": big["b2"], "s199": small["s199"]}
    assert handler.later == 1 and store.get(("5.1", "s123", 0)) == small["s123"]
