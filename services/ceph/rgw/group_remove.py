"""Group removal for RGW's garbage collector: the RADOS objects that concurrent requests free (an
overwrite's old head, a deleted object's stripes) leave in one batch, as a database's group commit
does. The first request to arrive removes its objects; those that arrive meanwhile queue, and when it
is done the next of them removes everything queued at once (behind the monitor: one RemoveObjects
call, one chunk message per OSD, one commit). Each request still returns only once its own objects
are removed (or known to be left for the next pass), as before.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

Obj = tuple[str, str]   # (pool, name)


class GroupRemover:
    def __init__(self, remove_many: Callable[[list[Obj]], list[Obj]]) -> None:
        """`remove_many(objs)` removes what it can and returns what it could not."""
        self.remove_many = remove_many
        self._cond = threading.Condition()
        self._queue: list[tuple[object, list[Obj]]] = []
        self._busy = False
        self._left: dict[object, list[Obj]] = {}

    def remove(self, objs: list[Obj]) -> list[Obj]:
        """Remove `objs` (with whatever else is queued); returns those of them not removed."""
        ticket = object()
        with self._cond:
            self._queue.append((ticket, objs))
            while self._busy and ticket not in self._left:
                self._cond.wait()
            if ticket in self._left:
                return self._left.pop(ticket)
            self._busy = True
            batch, self._queue = self._queue, []
        left: set[Obj] = set()
        try:
            left = set(self.remove_many([o for _, mine in batch for o in mine]))
        except BaseException:
            left = {o for _, mine in batch for o in mine}
            raise
        finally:
            with self._cond:
                for t, mine in batch:
                    self._left[t] = [o for o in mine if o in left]
                mine_left = self._left.pop(ticket)
                self._busy = False
                self._cond.notify_all()
        return mine_left
