"""Chunk reads sent from the OSD's files (services/ceph/extent.py, msgr.py): the messenger's server
sends a chunk still in its log segment with sendfile, a real MsgrLink receives it whole and in
order with the buffers around it, and an extent outlives its store closing or compacting the file."""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import AsyncIterator
from pathlib import Path

from clustertwin.v1 import ceph_pb2 as pb
from services.ceph.extent import FileExtent
from services.ceph.msgr import MsgrLink, Ops, Reply, serve
from services.ceph.osd.logstore import LogChunkStore


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


def _served(store: LogChunkStore) -> tuple[str, asyncio.AbstractEventLoop, list[FileExtent]]:
    """A messenger server on loopback whose gets answer with the chunk's extent, as the OSD's do."""
    sent: list[FileExtent] = []

    async def stream(requests: AsyncIterator[Ops]) -> AsyncIterator[list[Reply]]:
        async for ops in requests:
            replies: list[Reply] = []
            for op, _ in ops:
                ext = store.extent((op.key.pg, op.key.object, op.key.shard))
                assert ext is not None
                sent.append(ext)
                replies.append((pb.CephChunkOpResult(id=op.id, found=True), ext))
            yield replies

    loop = asyncio.new_event_loop()
    server = loop.run_until_complete(serve("127.0.0.1:0", stream))
    threading.Thread(target=loop.run_forever, daemon=True).start()
    return f"127.0.0.1:{server.sockets[0].getsockname()[1]}", loop, sent


def test_chunks_sent_from_their_file_arrive_whole_and_in_order(tmp_path: Path) -> None:
    store = LogChunkStore(tmp_path)
    # 8 MiB: more than the socket takes at once, so the send goes on once the receiver reads
    chunks = {name: os.urandom(size) for name, size in (("small", 70 << 10), ("big", 8 << 20), ("mid", 512 << 10))}
    for name, data in chunks.items():
        store.put(_key(name), data)
    address, loop, sent = _served(store)
    link = MsgrLink(address, 0, timeout=10)
    try:
        futs = [link.submit(pb.CephChunkOp(op="get", key=pb.CephChunkKey(pg="5.1", object=n, shard=0)), cork=True)
                for n in chunks]
        link.push()   # one frame of three gets: one reply frame with three chunks
        got = [f.result(timeout=30) for f in futs]
    finally:
        link.close()
        loop.call_soon_threadsafe(loop.stop)
    assert [bytes(data) for _, data in got] == list(chunks.values())
    assert all(r.found for r, _ in got)
    assert len(sent) == 3 and all(ext.fd == -1 for ext in sent)   # each extent's descriptor closed once sent
