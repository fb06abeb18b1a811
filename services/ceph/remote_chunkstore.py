"""`ChunkStore` over the OSD daemons' gRPC services (`clustertwin.v1.CephOsd`): what the monitor's
Cluster model reads and writes chunk bytes through.

The models call `put`/`delete` chunk by chunk; here they only *start* the call, so the 11 chunks
of an EC write go to their 11 OSDs at once, and `flush()` waits for them and reports which failed.
`prefetch` does the same for a read: every chunk the read will ask for is fetched in parallel, then
`get` is served from what came back. A call to an OSD that does not answer (killed, stopped, slow
beyond the timeout) makes `get` return None (as a missing chunk), and is listed by `flush()` /
`take_failures()` so that the monitor can mark that OSD down.

Used bytes per OSD come from the OSDs' heartbeats (`note_used`), not from a call.

The parallel calls are blocking calls on a thread pool, not `stub.X.future()`: a sync-gRPC future
starts a channel-spin thread per call (~1 ms each, 11 per EC write), which was most of the monitor's
time per object. The batch of started calls, the prefetched chunks and the failures are per
thread, so that monitor threads can wait for their own chunk I/O at the same time.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

import grpc

from clustertwin.v1 import ceph_pb2 as pb
from clustertwin.v1 import ceph_pb2_grpc as pb_grpc
from services.ceph.chunkstore import ChunkKey
from services.ceph.errors import CephError

MAX_MESSAGE = 64 << 20
CHANNEL_OPTIONS = [("grpc.max_receive_message_length", MAX_MESSAGE), ("grpc.max_send_message_length", MAX_MESSAGE)]


@dataclass(frozen=True)
class Failure:
    osd: int
    key: ChunkKey
    op: str           # "put", "get", "delete"
    why: str


def _pbkey(key: ChunkKey) -> pb.CephChunkKey:
    return pb.CephChunkKey(pg=key[0], object=key[1], shard=key[2])


class RemoteChunkStore:
    def __init__(self, addresses: dict[int, str], timeout: float = 10.0) -> None:
        self.addresses = dict(addresses)
        self.timeout = timeout
        self._stubs: dict[int, pb_grpc.CephOsdStub] = {}
        self._channels: list[grpc.Channel] = []
        self._pool = ThreadPoolExecutor(max_workers=64, thread_name_prefix="chunk-io")
        self._local = threading.local()
        self._stub_lock = threading.Lock()
        self._used: dict[int, int] = {}

    # -- per-thread batch state ----------------------------------------------------------------

    def _st(self) -> threading.local:
        st = self._local
        if not hasattr(st, "pending"):
            st.pending, st.cache, st.failures = [], {}, []
        return st

    @property
    def _pending(self) -> list[tuple[int, ChunkKey, str, Future]]:
        return self._st().pending

    @_pending.setter
    def _pending(self, v: list[tuple[int, ChunkKey, str, Future]]) -> None:
        self._st().pending = v

    @property
    def _cache(self) -> dict[tuple[int, ChunkKey], bytes | None]:
        return self._st().cache

    @property
    def _failures(self) -> list[Failure]:
        return self._st().failures

    @_failures.setter
    def _failures(self, v: list[Failure]) -> None:
        self._st().failures = v

    def stub(self, osd: int) -> pb_grpc.CephOsdStub:
        s = self._stubs.get(osd)
        if s is not None:
            return s
        with self._stub_lock:
            s = self._stubs.get(osd)
            if s is None:
                try:
                    address = self.addresses[osd]
                except KeyError:
                    raise CephError("NOT_FOUND", f"osd.{osd} has no daemon address") from None
                ch = grpc.insecure_channel(address, options=CHANNEL_OPTIONS)
                self._channels.append(ch)
                s = self._stubs[osd] = pb_grpc.CephOsdStub(ch)
        return s

    # -- the ChunkStore protocol ---------------------------------------------------------------

    def put(self, osd: int, key: ChunkKey, data: bytes) -> None:
        fut = self._pool.submit(self.stub(osd).PutChunk, pb.CephOsdPutChunkRequest(key=_pbkey(key), data=data),
                                timeout=self.timeout)
        self._pending.append((osd, key, "put", fut))
        self._cache.pop((osd, key), None)

    def delete(self, osd: int, key: ChunkKey) -> None:
        fut = self._pool.submit(self.stub(osd).DeleteChunk, pb.CephOsdDeleteChunkRequest(key=_pbkey(key)),
                                timeout=self.timeout)
        self._pending.append((osd, key, "delete", fut))
        self._cache.pop((osd, key), None)

    def get(self, osd: int, key: ChunkKey) -> bytes | None:
        if (osd, key) in self._cache:
            return self._cache.pop((osd, key))
        self._settle_writes_to(osd, key)
        try:
            reply = self.stub(osd).GetChunk(pb.CephOsdGetChunkRequest(key=_pbkey(key)), timeout=self.timeout)
        except grpc.RpcError as e:
            self._failures.append(Failure(osd, key, "get", f"{e.code().name}: {e.details()}"))
            return None
        return reply.data if reply.found else None

    def used_bytes(self, osd: int) -> int:
        return self._used.get(osd, 0)

    # -- batching ------------------------------------------------------------------------------

    def _settle_writes_to(self, osd: int, key: ChunkKey) -> None:
        if any(o == osd and k == key for o, k, _, _ in self._pending):
            self.flush(keep=True)

    def prefetch(self, pairs: Iterable[tuple[int, ChunkKey]]) -> None:
        """Fetch these chunks in parallel; the following `get`s of them are served from memory."""
        self.flush(keep=True)
        futs = [(osd, key, self._pool.submit(self.stub(osd).GetChunk, pb.CephOsdGetChunkRequest(key=_pbkey(key)),
                                             timeout=self.timeout))
                for osd, key in pairs]
        for osd, key, fut in futs:
            try:
                reply = fut.result()
            except grpc.RpcError as e:
                self._failures.append(Failure(osd, key, "get", f"{e.code().name}: {e.details()}"))
                self._cache[(osd, key)] = None
                continue
            self._cache[(osd, key)] = reply.data if reply.found else None

    def fetch(self, pairs: list[tuple[int, ChunkKey]]) -> list[bytes | None | Exception]:
        """Get these chunks in parallel, touching no batch state: bytes, None (not there) or the error."""
        futs = [self._pool.submit(self.stub(osd).GetChunk, pb.CephOsdGetChunkRequest(key=_pbkey(key)),
                                  timeout=self.timeout) for osd, key in pairs]
        out: list[bytes | None | Exception] = []
        for fut in futs:
            try:
                reply = fut.result()
            except grpc.RpcError as e:
                out.append(e)
                continue
            out.append(reply.data if reply.found else None)
        return out

    def flush(self, keep: bool = False) -> list[Failure]:
        """Wait for every started put/delete; returns (and forgets, unless `keep`) the failures so far."""
        pending, self._pending = self._pending, []
        for osd, key, op, fut in pending:
            try:
                fut.result()
            except grpc.RpcError as e:
                self._failures.append(Failure(osd, key, op, f"{e.code().name}: {e.details()}"))
        if keep:
            return list(self._failures)
        return self.take_failures()

    def take_failures(self) -> list[Failure]:
        out, self._failures = self._failures, []
        self._cache.clear()
        return out

    # -- beyond the protocol -------------------------------------------------------------------

    def note_used(self, osd: int, used: int) -> None:
        self._used[osd] = used

    def corrupt(self, osd: int, key: ChunkKey, offset: int = 0) -> None:
        try:
            self.stub(osd).Corrupt(pb.CephOsdCorruptRequest(key=_pbkey(key), offset=offset), timeout=self.timeout)
        except grpc.RpcError as e:
            raise CephError.from_rpc(e, f"osd.{osd}") from None

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
        for ch in self._channels:
            ch.close()
