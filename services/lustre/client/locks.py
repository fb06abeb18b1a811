"""The client's side of LDLM (services/lustre/mds/ldlm.py): the callback stream to the MDS, kept open
(across an MDS failover: it follows the client's MDS target), and what a blocking callback drops: the
mount's cached attributes and listings, the kernel's attributes and pages of the path (libfuse's
fuse_invalidate_path: FUSE's notify_inval_inode), the size an open file took at open, and a write
lock's kept data (written back first: client/fuse.py).

Each callback is answered (cancel=seq) once the caches are dropped: the MDS completes the change that
caused it only then. While the stream is down the client holds no locks, so it trusts no cache of its
own (`held` is False); once it is up again everything it cached before is dropped, as the MDS forgot
its locks."""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import grpc

from clustertwin.v1 import lustre_pb2 as pb
from services.lustre.client.core import LustreClient

log = logging.getLogger("lustre.client")
CALLBACK_THREADS = 8   # callbacks answered at once (as many as the MDC's RPCs in flight)


class Locks:
    def __init__(self, client: LustreClient, uuid: str, drop: Callable[[str, bool], None],
                 drop_all: Callable[[], None]) -> None:
        self.c = client
        self.uuid = uuid
        self.drop = drop
        self.drop_all = drop_all
        self.held = False
        self.callbacks = 0
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name="lustre-ldlm", daemon=True)
        self.pool = ThreadPoolExecutor(CALLBACK_THREADS, thread_name_prefix="lustre-ldlm-cb")

    def start(self) -> None:
        self.thread.start()

    def _run(self) -> None:
        target = self.c.mds
        while not self._stop.is_set():
            i = target.current
            answers: queue.SimpleQueue = queue.SimpleQueue()
            answers.put(pb.LustreMdsLdlmRequest(client_uuid=self.uuid))
            try:
                for cb in target.stubs[i].Ldlm(iter(answers.get, None)):
                    if cb.ready:
                        self.drop_all()   # what was cached before this stream has no lock behind it
                        self.held = True
                        continue
                    self.callbacks += 1
                    self.pool.submit(self._answer, cb, answers)
            except grpc.RpcError as e:
                if e.code() != grpc.StatusCode.CANCELLED:
                    log.info("ldlm stream to %s: %s", target.addresses[i], e.code())
            self.held = False
            answers.put(None)
            if len(target.stubs) > 1 and target.current == i:
                target.current = (i + 1) % len(target.stubs)
            self._stop.wait(0.1)

    def _answer(self, cb: pb.LustreMdsLdlmResponse, answers: queue.SimpleQueue) -> None:
        """One callback: the caches dropped (and a write lock's data written back), then the lock
        cancelled. Callbacks run side by side: a listing by another client calls back every file this one
        keeps in the directory at once, and their write-backs overlap."""
        try:
            self.drop(cb.path, cb.subtree)
        except Exception:
            log.exception("lock callback for %s", cb.path)
        finally:
            answers.put(pb.LustreMdsLdlmRequest(cancel=cb.seq))

    def stop(self) -> None:
        self._stop.set()


class KernelCache:
    """The kernel's cache of this mount, reached through its FUSE session (client/session.py) once the
    kernel's INIT came: invalidating a path is FUSE's notify_inval_inode on its node."""

    def __init__(self) -> None:
        self.session = None

    def attach(self, session: object) -> None:
        self.session = session

    def invalidate(self, path: str) -> None:
        """The kernel's attributes and cached pages of `path` dropped (a no-op if it knows no such path)."""
        if self.session is not None:
            self.session.invalidate(path)

    def retire(self, path: str) -> bool:
        """The kernel's next lookup of `path` makes a new inode (False: the kernel holds it open)."""
        return self.session.retire(path) if self.session is not None else True

    def settle(self) -> None:
        """The names retired so far are expired in the kernel (waited for a short while at most)."""
        if self.session is not None:
            self.session.settle()

    def grow(self, path: str, size: int) -> None:
        """The kernel's size of `path`, open here, moved up to `size`."""
        if self.session is not None:
            self.session.grow(path, size)


def wait_held(locks: Locks, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while not locks.held and time.monotonic() < deadline:
        time.sleep(0.01)
    return locks.held
