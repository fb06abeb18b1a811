"""Network faults on the twin's event bus, in the scheme `emulator.bus` documents.

For a fault raised (kind = the fault's kind: link-down, loss, switch-down, node-cut, partition):

    PREFIX/events/network/<kind>        QoS 1: an event (docs/EVENTS.md) with {"node": "network", "fault"}
    PREFIX/faults/network/<fault id>    QoS 1, retained: the fault record (`fault_record`)

For a fault cleared, the event kind is `<kind>-clear` (`link-down-clear`, ...), the fault record
(active false, cleared_at set) goes once to PREFIX/faults/network/<id> unretained, and an empty
retained payload then removes the retained message. The network's state file stays the durable
fault log; the bus is the feed.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from emulator import bus
from emulator.clock import Clock
from emulator.manifest import BrokerInfo
from emulator.network.faults import NetFault

NODE = "network"


def describe(fault: NetFault) -> str:
    d = fault.detail
    if fault.cleared is not None:
        return f"{fault.kind} {fault.target} cleared ({fault.id})"
    if fault.kind == "loss":
        return f"{d.get('percent')}% loss on {fault.target} ({fault.id})"
    if fault.kind == "partition":
        return (f"partition between {','.join(d.get('group_a', []))} and {','.join(d.get('group_b', []))} "
                f"({fault.id})")
    return f"{fault.kind} {fault.target} ({fault.id})"


def fault_record(fault: NetFault) -> dict[str, Any]:
    """The fault as the bus's fault record (emulator/events.py FaultPayload)."""
    return {"id": fault.id, "subsystem": "network", "target": fault.target, "kind": fault.kind,
            "params": dict(fault.detail), "active": fault.active, "injected_at": fault.time,
            "cleared_at": fault.cleared, "effect": describe(fault)}


def publish(broker: BrokerInfo, twin: str, raised: Iterable[NetFault] = (), cleared: Iterable[NetFault] = (),
            timeout: float = 5.0, clock: Clock | None = None) -> int:
    """Publish on the twin's broker (manifest `broker`: host, port) over one short-lived connection,
    QoS 1, waiting for every PUBACK; event times from `clock` (the twin's). Returns the number of
    messages; raises OSError/TimeoutError when the broker cannot be reached."""
    faults = [*raised, *cleared]
    if not faults:
        return 0
    now = (clock or Clock()).now
    with bus.SyncPublisher(broker.host, broker.port, twin, NODE, wait=True) as pub:
        for f in faults:
            record = fault_record(f)
            pub.event(NODE, f.kind if f.active else f"{f.kind}-clear", {"node": NODE, "fault": record}, time=now(),
                      message=describe(f))
            pub.fault(NODE, record)
        pub.flush(timeout)
    return sum(2 if f.active else 3 for f in faults)
