"""The CephOsd gRPC service (grpc.aio) of one OSD daemon: chunk put/get/delete/list, stat, and its
faults (corrupt a chunk, slow disk, stop/start). Every chunk call takes the time the device model
gives it, one call at a time per device (none under `--storage-timing fast`); a stopped OSD refuses
chunk I/O with UNAVAILABLE. A CephError ends a call with its own status (services/ceph/errors.py).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Callable
from typing import Any, Protocol

import grpc

from clustertwin.v1 import ceph_pb2 as pb
from clustertwin.v1 import ceph_pb2_grpc as pb_grpc
from emulator import paging
from services.ceph.errors import CephError, abort, ceph_call
from services.ceph.extent import FileExtent
from services.ceph.msgr import Data, Ops, Reply


class Osd(Protocol):
    """What the servicer asks of its daemon (daemon.py's OsdDaemon), named here so that the two
    modules do not import each other."""

    osd: int
    stopped: bool
    slow_factor: float
    ops: int
    timing: str       # "model" or "fast" (device.py)
    device_wait: float
    device_lock: asyncio.Lock
    model: Any        # the device model (device.py)
    chunks: Any       # the chunk store (logstore.py)
    events: Any       # the WatchEvents buffer (services/ceph/events.py)

    def stat(self) -> pb.CephOsdStat: ...
    def event(self, kind: str, message: str, **fields: object) -> None: ...
    def set_slow(self, factor: float) -> None: ...
    async def stop_osd(self) -> None: ...
    async def start_osd(self) -> None: ...

log = logging.getLogger("ceph_osd")
INLINE_BYTES = 64 << 10   # a chunk's file call under the device model: on the event loop up to here
# Under `fast` timing a chunk of up to this is written or read on the event loop: from the page cache
# a 512 KiB chunk's pwrite/pread costs 50-100 us, less than the hop to a thread and back (about 80 us
# of wake-ups, twice), and an EC stripe's chunks are 512 KiB.
NOW_BYTES = 1 << 20
SENDFILE_BYTES = 64 << 10   # a chunk read at once of this or more is sent from its file (extent.py)


def _key(k: pb.CephChunkKey) -> tuple[str, str, int]:
    return (k.pg, k.object, k.shard)


class OsdServicer(pb_grpc.CephOsdServicer):
    def __init__(self, daemon: Osd) -> None:
        self.d = daemon

    async def _io(self, context: grpc.aio.ServicerContext, nbytes: int, fn: Callable[[], Any]) -> tuple[Any, float]:
        """`_device`, a CephError ending the call with its status."""
        return await ceph_call(context, self._device(nbytes, fn))   # type: ignore[no-any-return]

    async def _device(self, nbytes: int, fn: Callable[[], Any]) -> tuple[Any, float]:
        """Run `fn` on the device (`nbytes` moved; -1: the bytes it returns) for the device model's time,
        one call at a time. Under `--storage-timing fast` a healthy disk takes no time (0 device seconds,
        no queue); a slow-disk fault still costs its modelled time, as the fault is what is asked for."""
        d = self.d
        if d.stopped:
            raise CephError("UNAVAILABLE", f"osd.{d.osd} is stopped")
        if d.timing == "fast" and d.slow_factor == 1.0:
            result = await self._run(nbytes, fn)
            d.ops += 1
            return result, 0.0
        async with d.device_lock:
            t0 = time.monotonic()
            result = await self._run(nbytes, fn)
            nbytes = nbytes if nbytes >= 0 else (len(result) if isinstance(result, bytes) else 0)
            modelled = d.model.seconds(nbytes, d.slow_factor)
            left = modelled - (time.monotonic() - t0)
            if left > 0:
                await asyncio.sleep(left)
                d.device_wait += left
            d.ops += 1
        return result, modelled

    @staticmethod
    async def _run(nbytes: int, fn: Callable[[], Any]) -> Any:
        """A small chunk's file calls on the event loop (a thread hop costs more than they do), a big
        one's in a thread."""
        if 0 <= nbytes <= INLINE_BYTES:
            return fn()
        return await asyncio.to_thread(fn)

    async def op(self, op: pb.CephChunkOp, data: Data) -> Reply:
        """One operation of a ChunkStream (`data`: a put's chunk), as PutChunk/GetChunk/DeleteChunk
        would do it; the result and the chunk a get read."""
        key, chunks = _key(op.key), self.d.chunks
        try:
            if op.op == "put":
                _, secs = await self._device(len(data), lambda: chunks.put(key, data))
                return pb.CephChunkOpResult(id=op.id, found=True, device_seconds=secs), b""
            if op.op == "get":
                got, secs = await self._device(chunks.size(key), lambda: chunks.get(key))
                return pb.CephChunkOpResult(id=op.id, found=got is not None, device_seconds=secs), got or b""
            if op.op == "delete":
                existed, secs = await self._device(0, lambda: chunks.delete(key))
                return pb.CephChunkOpResult(id=op.id, found=existed, device_seconds=secs), b""
            raise CephError("INVALID_ARGUMENT", f"unknown chunk operation {op.op!r}; use put, get or delete")
        except CephError as e:
            return pb.CephChunkOpResult(id=op.id, code=e.code, message=e.message), b""

    def now(self, op: pb.CephChunkOp, data: Data) -> Reply | None:
        """The operation done at once, where the device takes no time (`fast` timing, a healthy running
        disk) and the chunk is small: no task, no queue, its result in the reply to its own message.
        None: it goes the way of `op`."""
        d = self.d
        if d.timing != "fast" or d.slow_factor != 1.0 or d.stopped or op.op not in ("put", "delete", "get"):
            return None
        try:
            key = _key(op.key)
            if op.op == "put":
                if len(data) > NOW_BYTES:
                    return None
                d.chunks.put(key, data)
                found, data = True, b""
            elif op.op == "delete":
                found, data = d.chunks.delete(key), b""
            else:
                n = d.chunks.size(key)
                if n > NOW_BYTES:
                    return None
                got = d.chunks.extent(key) if n >= SENDFILE_BYTES else d.chunks.get(key)
                found, data = got is not None, got or b""
        except CephError as e:
            return pb.CephChunkOpResult(id=op.id, code=e.code, message=e.message), b""
        d.ops += 1
        return pb.CephChunkOpResult(id=op.id, found=found), data

    async def ChunkStream(self, request_iterator: AsyncIterator[pb.CephOsdChunkStreamRequest],  # noqa: N802
                          context: grpc.aio.ServicerContext) -> AsyncIterator[pb.CephOsdChunkStreamResponse]:
        async def ops() -> AsyncIterator[Ops]:
            async for req in request_iterator:
                yield [(op, op.data) for op in req.ops]   # (each read of a bytes field copies it)

        async for replies in self.chunk_stream(ops()):
            for r, data in replies:
                if data:
                    r.data = data.read() if isinstance(data, FileExtent) else data
            yield pb.CephOsdChunkStreamResponse(results=[r for r, _ in replies])

    async def chunk_stream(self, requests: AsyncIterator[Ops]) -> AsyncIterator[list[Reply]]:
        """A stream of chunk operations, each with its data, over gRPC (the messenger, msgr_server.py, calls
        `now` and `op` itself).
        Operations run as they arrive (the device model queues them as it queues unary calls); their
        results go back as they finish, those ready together in one message."""
        done: asyncio.Queue[list[Reply] | None] = asyncio.Queue()
        running: set[asyncio.Task[None]] = set()

        async def one(op: pb.CephChunkOp, data: Data) -> None:
            r = await self.op(op, data)
            if r[0].id:
                done.put_nowait([r])

        async def read() -> None:
            try:
                async for req in requests:
                    now = []
                    for op, data in req:
                        r = self.now(op, data)
                        if r is not None:
                            if r[0].id:   # id 0: the sender wants no result (msgr.MsgrLink.post)
                                now.append(r)
                            continue
                        t = asyncio.create_task(one(op, data))
                        running.add(t)
                        t.add_done_callback(running.discard)
                    if now:
                        done.put_nowait(now)
                if running:
                    await asyncio.wait(set(running))
            finally:
                done.put_nowait(None)

        reader = asyncio.create_task(read())
        try:
            end = False
            while not end:
                item = await done.get()
                results: list[Reply] = []
                while True:
                    if item is None:
                        end = True
                    else:
                        results += item
                    if end or done.empty():
                        break
                    item = done.get_nowait()
                if results:
                    yield results
        finally:
            reader.cancel()
            for t in running:
                t.cancel()

    async def PutChunk(self, request, context):  # noqa: ANN001, ANN201, N802
        key, data = _key(request.key), request.data   # (each read of a bytes field copies it)
        _, secs = await self._io(context, len(data), lambda: self.d.chunks.put(key, data))
        return pb.CephOsdPutChunkResponse(bytes=len(data), device_seconds=secs)

    async def GetChunk(self, request, context):  # noqa: ANN001, ANN201, N802
        key = _key(request.key)
        data, secs = await self._io(context, self.d.chunks.size(key), lambda: self.d.chunks.get(key))
        if data is None:
            return pb.CephOsdGetChunkResponse(found=False, device_seconds=secs)
        return pb.CephOsdGetChunkResponse(found=True, data=data, device_seconds=secs)

    async def DeleteChunk(self, request, context):  # noqa: ANN001, ANN201, N802
        key = _key(request.key)
        existed, _ = await self._io(context, 0, lambda: self.d.chunks.delete(key))
        return pb.CephOsdDeleteChunkResponse(existed=existed)

    async def ListChunks(self, request, context):  # noqa: ANN001, ANN201, N802
        # by position in key order: chunks written between two pages may shift them
        rows, token = await ceph_call(context, asyncio.to_thread(
            paging.page, "ListChunks", sorted(self.d.chunks.keys(request.pg)), request.page_size, request.page_token))
        chunks = [pb.CephChunkInfo(key=pb.CephChunkKey(pg=k[0], object=k[1], shard=k[2]), bytes=n) for k, n in rows]
        return pb.CephOsdListChunksResponse(chunks=chunks, next_page_token=token)

    async def Stat(self, request, context):  # noqa: ANN001, ANN201, N802
        return pb.CephOsdStatResponse(stat=self.d.stat())

    async def Corrupt(self, request, context):  # noqa: ANN001, ANN201, N802
        key = _key(request.key)
        n, _ = await self._io(context, 0, lambda: self.d.chunks.corrupt(key, request.offset))
        log.warning("osd.%d: corrupted chunk %s/%r shard %d at byte %d (fault)", self.d.osd, *key,
                    request.offset % max(n, 1))
        self.d.event("chunk_corrupt", f"osd.{self.d.osd}: corrupted chunk {key[1]} shard {key[2]} of pg {key[0]}",
                     pg=key[0])
        return pb.CephOsdCorruptResponse(bytes=n)

    async def SetFault(self, request, context):  # noqa: ANN001, ANN201, N802
        d = self.d
        if request.HasField("slow_factor") and not request.slow_factor >= 1.0:
            await abort(context, CephError(
                "INVALID_ARGUMENT", f"slow factor must be >= 1 (1 = healthy disk), got {request.slow_factor:g}"))
        if request.HasField("slow_factor"):
            d.set_slow(request.slow_factor)
        if request.HasField("stopped") and request.stopped != d.stopped:
            await (d.stop_osd() if request.stopped else d.start_osd())
        return pb.CephOsdSetFaultResponse(stat=d.stat())

    async def WatchEvents(self, request: pb.CephOsdWatchEventsRequest,  # noqa: N802
                          context: grpc.aio.ServicerContext) -> AsyncIterator[pb.CephOsdWatchEventsResponse]:
        async for ev in self.d.events.watch(request.since_seq):
            yield pb.CephOsdWatchEventsResponse(event=ev)
