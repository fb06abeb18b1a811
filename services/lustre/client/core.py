"""The client side of the Lustre protocols (what llite + LOV + OSC do): metadata calls to the MDS,
striped object I/O to the OSSs, per the file's RAID0 layout, with the per-stripe RPCs of one
request in flight together.

Calls go to the MDS and the OSSs as framed calls (emulator/frame_rpc.py, on the MDS's gRPC port + 1
and an OSS's + 2): the same RPCs and messages as their gRPC services, without HTTP/2, whose cost per
call was as much as the MDS's work for a create. The LDLM callback stream and the concurrent
per-stripe calls of one request (`future`) stay on gRPC; bulk reads have their own port (bulk.py).

Failover: each target has a list of servers (the MDS pair; an OSS and its partner). A call that
finds its server unreachable (UNAVAILABLE) tries the next one and keeps cycling until
`failover_timeout`, as a Lustre client blocks in recovery; after that it fails with EIO (a target
without a partner therefore returns EIO once its server stays down for that long).
"""

from __future__ import annotations

import errno
import itertools
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import grpc

from clustertwin.v1 import lustre_pb2 as pb
from clustertwin.v1 import lustre_pb2_grpc as pb_grpc
from emulator import paging
from emulator.errors import BadInput
from emulator.frame_rpc import FramedChannel, framed_address
from emulator.manifest import Manifest
from services.lustre.bulk import BulkClient
from services.lustre.errors import errno_of
from services.lustre.layout import Layout
from services.lustre.manifest import LustreSection
from services.lustre.wire import CHANNEL_OPTIONS, IO_UNIT, MDS_FRAMED_OFFSET, OSS_FRAMED_OFFSET

RETRY_CODES = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)
READ_THREADS = int(os.environ.get("TWIN_LUSTRE_READ_THREADS", "8"))   # bulk reads in flight per client
READDIR_PAGE = 1000   # entries per Readdir/Listxattr page: the most emulator/paging.py gives, fewest round trips


class ClientError(OSError):
    """A refused or failed call, carrying the POSIX errno the MDS or OSS gave."""


def _raise(e: grpc.RpcError) -> None:
    code = errno_of(e)
    raise ClientError(code, e.details() if hasattr(e, "details") else str(e)) from None


class Gate:
    """At most limit() callers inside at once (Lustre's max_rpcs_in_flight), the limit read at each entry
    so that `lctl set_param` changes it live."""

    def __init__(self, limit: Callable[[], int]) -> None:
        self.limit = limit
        self.inside = 0
        self.cv = threading.Condition()

    def __enter__(self) -> None:
        with self.cv:
            self.cv.wait_for(lambda: self.inside < self.limit())
            self.inside += 1

    def __exit__(self, *exc: object) -> None:
        with self.cv:
            self.inside -= 1
            self.cv.notify()


class Target:
    """One service reachable at one of several addresses (failover), one channel per address. With
    `framed_offset`, `call`s go as framed calls to each address's port + offset (emulator/frame_rpc.py);
    streams and futures stay on gRPC."""

    def __init__(self, addresses: list[str], stub_cls: type, failover_timeout: float,
                 framed_offset: int | None = None) -> None:
        self.addresses = addresses
        self.channels = [grpc.insecure_channel(a, options=CHANNEL_OPTIONS) for a in addresses]
        self.stubs = [stub_cls(c) for c in self.channels]
        self.framed = [FramedChannel(framed_address(a, framed_offset)) for a in addresses] \
            if framed_offset is not None else []
        self.callers = [stub_cls(c) for c in self.framed] or self.stubs
        self.current = 0
        self.failover_timeout = failover_timeout

    def call(self, method: str, request: Any, timeout: float = 60.0, metadata: Any = None) -> Any:
        deadline = time.monotonic() + self.failover_timeout
        tries = 0
        while True:
            i = self.current
            try:
                return getattr(self.callers[i], method)(request, timeout=timeout, metadata=metadata)
            except grpc.RpcError as e:
                retry = e.code() in RETRY_CODES and (errno_of(e) in (errno.EIO, errno.EAGAIN, errno.ENODEV))
                if not retry:
                    _raise(e)
                tries += 1
                if time.monotonic() > deadline:
                    raise ClientError(errno.EIO, f"{method}: no server of {self.addresses} answers: "
                                      f"{e.details()}") from None
                if len(self.stubs) > 1:
                    self.current = (i + 1) % len(self.stubs)
                time.sleep(min(0.05 * tries, 0.5) if tries >= len(self.stubs) else 0)

    def future(self, method: str, request: Any, timeout: float = 60.0) -> Any:
        return getattr(self.stubs[self.current], method).future(request, timeout=timeout)

    def close(self) -> None:
        for c in [*self.channels, *self.framed]:
            c.close()


class LustreClient:
    """Talks to one filesystem's MDS and OSSs. Thread-safe: gRPC channels are, a framed channel keeps a
    connection per thread, and it keeps no per-file state (the FUSE layer does)."""

    def __init__(self, mds: list[str], ost_servers: dict[int, list[str]], fsname: str = "lustre",
                 failover_timeout: float = 30.0) -> None:
        self.fsname = fsname
        self.failover_timeout = failover_timeout
        self.mds = Target(mds, pb_grpc.LustreMdsStub, failover_timeout, framed_offset=MDS_FRAMED_OFFSET)
        by_addrs: dict[tuple[str, ...], Target] = {}
        self.osts: dict[int, Target] = {}
        for idx, addrs in ost_servers.items():
            key = tuple(addrs)
            if key not in by_addrs:
                by_addrs[key] = Target(list(addrs), pb_grpc.LustreOssStub, failover_timeout,
                                       framed_offset=OSS_FRAMED_OFFSET)
            self.osts[int(idx)] = by_addrs[key]
        self.cred = pb.LustreCred()
        self._lock = threading.Lock()
        self.use_bulk = os.environ.get("TWIN_LUSTRE_BULK", "1") != "0"
        self.bulk: dict[str, BulkClient] = {}
        self._pool: ThreadPoolExecutor | None = None
        self.mdc_gate: Gate | None = None   # mdc max_rpcs_in_flight, set by the mount (client/fuse.py)
        self.md_metadata: tuple | None = None   # the mount's client uuid, for the MDS's locks (mds/ldlm.py)

    @classmethod
    def from_manifest(cls, manifest: Manifest, failover_timeout: float = 30.0,
                      plane: str = "storage") -> LustreClient:
        """A client of the twin's filesystem. plane="storage": the servers' storage-network addresses, what
        a client node uses (under `--network netns` reachable only from a host on the storage segment);
        plane="admin": their management (OOB) addresses, what `twin` uses from the operator port."""
        lu = LustreSection.of(manifest)
        if lu is None:
            raise BadInput("this twin runs no Lustre: start it with `twin up TOPOLOGY --lustre`")
        return cls.from_section(lu, failover_timeout, plane)

    @classmethod
    def from_section(cls, lu: LustreSection, failover_timeout: float = 30.0, plane: str = "storage") -> LustreClient:
        if plane == "admin":
            servers = {o.index: o.admin or o.servers for o in lu.osts}
            return cls(lu.mds_admin or lu.mds, servers, lu.fsname, failover_timeout)
        return cls(lu.mds, {o.index: o.servers for o in lu.osts}, lu.fsname, failover_timeout)

    def close(self) -> None:
        self.mds.close()
        for t in set(self.osts.values()):
            t.close()
        for b in self.bulk.values():
            b.close()
        if self._pool is not None:
            self._pool.shutdown(wait=False)

    # ---- bulk reads (services/lustre/bulk.py) --------------------------------------------------
    def read_object(self, ost: int, req: pb.LustreOssReadRequest) -> bytes:
        """One object read: by bulk transfer from the OSS serving it now, else (any failure) by the
        RPC, which blocks through a failover or ends in EIO."""
        t = self.osts[ost]
        if self.use_bulk:
            addr = t.addresses[t.current]
            b = self.bulk.get(addr)
            if b is None:
                with self._lock:
                    b = self.bulk.setdefault(addr, BulkClient(addr))
            o = req.obj
            try:
                return b.read(o.ost, o.seq, o.objid, req.offset, req.length)
            except OSError:
                pass
        return t.call("Read", req).data

    def read_future(self, ost: int, req: pb.LustreOssReadRequest) -> Future:
        if self._pool is None:
            with self._lock:
                if self._pool is None:
                    self._pool = ThreadPoolExecutor(READ_THREADS, thread_name_prefix="lustre-read")
        return self._pool.submit(self.read_object, ost, req)

    # ---- metadata ----------------------------------------------------------------------------
    def mdcall(self, method: str, request: Any) -> Any:
        if self.mdc_gate is None:
            return self.mds.call(method, request, metadata=self.md_metadata)
        with self.mdc_gate:
            return self.mds.call(method, request, metadata=self.md_metadata)

    def getattr(self, path: str, cred: pb.LustreCred | None = None) -> pb.LustreAttr:
        return self.mdcall("Getattr", pb.LustreMdsGetattrRequest(path=path, cred=cred or self.cred)).attr

    def readdir(self, path: str, cred: pb.LustreCred | None = None) -> list[pb.LustreDirEntry]:
        """Every entry, page after page (in cookie order, as Lustre's readdir)."""
        request = pb.LustreMdsReaddirRequest(path=path, cred=cred or self.cred, page_size=READDIR_PAGE)
        return paging.every_page(lambda r: self.mdcall("Readdir", r), request, "entries")

    def listxattr(self, path: str, cred: pb.LustreCred | None = None) -> list[str]:
        request = pb.LustreMdsListxattrRequest(path=path, cred=cred or self.cred, page_size=READDIR_PAGE)
        return paging.every_page(lambda r: self.mdcall("Listxattr", r), request, "names")

    def create(self, path: str, mode: int = 0o644, spec: pb.LustreStripeSpec | None = None,
               cred: pb.LustreCred | None = None, exclusive: bool = False) -> pb.LustreAttr:
        req = pb.LustreMdsCreateRequest(path=path, mode=mode, cred=cred or self.cred, exclusive=exclusive, spec=spec)
        return self.mdcall("Create", req).attr

    def mkdir(self, path: str, mode: int = 0o755, cred: pb.LustreCred | None = None) -> pb.LustreAttr:
        return self.mdcall("Mkdir", pb.LustreMdsMkdirRequest(path=path, mode=mode, cred=cred or self.cred)).attr

    def unlink(self, path: str, cred: pb.LustreCred | None = None) -> pb.LustreMdsUnlinkResponse:
        return self.mdcall("Unlink", pb.LustreMdsUnlinkRequest(path=path, cred=cred or self.cred))

    def rmdir(self, path: str, cred: pb.LustreCred | None = None) -> None:
        self.mdcall("Rmdir", pb.LustreMdsRmdirRequest(path=path, cred=cred or self.cred))

    def rename(self, src: str, dst: str, cred: pb.LustreCred | None = None) -> None:
        self.mdcall("Rename", pb.LustreMdsRenameRequest(src=src, dst=dst, cred=cred or self.cred))

    def setattr(self, path: str, cred: pb.LustreCred | None = None, **kw: Any) -> pb.LustreAttr:
        return self.mdcall("Setattr", pb.LustreMdsSetattrRequest(path=path, cred=cred or self.cred, **kw)).attr

    def setstripe(self, path: str, count: int = 0, size: int = 0, index: int = -1,
                  cred: pb.LustreCred | None = None) -> pb.LustreAttr:
        return self.mdcall("Setstripe", pb.LustreMdsSetstripeRequest(path=path, spec=pb.LustreStripeSpec(
            count=count, size=size, index=index), cred=cred or self.cred)).attr

    def statfs(self) -> pb.LustreMdsStatfsResponse:
        return self.mdcall("Statfs", pb.LustreMdsStatfsRequest())

    # ---- objects -----------------------------------------------------------------------------
    def _oref(self, layout: Layout, slot: int) -> pb.LustreObjectRef:
        o = layout.objects[slot]
        return pb.LustreObjectRef(ost=o.ost, objid=o.objid, seq=o.seq)

    def _gather(self, calls: list[tuple[int, str, Any]]) -> list[Any]:
        """Run (ost, method, request) calls concurrently; on a retryable failure fall back to the
        blocking, failing-over path for that call."""
        if len(calls) == 1:
            ost, method, req = calls[0]
            return [self.osts[ost].call(method, req)]
        futs = [(ost, method, req, self.osts[ost].future(method, req)) for ost, method, req in calls]
        out = []
        for ost, method, req, f in futs:
            try:
                out.append(f.result())
            except grpc.RpcError as e:
                if e.code() in RETRY_CODES:
                    out.append(self.osts[ost].call(method, req))
                else:
                    _raise(e)
        return out

    def read(self, layout: Layout, offset: int, length: int, file_size: int) -> bytes:
        """Bytes [offset, offset+length) of a file of `file_size` bytes (short at its end)."""
        length = max(0, min(length, file_size - offset))
        if length == 0:
            return b""
        exts = layout.extents(offset, length)
        replies = self._gather([(e.ost, "Read", pb.LustreOssReadRequest(
            obj=self._oref(layout, e.slot), offset=e.object_offset, length=e.length)) for e in exts])
        if len(exts) == 1:
            data = replies[0].data
            return data if len(data) == length else data + bytes(length - len(data))
        parts = []
        for e, r in zip(exts, replies, strict=True):
            parts.append(r.data)
            if len(r.data) < e.length:   # a hole, or the sparse end of an object
                parts.append(bytes(e.length - len(r.data)))
        return b"".join(parts)

    def write(self, layout: Layout, offset: int, data: bytes | memoryview, sync: bool = False) -> int:
        view = memoryview(data)
        whole = data if isinstance(data, bytes) else bytes(view)
        exts = layout.extents(offset, len(view))
        calls = []
        for e in exts:
            start = e.file_offset - offset
            chunk = view[start:start + e.length]
            calls.append((e.ost, "Write", pb.LustreOssWriteRequest(
                obj=self._oref(layout, e.slot), offset=e.object_offset,
                data=whole if len(exts) == 1 else bytes(chunk), sync=sync)))
        self._gather(calls)
        return len(view)

    def punch(self, layout: Layout, size: int) -> None:
        """Truncate every object to what it holds of a `size`-byte file."""
        self._gather([(o.ost, "Punch", pb.LustreOssPunchRequest(obj=self._oref(layout, slot),
                                                                size=layout.object_size(slot, size)))
                      for slot, o in enumerate(layout.objects)])

    def sync(self, layout: Layout) -> None:
        self._gather([(o.ost, "Sync", pb.LustreOssSyncRequest(obj=self._oref(layout, slot)))
                      for slot, o in enumerate(layout.objects)])

    def oss_admin(self, ost: int, **kw: Any) -> pb.LustreOssSetOstStateResponse:
        return self.osts[ost].call("SetOstState", pb.LustreOssSetOstStateRequest(ost=ost, **kw))


class ReadAhead:
    """Sequential read-ahead of one open file, as llite's: once reads are sequential, the next
    `window` units (two full stripe rows, at most llite max_read_ahead_mb) are fetched ahead from all the OSTs of the
    layout at once (gRPC futures, no thread each), so a streaming reader keeps every OST busy and
    each FUSE read (1 MiB) is a unit already in memory. A unit is 1 MiB (or the stripe size when
    smaller, or a divisor of it): 1 MiB messages move fastest through gRPC Python, 4 MiB ones
    several times slower. Random reads bypass it; a write to the file drops it (`invalidate`)."""

    MAX_BYTES = 64 * 1024 * 1024

    def __init__(self, client: LustreClient, layout: Layout, max_bytes: int = MAX_BYTES) -> None:
        self.c = client
        self.layout = layout
        S = layout.stripe_size
        self.unit = S if S <= IO_UNIT else next(u for u in range(IO_UNIT, 0, -65536) if S % u == 0)
        row = S * layout.stripe_count
        self.max_bytes = max_bytes
        self.window = max(2, min(2 * row, max_bytes) // self.unit)
        self.chunks: dict[int, Any] = {}     # unit index -> (ost, request, grpc future), or bytes once read
        self.next_offset = -1
        self.streak = 0
        self.mu = threading.Lock()

    def _fetch(self, k: int, file_size: int) -> None:
        start = k * self.unit
        if k in self.chunks or start >= file_size:
            return
        lay = self.layout
        stripe, within = divmod(start, lay.stripe_size)
        row, slot = divmod(stripe, lay.stripe_count)
        o = lay.objects[slot]
        req = pb.LustreOssReadRequest(obj=pb.LustreObjectRef(ost=o.ost, objid=o.objid, seq=o.seq),
                                   offset=row * lay.stripe_size + within, length=min(self.unit, file_size - start))
        self.chunks[k] = (o.ost, req, self.c.read_future(o.ost, req))

    def _data(self, k: int) -> bytes:
        item = self.chunks.get(k)
        if isinstance(item, bytes):
            return item
        if item is None:    # dropped meanwhile (invalidate): read it now
            raise KeyError(k)
        ost, req, fut = item
        try:
            data = fut.result()
        except ClientError:
            with self.mu:
                self.chunks.pop(k, None)
            raise
        if len(data) < req.length:   # a hole or the sparse end of an object
            data += bytes(req.length - len(data))
        with self.mu:
            if k in self.chunks:
                self.chunks[k] = data
        return data

    def read(self, offset: int, length: int, file_size: int) -> bytes | None:
        """The bytes, or None when this read is not sequential (the caller reads it directly)."""
        length = max(0, min(length, file_size - offset))
        if length == 0:
            return b""
        first, last = offset // self.unit, (offset + length - 1) // self.unit
        with self.mu:
            sequential = offset == self.next_offset or first in self.chunks
            self.streak = self.streak + 1 if sequential else 0
            self.next_offset = offset + length
            if not sequential and offset != 0:
                return None
            for k in [k for k in self.chunks if k < first - self.window // 4]:
                del self.chunks[k]   # behind the reader (a little slack: FUSE reads arrive out of order)
            for k in range(first, last + 1 + self.window):
                self._fetch(k, file_size)
        parts = []
        try:
            for k in range(first, last + 1):
                data = self._data(k)
                a = max(offset, k * self.unit) - k * self.unit
                b = min(offset + length, (k + 1) * self.unit) - k * self.unit
                parts.append(data if a == 0 and b == len(data) else data[a:b])
        except KeyError:
            return None
        return parts[0] if len(parts) == 1 else b"".join(parts)

    def invalidate(self) -> None:
        with self.mu:
            self.chunks.clear()
            self.next_offset = -1
            self.streak = 0


def retrying(fn: Callable[[], Any], attempts: int = 3) -> Any:  # pragma: no cover - helper for tools
    for i in itertools.count():
        try:
            return fn()
        except ClientError:
            if i + 1 >= attempts:
                raise
            time.sleep(0.1)
