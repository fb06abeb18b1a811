"""The fabric's alarms, as UFM keeps them: a condition that holds until it clears (a link down, a port
marked unhealthy), unlike an event, which is a moment. Pure: the caller passes the time.

An alarm is keyed by (object, name): raising it again while it holds bumps `event_count`; clearing
removes it. Views use UFM's field names (`GET /ufmRest/app/alarms`): id, type ("IBPort",
"Switch"), name, description, reason, severity, timestamp, event_count, object_name (a port name or
a system GUID), object_path ("Computer: gpu001 / mlx5_0", "Switch: ib-leaf01 / 3").
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

LINK_DOWN = "Link is down"
UNHEALTHY = "Unhealthy port"


@dataclass
class Alarm:
    id: int
    type: str
    name: str
    description: str
    reason: str
    severity: str
    time: float
    object_name: str
    object_path: str
    event_count: int = 1

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class Alarms:
    def __init__(self) -> None:
        self._open: dict[tuple[str, str], Alarm] = {}
        self._next_id = 1

    def raise_(self, now: float, *, object_name: str, object_path: str, name: str, description: str, reason: str,
               severity: str = "Warning", type: str = "IBPort") -> Alarm:
        key = (object_name, name)
        alarm = self._open.get(key)
        if alarm is not None:
            alarm.event_count += 1
            alarm.reason = reason
            return alarm
        alarm = Alarm(self._next_id, type, name, description, reason, severity, now, object_name, object_path)
        self._next_id += 1
        self._open[key] = alarm
        return alarm

    def clear(self, object_name: str, name: str) -> Alarm | None:
        return self._open.pop((object_name, name), None)

    def list(self) -> list[Alarm]:
        return sorted(self._open.values(), key=lambda a: a.id)

    def get(self, alarm_id: int) -> Alarm | None:
        return next((a for a in self._open.values() if a.id == alarm_id), None)
