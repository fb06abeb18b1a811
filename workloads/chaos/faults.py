"""Injecting and clearing the plan's faults, through the APIs an operator's tools use.

kill -9 takes the pid the supervisor recorded in the run directory (never a name); network faults
go to the supervisor's live network (`RemoteNetwork`), a compute cable through the fabric manager
(one fabric: ibsim, OpenSM and the veth), each published on the bus as `twin net fault` does; OSD
faults through the monitor (recorded, so `twin fault list` shows them); an OSS kept down with the
marker `twin lustre fault oss-kill` writes; Xids through the GPU server's fault API, cleared by the
recovery NVIDIA prescribes (79: reboot the node, 48: reset the GPU).
"""

from __future__ import annotations

import json
import os
import signal
from typing import Any

from clustertwin.v1 import ceph_pb2
from emulator.client import Twin
from workloads.chaos.schedule import PlannedFault


class Injector:
    def __init__(self, twin: Twin) -> None:
        self.twin = twin
        self.run = twin.run
        self.netns = bool(twin.manifest.get("network_backend"))
        self._ceph_faults: dict[str, str] = {}   # planned fault id -> the monitor's fault id
        self._compute_map: Any = None

    # --- the two entry points ---------------------------------------------------------------
    def inject(self, f: PlannedFault) -> str:
        t = f.target
        if f.kind == "kill":
            pid = self.pid(t["name"])
            os.kill(pid, signal.SIGKILL)
            return f"{t['name']} (pid {pid}) killed with SIGKILL; the supervisor restarts it"
        if f.kind == "osd-stop":
            return self._osd_stop(f)
        if f.kind == "oss-kill":
            return self._oss_kill(t["name"])
        if f.kind == "xid":
            fault = self.twin.gpu_node(t["server"]).inject_xid(gpu=t["gpu"], xid=t["xid"])
            return f"{t['server']} GPU {t['gpu']}: {fault.effect}"
        if f.kind == "link-down":
            return self._link(t, enabled=False)
        if f.kind == "cut":
            return self._publish(self._net().cut_off(t["host"]), [], f"{t['host']} cut off on every plane")
        raise ValueError(f"unknown fault kind {f.kind!r}")

    def clear(self, f: PlannedFault) -> str:
        t = f.target
        if f.kind == "kill":
            return "nothing to clear: the supervisor restarts the daemon"
        if f.kind == "osd-stop":
            a = self.twin.ceph()
            a.osd(t["osd"], "SetFault", ceph_pb2.SetFaultRequest(stopped=False))
            if f.id in self._ceph_faults:
                a.call("ClearFault", ceph_pb2.FaultClearRequest(id=self._ceph_faults.pop(f.id)))
            return f"osd.{t['osd']} started"
        if f.kind == "oss-kill":
            from services.lustre.oss.daemon import fault_marker

            fault_marker(self.twin.manifest["lustre"]["data_dir"], t["name"]).unlink(missing_ok=True)
            return f"{t['name']} starts again and takes its OSTs back"
        if f.kind == "xid":
            node = self.twin.gpu_node(t["server"])
            if t["xid"] == 79:
                node.reboot()
                return f"{t['server']} rebooted"
            node.reset_gpu(t["gpu"])
            return f"{t['server']} GPU {t['gpu']} reset"
        if f.kind == "link-down":
            return self._link(t, enabled=True)
        if f.kind == "cut":
            return self._publish([], self._net().reconnect(t["host"]), f"{t['host']} reconnected")
        raise ValueError(f"unknown fault kind {f.kind!r}")

    # --- helpers ----------------------------------------------------------------------------
    def pids(self) -> dict[str, int]:
        """Every daemon's pid as the supervisor recorded it."""
        doc = json.loads(self.run.daemons.read_text())
        return {name: int(d.get("pid") or 0) for name, d in doc.get("daemons", {}).items()}

    def pid(self, name: str) -> int:
        pid = self.pids().get(name, 0)
        if not pid:
            raise RuntimeError(f"{name} has no pid in {self.run.daemons} (not running)")
        return pid

    def _osd_stop(self, f: PlannedFault) -> str:
        osd = f.target["osd"]
        a = self.twin.ceph()
        st = a.osd(osd, "SetFault", ceph_pb2.SetFaultRequest(stopped=True))
        rec = a.call("RecordFault", ceph_pb2.FaultRecordRequest(fault=ceph_pb2.CephFault(
            kind="stop", osd=osd, effect="stopped by the chaos schedule: marked down, refuses I/O")))
        self._ceph_faults[f.id] = rec.id
        return f"osd.{osd} {st.state}"

    def _oss_kill(self, name: str) -> str:
        from services.lustre.oss.daemon import fault_marker

        marker = fault_marker(self.twin.manifest["lustre"]["data_dir"], name)
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.write_text("oss-kill\n")
        pid = self.pid(name)
        os.kill(pid, signal.SIGKILL)
        partner = self.twin.daemon(name).get("partner")
        return f"{name} (pid {pid}) killed and kept down; {partner} takes its OSTs over"

    def _net(self) -> Any:
        from emulator.network.remote import RemoteNetwork

        return RemoteNetwork(self.run.control_socket)

    def _publish(self, raised: Any, cleared: Any, what: str) -> str:
        from emulator.network import events

        raised = raised if isinstance(raised, list) else [raised]
        events.publish(self.twin.manifest["broker"], self.twin.name, raised, cleared)
        return what

    def _link(self, t: dict[str, Any], enabled: bool) -> str:
        a, b, index = t["a"], t["b"], t["index"]   # index None: every parallel cable
        verb, which = ("up" if enabled else "down"), ("every cable" if index is None else f"cable {index}")
        if t["fabric"] == "compute" and self.twin.daemons("fabric"):
            # One fabric: the cable goes down in ibsim, OpenSM re-sweeps, the plane's routes follow.
            with self.twin.fabric() as fabric:
                swept = [fabric.call("SetPortState", system=node, port=port, enabled=enabled).resweep_seconds
                         for node, port in self._compute().ports_of_link(a, b, index)]
                return f"{a}-{b} {which} {verb} in the fabric ({len(swept)} ports; OpenSM re-swept in " \
                       f"{sum(swept):.2f} s)"
        net = self._net()
        if enabled:
            return self._publish([], net.link_up(a, b, index), f"{a}-{b} {which} up")
        return self._publish(net.link_down(a, b, index), [], f"{a}-{b} {which} down")

    def _compute(self) -> Any:
        if self._compute_map is None:
            from emulator.network.plan import make_network_plan
            from emulator.topology import load_topology
            from services.fabric.lft_routes import ComputeMap
            from services.fabric.netfile import make_fabric_plan

            topo = load_topology(self.run.read(self.run.config)["topology_file"])
            self._compute_map = ComputeMap(make_fabric_plan(topo), make_network_plan(topo, "ct0"))
        return self._compute_map
