"""What a Ceph daemon's WatchEvents streams, on emulator/event_ring.py: the events it saw, numbered (seq),
the last KEPT kept for replay. The monitor logs what it puts on the bus (osd_up/down/in/out, pg_state,
fault/fault_clear), an OSD daemon its own state changes (osd_stop, osd_start, osd_slow, chunk_corrupt),
the RBD service its image header changes (header_update, what `rbd watch` reports).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

from clustertwin.v1 import ceph_pb2 as pb
from emulator.event_ring import EventRing


class EventLog(EventRing):
    async def watch(self, since_seq: int, wanted: Callable[[dict[str, Any]], bool] = lambda _: True,
                    ) -> AsyncIterator[pb.CephEvent]:
        """The kept events after since_seq that are `wanted`, then each new one, until the call ends (a
        since_seq from the future, e.g. of the daemon's previous run, means "from now on")."""
        async for ev in self.stream(since_seq):
            if wanted(ev):
                yield event_pb(ev)


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
