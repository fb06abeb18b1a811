"""What a daemon's WatchEvents streams: the events it saw, numbered (seq), the last KEPT of them kept for
replay, then each new one as it happens. Thread-safe: a daemon adds events from its event loop and
from worker threads; each watcher is a queue on its own loop.

`replay_then_stream` is the loop every WatchEvents runs, for a daemon that keeps its events elsewhere
too (the fabric's are in its store): subscribe first, then read what is kept, so that nothing falls
between the two."""

from __future__ import annotations

import asyncio
import collections
import threading
from collections.abc import AsyncIterator, Iterable
from typing import Any

KEPT = 256   # events kept for a watcher's replay

Event = dict[str, Any]


async def replay_then_stream(queue: asyncio.Queue[Event], kept: Iterable[Event], since_seq: int,
                             last_seq: int) -> AsyncIterator[Event]:
    """The `kept` events after since_seq, then each new one from `queue` (subscribed before `kept` was
    read: an event in both is yielded once), until the caller stops. `last_seq`: the newest seq when
    `kept` was read; a since_seq beyond it (e.g. of the daemon's previous run) means "from now on"."""
    last = min(since_seq, last_seq)
    for ev in kept:
        if ev["seq"] > last:
            last = ev["seq"]
            yield ev
    while True:
        ev = await queue.get()
        if ev["seq"] > last:
            last = ev["seq"]
            yield ev


class EventRing:
    def __init__(self, kept: int = KEPT) -> None:
        self._lock = threading.Lock()
        self._seq = 0
        self._kept: collections.deque[Event] = collections.deque(maxlen=kept)
        self._watchers: dict[asyncio.Queue[Event], asyncio.AbstractEventLoop] = {}

    def add(self, kind: str, time: float, message: str, **fields: Any) -> Event:
        """Number the event, keep it and hand it to every watcher; from any thread."""
        with self._lock:
            self._seq += 1
            ev = {"seq": self._seq, "time": time, "kind": kind, "message": message, **fields}
            self._kept.append(ev)
            watchers = list(self._watchers.items())
        for q, loop in watchers:
            try:
                loop.call_soon_threadsafe(q.put_nowait, ev)
            except RuntimeError:   # its loop closed (the daemon stops): that watcher is gone
                self._unsubscribe(q)
        return ev

    async def stream(self, since_seq: int) -> AsyncIterator[Event]:
        """replay_then_stream over what this ring keeps, on the running loop, until the caller stops."""
        q: asyncio.Queue[Event] = asyncio.Queue()
        with self._lock:   # subscribe and read what is kept at once
            self._watchers[q] = asyncio.get_running_loop()
            kept, last = list(self._kept), self._seq
        try:
            async for ev in replay_then_stream(q, kept, since_seq, last):
                yield ev
        finally:
            self._unsubscribe(q)

    def _unsubscribe(self, q: asyncio.Queue[Event]) -> None:
        with self._lock:
            self._watchers.pop(q, None)
