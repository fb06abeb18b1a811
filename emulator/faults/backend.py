"""What every subsystem's fault backend offers the fault API (emulator/sdk/faults.py).

A backend checks a request completely before it changes anything (`check`), applies it through the
subsystem's SDK (`inject`), undoes it (`clear`), and, where the subsystem keeps its own record of
faults (the GPU servers', the Ceph monitor's, the network supervisor's, Lustre's OSSs kept down),
lists the active ones (`native`): the API adopts those made by another path (`twin net fault`,
`twin lustre fault`, a GPU server's own API) and closes those that ended there (a reboot, a kill
the supervisor recovered from).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from emulator.errors import BadInput
from emulator.events import FaultPayload


class FaultError(BadInput):
    """A fault request the twin refuses (unknown subsystem, target, kind, parameter or id); nothing changed."""


@dataclass(frozen=True)
class Native:
    """An active fault as the subsystem itself records it."""

    backend_id: str
    target: str
    kind: str
    effect: str
    params: dict[str, Any] = field(default_factory=dict)


class Backend:
    subsystem: ClassVar[str]
    kinds: ClassVar[dict[str, str]]            # kind -> what it does (help text)
    params: ClassVar[dict[str, type]] = {}     # parameter -> its type
    oneshot: ClassVar[frozenset[str]] = frozenset()   # kinds over once applied (a kill the supervisor restarts)

    def __init__(self, twin: Any) -> None:
        self.twin = twin
        self.unknown: set[str] = set()   # targets `native` could not ask (a server cut off): left as logged

    def present(self) -> str:
        """'' when the twin runs this subsystem, else how to start it."""
        return ""

    def check(self, target: str, kind: str, params: dict[str, Any]) -> dict[str, Any]:
        """The parameters, converted to their types; FaultError for anything unknown. Changes nothing."""
        if kind not in self.kinds:
            raise FaultError(f"{self.subsystem} has no fault kind {kind!r}; its kinds: {', '.join(self.kinds)}")
        out = {}
        for name, value in params.items():
            if value is None:
                continue
            if name not in self.params:
                raise FaultError(f"{self.subsystem} faults take {', '.join(self.params) or 'no parameters'}; "
                                 f"not {name!r}")
            try:
                out[name] = self.params[name](value)
            except (TypeError, ValueError):
                raise FaultError(f"{name} must be a {self.params[name].__name__}, not {value!r}") from None
        return out

    def inject(self, target: str, kind: str, params: dict[str, Any]) -> tuple[str, str]:
        """Apply a checked fault; (the subsystem's id for it or '', its effect)."""
        raise NotImplementedError

    def clear(self, fault: FaultPayload) -> str:
        """Undo it; what that did."""
        raise NotImplementedError

    def native(self) -> list[Native] | None:
        """The subsystem's own active faults, or None if it keeps no record (the log is then the record)."""
        return None


def need(params: dict[str, Any], name: str, kind: str) -> Any:
    if name not in params:
        raise FaultError(f"a {kind} fault needs {name}=...")
    return params[name]
