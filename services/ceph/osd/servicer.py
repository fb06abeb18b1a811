"""The CephOsd gRPC service (grpc.aio) of one OSD daemon: chunk put/get/delete/list, stat, and its
faults (corrupt a chunk, slow disk, stop/start). Every chunk call takes the time the device model
gives it, one call at a time per device; a stopped OSD refuses chunk I/O with UNAVAILABLE. A
CephError ends a call with its own status (services/ceph/errors.py).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import grpc

from clustertwin.v1 import ceph_pb2 as pb
from clustertwin.v1 import ceph_pb2_grpc as pb_grpc
from services.ceph.errors import CephError, abort, ceph_call

if TYPE_CHECKING:
    from services.ceph.osd.daemon import OsdDaemon

log = logging.getLogger("ceph_osd")


def _key(k: pb.ChunkKey) -> tuple[str, str, int]:
    return (k.pg, k.object, k.shard)


class OsdServicer(pb_grpc.CephOsdServicer):
    def __init__(self, daemon: OsdDaemon) -> None:
        self.d = daemon

    async def _io(self, context: grpc.aio.ServicerContext, nbytes: int, fn: Callable[[], Any]) -> tuple[Any, float]:
        """Run `fn` on the device (`nbytes` moved; -1: the bytes it returns) for the device model's time."""
        d = self.d
        if d.stopped:
            await abort(context, CephError("UNAVAILABLE", f"osd.{d.osd} is stopped"))
        async with d.device_lock:
            t0 = time.monotonic()
            result = await ceph_call(context, asyncio.to_thread(fn))
            nbytes = nbytes if nbytes >= 0 else (len(result) if isinstance(result, bytes) else 0)
            modelled = d.model.seconds(nbytes, d.slow_factor)
            left = modelled - (time.monotonic() - t0)
            if left > 0:
                await asyncio.sleep(left)
            d.ops += 1
        return result, modelled

    async def PutChunk(self, request, context):  # noqa: ANN001, ANN201, N802
        key = _key(request.key)
        _, secs = await self._io(context, len(request.data), lambda: self.d.chunks.put(key, request.data))
        return pb.PutChunkReply(bytes=len(request.data), device_seconds=secs)

    async def GetChunk(self, request, context):  # noqa: ANN001, ANN201, N802
        key = _key(request.key)
        data, secs = await self._io(context, -1, lambda: self.d.chunks.get(key))
        if data is None:
            return pb.GetChunkReply(found=False, device_seconds=secs)
        return pb.GetChunkReply(found=True, data=data, device_seconds=secs)

    async def DeleteChunk(self, request, context):  # noqa: ANN001, ANN201, N802
        key = _key(request.key)
        existed, _ = await self._io(context, 0, lambda: self.d.chunks.delete(key))
        return pb.DeleteChunkReply(existed=existed)

    async def ListChunks(self, request, context):  # noqa: ANN001, ANN201, N802
        rows = self.d.chunks.keys(request.pg)
        return pb.ListChunksReply(chunks=[pb.ChunkInfo(key=pb.ChunkKey(pg=k[0], object=k[1], shard=k[2]), bytes=n)
                                          for k, n in rows])

    async def Stat(self, request, context):  # noqa: ANN001, ANN201, N802
        return self.d.stat()

    async def Corrupt(self, request, context):  # noqa: ANN001, ANN201, N802
        key = _key(request.key)
        n, _ = await self._io(context, 0, lambda: self.d.chunks.corrupt(key, request.offset))
        log.warning("osd.%d: corrupted chunk %s/%r shard %d at byte %d (fault)", self.d.osd, *key,
                    request.offset % max(n, 1))
        return pb.CorruptReply(bytes=n)

    async def SetFault(self, request, context):  # noqa: ANN001, ANN201, N802
        d = self.d
        if request.HasField("slow_factor") and not request.slow_factor >= 1.0:
            await abort(context, CephError(
                "INVALID_ARGUMENT", f"slow factor must be >= 1 (1 = healthy disk), got {request.slow_factor:g}"))
        if request.HasField("slow_factor"):
            d.set_slow(request.slow_factor)
        if request.HasField("stopped") and request.stopped != d.stopped:
            await (d.stop_osd() if request.stopped else d.start_osd())
        return d.stat()
