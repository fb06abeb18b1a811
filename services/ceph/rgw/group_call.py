"""Group calls, as a database's group commit: what concurrent requests ask of the monitor leaves in
one call. The first request to arrive makes its call alone; those that arrive meanwhile queue, and when
it is done the next of them makes one call for everything queued. Each request still returns only
once its own items are done, with its own results.

Used by RGW for the monitor's per-request work that costs more per call than per item: committing the
objects whose chunks the gateway wrote (`CephMon.CommitObjects`), and the garbage collector's removals
(`CephMon.RemoveObjects`: one chunk message per OSD, one SQLite commit per batch).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

X = TypeVar("X")
Y = TypeVar("Y")
Obj = tuple[str, str]   # (pool, name)


class GroupCall(Generic[X, Y]):
    def __init__(self, call_many: Callable[[list[X]], list[Y]]) -> None:
        """`call_many(items)` returns one result per item, in order; an exception fails the whole batch."""
        self.call_many = call_many
        self._cond = threading.Condition()
        self._queue: list[tuple[object, list[X]]] = []
        self._busy = False
        self._done: dict[object, list[Y] | BaseException] = {}

    def call(self, items: list[X]) -> list[Y]:
        """`items`' results (with whatever else is queued, in one call)."""
        ticket = object()
        with self._cond:
            self._queue.append((ticket, items))
            while self._busy and ticket not in self._done:
                self._cond.wait()
            if ticket not in self._done:
                self._busy = True
                batch, self._queue = self._queue, []
        if ticket not in self._done:
            self._run(batch)
        with self._cond:
            out = self._done.pop(ticket)
        if isinstance(out, BaseException):
            raise out
        return out

    def _run(self, batch: list[tuple[object, list[X]]]) -> None:
        results: list[Y] | BaseException
        try:
            results = self.call_many([x for _, mine in batch for x in mine])
        except BaseException as e:  # noqa: BLE001 - every request of the batch hears it
            results = e
        with self._cond:
            at = 0
            for t, mine in batch:
                self._done[t] = results if isinstance(results, BaseException) else results[at:at + len(mine)]
                at += len(mine)
            self._busy = False
            self._cond.notify_all()


class GroupRemover:
    """RGW's garbage collector over a GroupCall: `remove(objs)` returns those of them not removed."""

    def __init__(self, remove_many: Callable[[list[Obj]], list[Obj]]) -> None:
        """`remove_many(objs)` removes what it can and returns what it could not."""
        def call_many(objs: list[Obj]) -> list[bool]:
            left = set(remove_many(objs))
            return [o in left for o in objs]
        self._group: GroupCall[Obj, bool] = GroupCall(call_many)

    def remove(self, objs: list[Obj]) -> list[Obj]:
        return [o for o, left in zip(objs, self._group.call(objs), strict=True) if left]
