"""Network faults on the twin's event bus, in the scheme `emulator.bus` documents.

For a fault raised (kind = the fault's kind: link-down, loss, switch-down, node-cut, partition):

    PREFIX/events/network/<kind>        QoS 1: {"time", "node": "network", "kind", "fault", "message"}
    PREFIX/faults/network/<fault id>    QoS 1, retained: the fault record

For a fault cleared, the event kind is `<kind>-clear` (`link-down-clear`, ...), the fault record
(with `cleared` set) goes once to PREFIX/faults/network/<id> unretained, and an empty retained
payload then removes the retained message. `fault` is `NetFault.to_dict()` (id, kind, target,
time, detail, cleared). The network's state file stays the durable fault log; the bus is the feed.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from emulator import bus
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


def messages(twin: str, raised: Iterable[NetFault] = (), cleared: Iterable[NetFault] = ()) -> list[dict[str, Any]]:
    """The MQTT messages (topic, payload, qos, retain) announcing faults raised and cleared."""
    out: list[dict[str, Any]] = []
    for f in raised:
        record = f.to_dict()
        event = {"time": time.time(), "node": NODE, "kind": f.kind, "fault": record, "message": describe(f)}
        out.append({"topic": bus.event_topic(twin, NODE, f.kind), "payload": bus.encode(event), "qos": 1,
                    "retain": False})
        out.append({"topic": bus.fault_topic(twin, NODE, f.id), "payload": bus.encode(record), "qos": 1,
                    "retain": True})
    for f in cleared:
        record = f.to_dict()
        kind = f"{f.kind}-clear"
        event = {"time": time.time(), "node": NODE, "kind": kind, "fault": record, "message": describe(f)}
        out.append({"topic": bus.event_topic(twin, NODE, kind), "payload": bus.encode(event), "qos": 1,
                    "retain": False})
        out.append({"topic": bus.fault_topic(twin, NODE, f.id), "payload": bus.encode(record), "qos": 1,
                    "retain": False})
        out.append({"topic": bus.fault_topic(twin, NODE, f.id), "payload": b"", "qos": 1, "retain": True})
    return out


def publish(broker: dict[str, Any], twin: str, raised: Iterable[NetFault] = (), cleared: Iterable[NetFault] = (),
            timeout: float = 5.0) -> int:
    """Publish on the twin's broker (manifest `broker`: host, port) over one short-lived connection,
    QoS 1, waiting for every PUBACK. Returns the number of messages; raises OSError/TimeoutError when
    the broker cannot be reached."""
    import paho.mqtt.client as mqtt

    msgs = messages(twin, raised, cleared)
    if not msgs:
        return 0
    client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2)
    client.connect(broker["host"], int(broker["port"]), keepalive=10)
    client.loop_start()
    try:
        infos = [client.publish(m["topic"], m["payload"], qos=m["qos"], retain=m["retain"]) for m in msgs]
        deadline = time.monotonic() + timeout
        for info in infos:
            info.wait_for_publish(max(0.01, deadline - time.monotonic()))
            if not info.is_published():
                raise TimeoutError(f"MQTT broker {broker['host']}:{broker['port']} did not acknowledge "
                                   f"within {timeout:g}s")
    finally:
        client.disconnect()
        client.loop_stop()
    return len(msgs)
