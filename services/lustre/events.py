"""Lustre's events on the twin's bus (emulator/bus.py: `PREFIX/events/lustre/<kind>`, QoS 1), from the
sync gRPC daemons through paho's own network thread. Best effort: without a broker nothing is sent.
The daemon's WatchEvents (LustreMds, LustreOss; services/lustre/wire.py `watch`) streams the same events
from an emulator/event_ring.py ring, the last KEPT of them replayed first, with or without a broker.

Kinds (node = the daemon that saw it):
    oss_failover    {"ost", "from", "to"}       the partner took over an OST of a failed OSS
    oss_failback    {"ost", "from", "to"}       the OST went back to its own OSS
    ost_inactive    {"ost"}                     no OSS serves the OST (seen by the MDS): its I/O blocks, then EIO
    ost_active      {"ost", "oss"}              an OSS serves it again
    oss_down        {"oss"}                     an OSS stopped serving (a fault: `twin lustre fault oss-kill`)
    oss_up          {"oss"}                     it serves again
    mds_failover    {"mdt", "to", "from"}       the standby MDS became active
    ost_full        {"ost"}                     an OST is full: new layouts avoid it
    ost_full_clear  {"ost"}                     it has room again
    fault           {"fault"}                   an OSS fault injected (the LustreOss fault RPCs; the fault as
    fault_clear     {"fault"}                   ListFaults gives it), or cleared; the fault is also retained on
                                                PREFIX/faults/lustre/<id> while active
Every payload also has "time" (the twin clock, emulator/clock.py, as every service's events), "node"
(the MDS or OSS daemon that saw it: mds01, oss02), "kind" and a human "message". What `twin lustre
fault` does shows as: oss-kill -> oss_down (then oss_failover from the partner), oss-start -> oss_up
(then oss_failback), ost-full -> ost_full, ost-clear -> ost_full_clear, mds-kill -> mds_failover (from
the standby that takes over).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from emulator.event_ring import EventRing

log = logging.getLogger("lustre.events")


def fault_record(f: dict[str, Any]) -> dict[str, Any]:
    """An OSS fault (oss/faults.py OssFault.doc()) as the bus's fault record (emulator/events.py FaultPayload)."""
    ost = f.get("ost")
    return {"id": f["id"], "subsystem": "lustre", "target": f["oss"] if ost is None else f"OST{ost:04x}",
            "kind": f["kind"], "params": {"oss": f["oss"], **({} if ost is None else {"ost": ost})},
            **{k: f[k] for k in ("active", "injected_at", "cleared_at", "effect")}}


class EventPublisher:
    def __init__(self, twin: str, node: str, host: str | None, port: int | None,
                 clock: Callable[[], float]) -> None:
        """`clock`: the twin clock's now (DaemonConfig.clock.now), which stamps every event."""
        self.twin, self.node, self.clock = twin, node, clock
        self.client = None
        self.ring = EventRing()   # for WatchEvents (wire.watch); publish() runs on the loop and in worker threads
        if not host or not port:
            return
        try:   # paho's thread connects (and reconnects) in the background
            from emulator import bus

            self.client = bus.SyncPublisher(host, int(port), twin, node, client_id=f"{twin}/{node}/lustre-events")
        except Exception as e:  # noqa: BLE001 - the bus is best effort
            log.warning("no event bus (%s:%s): %s", host, port, e)

    def publish(self, kind: str, message: str, **fields: Any) -> None:
        log.info("event %s: %s", kind, message)
        now = self.clock()
        if self.client is not None:
            self.client.event("lustre", kind, {"node": self.node, **fields}, time=now, message=message)
        self.ring.add(kind, now, message, node=self.node, **fields)

    def publish_fault(self, fault: dict[str, Any], message: str) -> None:
        """A fault injected or cleared (fault["active"]): the event, and the retained record while active."""
        record = fault_record(fault)
        self.publish("fault" if fault["active"] else "fault_clear", message, fault=record)
        if self.client is not None:
            self.client.fault("lustre", record)

    def flush(self, timeout: float) -> None:
        """Wait (up to `timeout`) until the broker has acknowledged what was published; best effort:
        a broker away or slow is not the caller's failure."""
        if self.client is not None:
            try:
                self.client.flush(timeout)
            except TimeoutError as e:
                log.warning("events not acknowledged: %s", e)

    def close(self) -> None:
        if self.client is not None:
            self.client.close()
