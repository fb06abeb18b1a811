"""What a Ceph daemon's WatchEvents streams: the events it saw, numbered (seq), the last KEPT kept for
replay. The monitor logs what it puts on the bus (osd_up/down/in/out, pg_state, fault/fault_clear),
an OSD daemon its own state changes (osd_stop, osd_start, osd_slow, chunk_corrupt), the RBD service
its image header changes (header_update, what `rbd watch` reports). Thread-safe: the monitor logs
from worker threads; watchers are queues on the event loop.
"""

from __future__ import annotations

import asyncio
import collections
import threading
from collections.abc import AsyncIterator, Callable
from typing import Any

from clustertwin.v1 import ceph_pb2 as pb

KEPT = 256


class EventLog:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seq = 0
        self._kept: collections.deque[dict[str, Any]] = collections.deque(maxlen=KEPT)
        self._watchers: dict[asyncio.Queue[dict[str, Any]], asyncio.AbstractEventLoop] = {}

    def add(self, kind: str, time: float, message: str, **fields: Any) -> None:
        with self._lock:
            self._seq += 1
            ev = {"seq": self._seq, "time": time, "kind": kind, "message": message, **fields}
            self._kept.append(ev)
            watchers = list(self._watchers.items())
        for q, loop in watchers:
            loop.call_soon_threadsafe(q.put_nowait, ev)

    async def watch(self, since_seq: int, wanted: Callable[[dict[str, Any]], bool] = lambda _: True,
                    ) -> AsyncIterator[pb.CephEvent]:
        """The kept events after since_seq, then each new one, until the call ends (a since_seq from
        the future, e.g. of the daemon's previous run, means "from now on")."""
        q: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        with self._lock:   # subscribe first, then replay: nothing falls between
            self._watchers[q] = asyncio.get_running_loop()
            kept, last = list(self._kept), min(since_seq, self._seq)
        try:
            for ev in kept:
                if ev["seq"] > last:
                    last = ev["seq"]
                    if wanted(ev):
                        yield event_pb(ev)
            while True:
                ev = await q.get()
                if ev["seq"] > last:
                    last = ev["seq"]
                    if wanted(ev):
                        yield event_pb(ev)
        finally:
            with self._lock:
                self._watchers.pop(q, None)


FIELDS = ("osd", "host", "epoch", "pg", "pool", "image")


def event_pb(ev: dict[str, Any]) -> pb.CephEvent:
    out = pb.CephEvent(seq=ev["seq"], time=ev["time"], kind=ev["kind"], message=ev["message"],
                       from_state=ev.get("from") or "", to_state=ev.get("to") or "",
                       **{k: ev[k] for k in FIELDS if ev.get(k) is not None})
    f = ev.get("fault")
    if f:
        p = f["params"]
        out.fault.CopyFrom(pb.CephFault(id=f["id"], kind=f["kind"], osd=int(f["target"].removeprefix("osd.")),
                                        factor=p.get("factor", 0.0), pool=p.get("pool", ""),
                                        object=p.get("object", ""), injected_at=f["injected_at"],
                                        active=f["active"], cleared_at=f["cleared_at"] or 0.0, effect=f["effect"]))
    return out
