"""The fault log's feed on the bus: each fault recorded or cleared, as emulator/events.py describes it
(subsystem "twin", kinds fault and fault_clear, the fault record in `fault`):

    PREFIX/events/twin/fault, PREFIX/events/twin/fault_clear   QoS 1: the envelope + {"fault": record}
    PREFIX/faults/twin/<fault id>                              QoS 1, retained while active: the record

One short-lived MQTT connection per change, QoS 1, waiting for the broker's PUBACKs, as the network's
fault events are published (emulator/network/events.py).
"""

from __future__ import annotations

import time
from typing import Any

from emulator import bus, events
from emulator.events import FaultPayload

NODE = "twin"


def describe(f: FaultPayload) -> str:
    state = "cleared" if not f.active else f.effect
    return f"{f.id} {f.subsystem} {f.kind} {f.target}: {state}"


def messages(twin: str, fault: FaultPayload, now: float) -> list[tuple[str, bytes, bool]]:
    """(topic, payload, retain) announcing the fault raised (active) or cleared; `now` on the twin clock."""
    kind = "fault" if fault.active else "fault_clear"
    event = events.envelope(twin, "twin", "faults", kind, {"fault": fault.model_dump()}, time=now,
                            message=describe(fault))
    record = fault.model_dump_json().encode()
    out = [(bus.event_topic(twin, NODE, kind), bus.encode(event), False),
           (bus.fault_topic(twin, NODE, fault.id), record, fault.active)]
    if not fault.active:   # the retained record goes: an empty retained payload removes it
        out.append((bus.fault_topic(twin, NODE, fault.id), b"", True))
    return out


def publish(broker: dict[str, Any], twin: str, fault: FaultPayload, now: float, timeout: float = 5.0) -> None:
    """Raises OSError or TimeoutError when the broker cannot be reached or does not acknowledge."""
    import paho.mqtt.client as mqtt

    client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2)
    client.connect(broker["host"], int(broker["port"]), keepalive=10)
    client.loop_start()
    try:
        infos = [client.publish(t, p, qos=1, retain=r) for t, p, r in messages(twin, fault, now)]
        deadline = time.monotonic() + timeout
        for info in infos:
            info.wait_for_publish(max(0.01, deadline - time.monotonic()))
            if not info.is_published():
                raise TimeoutError(f"MQTT broker {broker['host']}:{broker['port']} did not acknowledge "
                                   f"within {timeout:g}s")
    finally:
        client.disconnect()
        client.loop_stop()
