"""Write-behind, as Lustre's OSC does it: a write() lands in the client's memory (the kernel's page
cache, which sends it here in pieces of up to 1 MiB at writeback, fsync and close; client/fuse.py) and
returns; the dirty data goes to the OSTs in RPC-sized pieces (`max_pages_per_rpc`
pages of one object), up to `max_rpcs_in_flight` RPCs in flight per OST, as soon as a stripe row's
worth has gathered, and all of it on fsync, which returns once every RPC is acknowledged. Close sends
the rest too, except for a file this client created and holds the write lock of: what is left of it
(less than one RPC) stays here until another client wants the file, an fsync, an unmount or the
kernel's dirty expiry (client/fuse.py: `write_back`), as Lustre's close (ll_flush) sends no data.
A writer whose client holds more than `max_dirty_mb` per OST waits until its data has gone out.
`max_dirty_mb=0` turns it off: each write() is sent before it returns.

Loss window (as Lustre's): data written but not yet sent is lost if the client dies before it is
sent: before fsync; for a file created here, up to vm.dirty_expire_centisecs (30 s by default) after
close; otherwise before close. An OSS failover loses none of it: what the client holds it sends to
the partner, and once an RPC is acknowledged the data is on the OST (the OSS wrote it to the
target, which the partner serves). Real Lustre also keeps acknowledged but uncommitted pages for
replay after a failover; the twin's OSS has written them to the shared target before it answers, so
there is nothing to replay.

An RPC that fails (ENOSPC, EIO after the failover timeout) is reported by the next write, fsync or
close of the file, as Lustre reports asynchronous write errors."""

from __future__ import annotations

import bisect
import errno
import threading
from concurrent.futures import Future, ThreadPoolExecutor

from clustertwin.v1 import lustre_pb2 as pb
from services.lustre.client.core import ClientError, LustreClient
from services.lustre.client.tunables import Tunables
from services.lustre.layout import Layout

MiB = 1024 * 1024


class Osc:
    """What the client's OSCs share: the tunables, dirty bytes per OST, RPCs in flight per OST, and the
    threads that send them."""

    def __init__(self, client: LustreClient, tunables: Tunables) -> None:
        self.c = client
        self.t = tunables
        self.cv = threading.Condition()
        self.dirty: dict[int, int] = {}       # OST -> bytes written and not yet acknowledged
        self.inflight: dict[int, int] = {}    # OST -> RPCs in flight
        self.pool = ThreadPoolExecutor(64, thread_name_prefix="lustre-osc")

    def reserve(self, ost: int, n: int) -> None:
        with self.cv:
            self.dirty[ost] = self.dirty.get(ost, 0) + n

    def wait_room(self, ost: int) -> None:
        with self.cv:
            self.cv.wait_for(lambda: self.dirty.get(ost, 0) <= self.t.max_dirty_mb * MiB)

    def send(self, ost: int, req: pb.LustreOssWriteRequest, dirty: int) -> Future:
        """One write RPC, sent when `ost` has fewer than max_rpcs_in_flight; its dirty bytes released
        once it is answered."""
        def run() -> None:
            with self.cv:
                self.cv.wait_for(lambda: self.inflight.get(ost, 0) < self.t.osc_max_rpcs_in_flight)
                self.inflight[ost] = self.inflight.get(ost, 0) + 1
            try:
                self.c.osts[ost].call("Write", req)
            finally:
                with self.cv:
                    self.inflight[ost] -= 1
                    self.dirty[ost] -= dirty
                    self.cv.notify_all()
        return self.pool.submit(run)

    def close(self) -> None:
        self.pool.shutdown(wait=True)


class WriteBack:
    """The dirty data of one open file: non-overlapping runs (offset, bytes), sorted by offset, and the
    RPCs sent from them and not yet waited for."""

    def __init__(self, osc: Osc, layout: Layout) -> None:
        self.osc = osc
        self.layout = layout
        self.mu = threading.Lock()
        self.starts: list[int] = []
        self.runs: list[bytearray] = []
        self.buffered = 0   # bytes in runs (overwrites counted again: an upper bound)
        self.pending: list[tuple[int, int, list[Future]]] = []   # (from, to, RPCs) sent, not yet answered
        self.failed: list[Future] = []   # RPCs that failed, not yet reported

    @property
    def row(self) -> int:
        """Bytes that make one full RPC to each OST of the layout: gathered, they go out."""
        lay = self.layout
        return max(self.osc.t.rpc_bytes, lay.stripe_size) * lay.stripe_count

    def write(self, offset: int, data: bytes) -> None:
        """Buffer `data` at `offset` (or, with max_dirty_mb=0, send it and wait)."""
        limit = self.osc.t.max_dirty_mb * MiB
        if limit == 0:
            self.flush()
            self._wait(self._send(offset, data))
            return
        with self.mu:
            # a range under writeback is waited for before it is written again (as Lustre waits on a
            # page under writeback): an older RPC must not land after a newer one
            busy = [f for lo, hi, fs in self.pending if lo < offset + len(data) and offset < hi for f in fs]
            if busy:
                self._wait(busy)
            i = bisect.bisect_right(self.starts, offset) - 1
            if i >= 0 and offset <= self.starts[i] + len(self.runs[i]):   # inside or right after run i
                buf = self.runs[i]
                a = offset - self.starts[i]
                buf[a:a + len(data)] = data
            else:
                i += 1
                self.starts.insert(i, offset)
                self.runs.insert(i, bytearray(data))
                buf = self.runs[i]
            self.buffered += len(data)
            end = self.starts[i] + len(buf)
            while i + 1 < len(self.starts) and self.starts[i + 1] <= end:   # swallow the runs it reaches
                nxt, nstart = self.runs.pop(i + 1), self.starts.pop(i + 1)
                if nstart + len(nxt) > end:
                    buf += nxt[end - nstart:]
                end = self.starts[i] + len(buf)
            futs: list[Future] = []
            row = self.row
            if len(buf) >= row:   # full stripe rows go out; the rest stays for the writes that follow
                whole = len(buf) // row * row
                sent_from = self.starts[i]
                futs = self._send(sent_from, bytes(buf[:whole]))
                del buf[:whole]
                self.starts[i] += whole
                self.buffered = max(0, self.buffered - whole)
                if not buf:
                    del self.starts[i], self.runs[i]
                self._prune()
                self.pending.append((sent_from, sent_from + whole, futs))
            scattered = self.buffered > limit
        if scattered:   # many small scattered writes: past max_dirty_mb held here, send them
            self.flush()
        elif futs:      # past max_dirty_mb in flight to an OST: wait until it has room
            for ost in {o.ost for o in self.layout.objects}:
                self.osc.wait_room(ost)

    def _send(self, offset: int, data: bytes) -> list[Future]:
        """The RPCs for bytes [offset, offset+len(data)): per object, contiguous object bytes (across
        stripe rows) gathered into RPCs of at most rpc_bytes."""
        lay, rpc = self.layout, self.osc.t.rpc_bytes
        view = memoryview(data)
        rpcs: list[tuple[int, int, list[memoryview]]] = []   # (slot, object offset, pieces)
        open_rpc: dict[int, tuple[int, int, list[memoryview]]] = {}
        for e in lay.extents(offset, len(data)):
            for k in range(0, e.length, rpc):
                n = min(rpc, e.length - k)
                piece = view[e.file_offset - offset + k:e.file_offset - offset + k + n]
                cur = open_rpc.get(e.slot)
                size = sum(len(p) for p in cur[2]) if cur else 0
                if cur and cur[1] + size == e.object_offset + k and size + n <= rpc:
                    cur[2].append(piece)
                else:
                    cur = (e.slot, e.object_offset + k, [piece])
                    open_rpc[e.slot] = cur
                    rpcs.append(cur)
        futs = []
        for slot, obj_off, pieces in rpcs:
            o = lay.objects[slot]
            body = b"".join(pieces)
            req = pb.LustreOssWriteRequest(obj=pb.LustreObjectRef(ost=o.ost, objid=o.objid, seq=o.seq),
                                           offset=obj_off, data=body)
            self.osc.reserve(o.ost, len(body))
            futs.append(self.osc.send(o.ost, req, len(body)))
        return futs

    @staticmethod
    def _wait(futs: list[Future]) -> None:
        err: OSError | None = None
        for f in futs:
            try:
                f.result()
            except OSError as e:
                err = err or e
            except Exception as e:  # noqa: BLE001 - anything else from an RPC is an I/O error
                err = err or ClientError(errno.EIO, str(e))
        if err is not None:
            raise err

    def flush(self) -> None:
        """Send every dirty byte and wait until all of it is acknowledged; raises the first error of
        any RPC of this file since the last flush."""
        self.wait(self.send_all())

    def wait(self, futs: list[Future]) -> None:
        """Wait for what `send_all` returned; the RPCs answered leave `pending` (their errors raised here,
        once)."""
        try:
            self._wait(futs)
        finally:
            with self.mu:
                self.pending = [p for p in self.pending if not all(f.done() for f in p[2])]

    def send_all(self) -> list[Future]:
        """Send every dirty byte; the RPCs not yet waited for (the caller waits: `wait`)."""
        with self.mu:
            # the RPCs stay pending until they are answered: a reader on another thread that finds them
            # in flight waits for them too (dirty())
            self._prune()
            for start, buf in zip(self.starts, self.runs, strict=True):
                self.pending.append((start, start + len(buf), self._send(start, bytes(buf))))
            self.starts, self.runs, self.buffered = [], [], 0
            failed, self.failed = self.failed, []
            return failed + [f for _lo, _hi, fs in self.pending for f in fs]

    def _prune(self) -> None:
        """Answered RPCs out of `pending`; the failed ones kept for the next flush to report."""
        keep = []
        for p in self.pending:
            if all(f.done() for f in p[2]):
                self.failed += [f for f in p[2] if f.exception() is not None]
            else:
                keep.append(p)
        self.pending = keep

    def dirty(self) -> bool:
        return bool(self.runs) or bool(self.failed) or any(not f.done() for _lo, _hi, fs in self.pending for f in fs)

    def discard(self) -> None:
        """Drop unsent data (the file was removed: Lustre discards the pages of a destroyed object)."""
        with self.mu:
            self.starts, self.runs, self.buffered = [], [], 0
