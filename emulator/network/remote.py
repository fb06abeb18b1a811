"""The running twin's network, driven through its supervisor (which holds the live route tables,
so a fault re-routes by difference in well under a second, as in-process)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from emulator import control
from emulator.network.errors import NetworkError
from emulator.network.faults import NetFault

# What a client may ask of the supervisor's Network; nothing else is reachable.
OPERATIONS = frozenset({
    "link_down", "link_up", "set_loss", "switch_down", "switch_up", "cut_off", "reconnect",
    "partition", "heal", "clear", "faults", "show", "check_link",
})


def encode(value: Any) -> Any:
    if isinstance(value, NetFault):
        return {"__netfault__": value.to_dict()}
    if isinstance(value, (list, tuple)):
        return [encode(v) for v in value]
    return value


def decode(value: Any) -> Any:
    if isinstance(value, dict) and "__netfault__" in value:
        return NetFault.from_dict(value["__netfault__"])
    if isinstance(value, list):
        return [decode(v) for v in value]
    return value


def serve(network: Any, op: str, args: list[Any], kwargs: dict[str, Any]) -> Any:
    """The supervisor's side: run an allowed operation on its live network."""
    if op not in OPERATIONS:
        raise NetworkError(f"unknown network operation {op!r}")
    if op == "check_link":
        return len(network._links(*args, **kwargs))
    return encode(getattr(network, op)(*args, **kwargs))


class RemoteNetwork:
    def __init__(self, socket_path: Path) -> None:
        self.socket_path = socket_path

    def __getattr__(self, op: str) -> Any:
        if op not in OPERATIONS:
            raise AttributeError(op)

        def remote(*args: Any, **kwargs: Any) -> Any:
            try:
                return decode(control.call(self.socket_path, op, *args, **kwargs))
            except control.ControlError as e:
                raise NetworkError(str(e)) from None

        return remote
