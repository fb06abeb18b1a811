"""`ChunkStore` over the OSD daemons' gRPC services (`clustertwin.v1.CephOsd`): what the monitor's
Cluster model reads and writes chunk bytes through.

The models call `put`/`delete` chunk by chunk; here they only *start* the call, so the 11 chunks
of an EC write go to their 11 OSDs at once, and `flush()` waits for them and reports which failed.
`prefetch` does the same for a read: every chunk the read will ask for is fetched in parallel, then
`get` is served from what came back. A call to an OSD that does not answer (killed, stopped, slow
beyond the timeout) makes `get` return None (as a missing chunk), and is listed by `flush()` /
`take_failures()` so that the monitor can mark that OSD down.

Used bytes per OSD come from the OSDs' heartbeats (`note_used`), not from a call.

Chunk I/O goes over one long-lived `ChunkStream` per OSD (`OsdLink`), not a unary call per chunk:
operations queued by any thread leave in batches (all that queued while the previous batch was being
sent), results come back by id as the OSD finishes them. A call costs gRPC more than a stream
message does, at both ends (most of the monitor's and the OSDs' CPU per 4 KiB object was calls).
An OSD killed mid-stream ends it: every operation waiting on it fails as UNAVAILABLE, as its unary
calls would, and the next operation opens a new stream. The batch of started operations, the
prefetched chunks and the failures are per thread, so that monitor threads can wait for their own
chunk I/O at the same time.
"""

from __future__ import annotations

import itertools
import queue
import threading
import time
from collections.abc import Iterable, Iterator
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass

import grpc

from clustertwin.v1 import ceph_pb2 as pb
from clustertwin.v1 import ceph_pb2_grpc as pb_grpc
from services.ceph.chunkstore import ChunkKey
from services.ceph.errors import CephError
from services.ceph.msgr import Data, LinkDown, MsgrLink, Reply, forget

MAX_MESSAGE = 64 << 20
BATCH_BYTES = 8 << 20   # a batch stops growing here (chunks are at most 512 KiB of a 4 MiB stripe)
CHANNEL_OPTIONS = [("grpc.max_receive_message_length", MAX_MESSAGE), ("grpc.max_send_message_length", MAX_MESSAGE)]


@dataclass(frozen=True)
class Failure:
    osd: int
    key: ChunkKey
    op: str           # "put", "get", "delete"
    why: str


def _pbkey(key: ChunkKey) -> pb.CephChunkKey:
    return pb.CephChunkKey(pg=key[0], object=key[1], shard=key[2])


class OsdLink:
    """One OSD's ChunkStream: `submit` from any thread, a Future of the operation's result and chunk
    (msgr.Reply). A broken stream fails what waits on it (the future raises `LinkDown`) and the link
    is `dead`."""

    def __init__(self, stub: pb_grpc.CephOsdStub, osd: int) -> None:
        self.osd = osd
        self._out: queue.SimpleQueue[tuple[pb.CephChunkOp, int] | None] = queue.SimpleQueue()   # (op, bytes)
        self._waiting: dict[int, Future[Reply]] = {}
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self.dead = False
        self._call = stub.ChunkStream(self._batches())
        threading.Thread(target=self._read, name=f"osd.{osd}-link", daemon=True).start()

    def submit(self, op: pb.CephChunkOp, data: Data = b"", cork: bool = False) -> Future[Reply]:
        """`data`: a put's chunk. `cork` is MsgrLink's: here the sending thread batches what queues
        anyway."""
        fut: Future[Reply] = Future()
        with self._lock:
            if self.dead:
                fut.set_exception(LinkDown(f"UNAVAILABLE: the stream to osd.{self.osd} ended"))
                return fut
            op.id = next(self._ids)
            self._waiting[op.id] = fut
        if len(data):
            op.data = bytes(data)
        self._out.put((op, len(data)))
        return fut

    def push(self) -> None:
        """(MsgrLink's; nothing waits here.)"""

    def forget(self, fut: Future[Reply]) -> None:
        forget(self._waiting, self._lock, fut)

    def close(self) -> None:
        self._call.cancel()

    def _batches(self) -> Iterator[pb.CephOsdChunkStreamRequest]:
        """gRPC's sending thread takes batches from here: what queued meanwhile, up to BATCH_BYTES."""
        carry: tuple[pb.CephChunkOp, int] | None = None
        ending = False
        while not ending:
            item = carry if carry is not None else self._out.get()
            carry = None
            if item is None:
                return
            ops, size = [item[0]], item[1]
            while size < BATCH_BYTES:
                try:
                    nxt = self._out.get_nowait()
                except queue.Empty:
                    break
                if nxt is None:
                    ending = True
                    break
                if size + nxt[1] > BATCH_BYTES:
                    carry = nxt
                    break
                ops.append(nxt[0])
                size += nxt[1]
            yield pb.CephOsdChunkStreamRequest(ops=ops)

    def _read(self) -> None:
        why = "the stream ended"
        try:
            for reply in self._call:
                with self._lock:
                    futs = [(self._waiting.pop(r.id, None), r) for r in reply.results]
                for fut, r in futs:
                    if fut is not None:
                        fut.set_result((r, r.data))
        except grpc.RpcError as e:
            why = f"{e.code().name}: {e.details()}"
        except Exception as e:  # noqa: BLE001 - whatever ended the stream, what waits on it must hear
            why = f"UNAVAILABLE: {e!r}"
        with self._lock:
            self.dead = True
            waiting, self._waiting = self._waiting, {}
        for fut in waiting.values():
            fut.set_exception(LinkDown(why))
        self._out.put(None)   # ends _batches, so gRPC's sending side of the stream closes


class OpFailed(Exception):
    """A chunk operation failed: the OSD's error, its stream gone, or no answer in time (the text says)."""


@dataclass(frozen=True)
class Started:
    """A chunk operation sent, and by when its result must come."""

    osd: int
    key: ChunkKey
    op: str
    fut: Future[Reply]
    link: OsdLink | MsgrLink
    deadline: float


class RemoteChunkStore:
    """`addresses`: each OSD's gRPC service; `msgr`: the messenger address of those that listen on one
    (chunk I/O then goes over it, msgr.py), the others' over their ChunkStream."""

    def __init__(self, addresses: dict[int, str], timeout: float = 10.0, msgr: dict[int, str] | None = None) -> None:
        self.addresses = dict(addresses)
        self.msgr = dict(msgr or {})
        self.timeout = timeout
        self._stubs: dict[int, pb_grpc.CephOsdStub] = {}
        self._channels: list[grpc.Channel] = []
        self._links: dict[int, OsdLink | MsgrLink] = {}
        self._local = threading.local()
        self._stub_lock = threading.Lock()
        self._used: dict[int, int] = {}

    # -- per-thread batch state ----------------------------------------------------------------

    def _st(self) -> threading.local:
        st = self._local
        if not hasattr(st, "pending"):
            st.pending, st.cache, st.failures, st.posted = [], {}, [], set()
        return st

    @property
    def _pending(self) -> list[Started]:
        return self._st().pending

    @_pending.setter
    def _pending(self, v: list[Started]) -> None:
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

    # -- chunk operations on the OSDs' streams ------------------------------------------------

    def link(self, osd: int) -> OsdLink | MsgrLink:
        """The OSD's connection (messenger) or stream, opened again if the last one ended."""
        ln = self._links.get(osd)
        if ln is not None and not ln.dead:
            return ln
        stub = None if osd in self.msgr else self.stub(osd)
        with self._stub_lock:
            ln = self._links.get(osd)
            if ln is None or ln.dead:
                ln = self._links[osd] = (OsdLink(stub, osd) if stub is not None
                                         else MsgrLink(self.msgr[osd], osd, self.timeout))
        return ln

    def _start(self, osd: int, op: str, key: ChunkKey, data: Data = b"", cork: bool = False,
               timeout: float | None = None) -> Started:
        """Send a chunk operation; a `cork`ed one (a put or delete) leaves with the others at `flush`."""
        ln = self.link(osd)
        fut = ln.submit(pb.CephChunkOp(op=op, key=_pbkey(key)), data, cork)
        return Started(osd, key, op, fut, ln, time.monotonic() + (self.timeout if timeout is None else timeout))

    @staticmethod
    def _wait(s: Started) -> Data | None:
        """The operation's chunk (a get's; b"" for others), None where a get found none; a failure (the
        OSD's error, the stream ended, no answer within the timeout) raises OpFailed saying why."""
        s.link.push()
        try:
            r, data = s.fut.result(timeout=max(0.0, s.deadline - time.monotonic()))
        except FutureTimeout:
            s.link.forget(s.fut)
            raise OpFailed(f"DEADLINE_EXCEEDED: osd.{s.osd} did not answer in time") from None
        except LinkDown as e:
            raise OpFailed(str(e)) from None
        if r.code:
            raise OpFailed(f"{r.code}: {r.message}")
        return data if r.found else None

    # -- the ChunkStore protocol ---------------------------------------------------------------

    def put(self, osd: int, key: ChunkKey, data: Data) -> None:
        self._pending.append(self._start(osd, "put", key, data, cork=True))
        self._cache.pop((osd, key), None)

    def delete(self, osd: int, key: ChunkKey) -> None:
        self._pending.append(self._start(osd, "delete", key, cork=True))
        self._cache.pop((osd, key), None)

    def post_delete(self, osd: int, key: ChunkKey) -> None:
        """A delete sent with the next `push_posted` and not waited for (over the messenger only)."""
        ln = self.link(osd)
        if isinstance(ln, MsgrLink):
            ln.post(pb.CephChunkOp(op="delete", key=_pbkey(key)))
            self._st().posted.add(ln)

    def push_posted(self) -> None:
        st = self._st()
        for ln in st.posted:
            ln.push()
        st.posted.clear()

    def get(self, osd: int, key: ChunkKey) -> bytes | None:
        if (osd, key) in self._cache:
            return self._cache.pop((osd, key))
        self._settle_writes_to(osd, key)
        try:
            return self._wait(self._start(osd, "get", key))   # type: ignore[return-value]
        except OpFailed as e:
            self._failures.append(Failure(osd, key, "get", str(e)))
            return None

    def used_bytes(self, osd: int) -> int:
        return self._used.get(osd, 0)

    # -- batching ------------------------------------------------------------------------------

    def _settle_writes_to(self, osd: int, key: ChunkKey) -> None:
        if any(s.osd == osd and s.key == key for s in self._pending):
            self.flush(keep=True)

    def prefetch(self, pairs: Iterable[tuple[int, ChunkKey]]) -> None:
        """Fetch these chunks in parallel; the following `get`s of them are served from memory."""
        self.flush(keep=True)
        for s in [self._start(osd, "get", key) for osd, key in pairs]:
            try:
                self._cache[(s.osd, s.key)] = self._wait(s)   # type: ignore[assignment]
            except OpFailed as e:
                self._failures.append(Failure(s.osd, s.key, "get", str(e)))
                self._cache[(s.osd, s.key)] = None

    def fetch(self, pairs: list[tuple[int, ChunkKey]], timeout: float | None = None) -> list[Data | None | Exception]:
        """Get these chunks in parallel, touching no batch state: the chunk (bytes, or a view of the
        messenger's buffer), None (not there) or the error."""
        out: list[Data | None | Exception] = []
        for s in [self._start(osd, "get", key, timeout=timeout) for osd, key in pairs]:
            try:
                out.append(self._wait(s))
            except OpFailed as e:
                out.append(e)
        return out

    def flush(self, keep: bool = False) -> list[Failure]:
        """Wait for every started put/delete; returns (and forgets, unless `keep`) the failures so far."""
        pending, self._pending = self._pending, []
        for ln in {id(s.link): s.link for s in pending}.values():
            ln.push()   # every OSD's batch on its way before waiting for the first
        for s in pending:
            try:
                self._wait(s)
            except OpFailed as e:
                self._failures.append(Failure(s.osd, s.key, s.op, str(e)))
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
        for ln in list(self._links.values()):
            ln.close()
        for ch in self._channels:
            ch.close()
