"""The fault log's feed on the bus: each fault recorded or cleared, as emulator/events.py describes it
(subsystem "twin", kinds fault and fault_clear, the fault record in `fault`):

    PREFIX/events/twin/fault, PREFIX/events/twin/fault_clear   QoS 1: the envelope + {"fault": record}
    PREFIX/faults/twin/<fault id>                              QoS 1, retained while active: the record

One short-lived MQTT connection per change, QoS 1, waiting for the broker's PUBACKs (emulator/bus.py
publish_fault).
"""

from __future__ import annotations

from emulator import bus
from emulator.events import FaultPayload
from emulator.manifest import BrokerInfo

NODE = "twin"


def describe(f: FaultPayload) -> str:
    state = "cleared" if not f.active else f.effect
    return f"{f.id} {f.subsystem} {f.kind} {f.target}: {state}"


def publish(broker: BrokerInfo, twin: str, fault: FaultPayload, now: float, timeout: float = 5.0) -> None:
    """Raises OSError or TimeoutError when the broker cannot be reached or does not acknowledge."""
    bus.publish_fault(broker.model_dump(), twin, fault.model_dump(), now=now, message=describe(fault), source="faults",
                      node=NODE, timeout=timeout)
