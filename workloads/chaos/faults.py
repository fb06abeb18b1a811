"""Injecting and clearing the plan's faults through the twin's fault API (`Twin.faults()`), as an
operator's tools do: each fault gets an id in the twin's fault log and its events on the bus.

A daemon kill is no fault of the log (the supervisor restarts the daemon at once): it is a SIGKILL to
the pid the supervisor recorded, sent only while that pid is still the recorded process (its start
time, emulator/process.py). A cable on the compute plane goes down through the fabric manager (one
fabric: ibsim, OpenSM and the veths), which the network backend does; Xids are cleared by the recovery
NVIDIA prescribes (79: reboot the node, others: reset the GPU), then closed in the log.
"""

from __future__ import annotations

import threading
from typing import Any

from emulator.client import Twin
from emulator.sdk import daemons
from workloads.chaos.schedule import PlannedFault


class Injector:
    def __init__(self, twin: Twin) -> None:
        self.twin = twin
        self.run = twin.run
        self.faults = twin.faults()
        self._ids: dict[str, str] = {}   # planned fault id -> the fault log's id
        self._lock = threading.Lock()    # the drivers run in threads

    # --- the two entry points ---------------------------------------------------------------
    def inject(self, f: PlannedFault) -> str:
        t = f.target
        if f.kind == "kill":
            pid = daemons.kill(self.run, t["name"])
            return f"{t['name']} (pid {pid}) killed with SIGKILL; the supervisor restarts it"
        subsystem, target, kind, params = self.request(f)
        fault = self.faults.inject(subsystem, target, kind, **params)
        with self._lock:
            self._ids[f.id] = fault.id
        return f"{fault.id}: {fault.effect}"

    def clear(self, f: PlannedFault) -> str:
        t = f.target
        if f.kind == "kill":
            return "nothing to clear: the supervisor restarts the daemon"
        with self._lock:
            fault_id = self._ids.pop(f.id, None)
        if fault_id is None:
            raise RuntimeError(f"{f.id} was not injected: nothing to clear")
        done = ""
        if f.kind == "xid":   # the recovery first: a lost GPU (79) comes back only with a reboot
            node = self.twin.gpu_node(t["server"])
            if t["xid"] == 79:
                node.reboot()
                done = f"{t['server']} rebooted; "
            else:
                node.reset_gpu(t["gpu"])
                done = f"{t['server']} GPU {t['gpu']} reset; "
        if self.faults.get(fault_id).active:
            self.faults.clear(fault_id)
        return f"{done}{fault_id} cleared"

    @staticmethod
    def request(f: PlannedFault) -> tuple[str, str, str, dict[str, Any]]:
        """The fault API's (subsystem, target, kind, params) for a planned fault."""
        t = f.target
        if f.kind == "osd-stop":
            return "ceph", f"osd.{t['osd']}", "stop", {}
        if f.kind == "oss-kill":
            return "lustre", t["name"], "oss-kill", {}
        if f.kind == "xid":
            return "gpu", t["server"], "xid", {"gpu": t["gpu"], "xid": t["xid"]}
        if f.kind == "link-down":
            index = "" if t["index"] is None else f":{t['index']}"   # None: every parallel cable
            return "network", f"{t['a']}:{t['b']}{index}", "link-down", {}
        if f.kind == "cut":
            return "network", t["host"], "node-cut", {}
        raise ValueError(f"unknown fault kind {f.kind!r}")

    # --- helpers ----------------------------------------------------------------------------
    def pids(self) -> dict[str, int]:
        """Every daemon's pid as the supervisor recorded it."""
        doc = self.run.read(self.run.daemons)
        return {name: int(d.get("pid") or 0) for name, d in doc.get("daemons", {}).items()}
