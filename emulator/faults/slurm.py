"""Slurm node faults, through the twin's Slurm (services/slurm/sdk.py) as an operator makes them:

    inject("slurm", "gpu001", "drain", reason="bad DIMM")   # scontrol update nodename=gpu001 state=drain reason=...
    inject("slurm", "gpu001", "down", reason="no power")    # ... state=down
    clear(id)                                               # scontrol update nodename=gpu001 state=resume
"""

from __future__ import annotations

from typing import Any

from emulator.events import FaultPayload
from emulator.faults.backend import Backend, FaultError

DEFAULT_REASON = "twin fault"


class SlurmFaults(Backend):
    subsystem = "slurm"
    kinds = {"drain": "scontrol update nodename=NODE state=drain reason=...",
             "down": "scontrol update nodename=NODE state=down reason=..."}
    params = {"reason": str}

    def present(self) -> str:
        return "" if self.twin.slurm().running() else \
            "this twin's Slurm is not running: start it with `twin slurm up`"

    def check(self, target: str, kind: str, params: dict[str, Any]) -> dict[str, Any]:
        out = super().check(target, kind, params)
        nodes = self.twin.slurm().nodes()
        if target not in nodes:
            raise FaultError(f"Slurm has no node {target!r} ({', '.join(sorted(nodes))})")
        if not out.get("reason", DEFAULT_REASON).strip():
            raise FaultError("a drain or down needs a reason")
        return out

    def _scontrol(self, node: str, *settings: str) -> None:
        r = self.twin.slurm().command("scontrol", "update", f"nodename={node}", *settings)
        if r.returncode != 0:
            raise FaultError(f"scontrol update nodename={node} {' '.join(settings)}: "
                             f"{(r.stderr or r.stdout).strip()}")

    def inject(self, target: str, kind: str, params: dict[str, Any]) -> tuple[str, str]:
        reason = params.setdefault("reason", DEFAULT_REASON)
        self._scontrol(target, f"state={kind}", f"reason={reason}")
        state = self.twin.slurm().nodes()[target]["state"]
        return "", f"{target} {state} (reason: {reason})"

    def clear(self, fault: FaultPayload) -> str:
        state = self.twin.slurm().nodes().get(fault.target, {}).get("state", "")
        if not any(s in state for s in ("drain", "down")):   # slurmctld returned it to service itself
            return f"{fault.target} already {state}"
        self._scontrol(fault.target, "state=resume")
        return f"{fault.target} {self.twin.slurm().nodes()[fault.target]['state']}"
