"""The fabric manager's state and operations, shared by its gRPC service and its UFM-shaped REST API.

`FabricManager` owns one `Subnet` (ibsim + OpenSM ftree) and the `FabricState` read back from it
with infiniband-diags. Reads are served from that snapshot; a port change goes to ibsim
(`Unlink`/`ReLink`), waits for OpenSM's re-sweep, reads the fabric back again, then records an
event (kept in memory, pushed to watchers and to `on_event`, which the daemon points at the bus).
Changes are serialized; the blocking subnet calls run in a worker thread.

Views are plain dicts, in the twin's own field names (the gRPC messages use the same ones):

- a *port* is a cabled port of the plan, named as UFM names it: `<port GUID, 16 hex>_<number>`;
- a *system* is a box: a switch, or a GPU server with its eight single-port HCAs ("host");
- an SetPortState target is a switch name, an HCA node description ("gpu001 mlx5_3") or ibsim id
  ("gpu001-mlx5_3") with a port number, or a UFM port name.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable
from typing import Any

from services.fabric.balance import all_to_all_flows, leaf_capacity, ring_flows, route_balance
from services.fabric.model import ACTIVE, FabricState, RouteError
from services.fabric.netfile import HCA, SWITCH, FabricPlan, IbNode
from services.fabric.subnet import Subnet

MODELS = {SWITCH: "MQM9700", HCA: "ConnectX-7"}
VENDOR = "Mellanox"
EVENTS_KEPT = 1000
_PORT_NAME = re.compile(r"^([0-9a-fA-F]{16})_(\d+)$")
_SPEED_NAMES = {2.5: "SDR", 5.0: "DDR", 10.0: "QDR", 14.0625: "FDR", 25.78125: "EDR", 53.125: "HDR",
                106.25: "NDR"}


class FabricNotFound(LookupError):
    """An unknown system, port or endpoint; the message names it."""


class FabricInvalid(ValueError):
    """A request that cannot be carried out as asked (bad argument, no route)."""


def _hex(guid: int) -> str:
    return f"{guid:016x}"


class FabricManager:
    def __init__(self, plan: FabricPlan, subnet: Subnet, now: Callable[[], float] = time.time) -> None:
        self.plan = plan
        self.subnet = subnet
        self.now = now
        self.state = FabricState()
        self.events: list[dict[str, Any]] = []
        self.on_event: Callable[[dict[str, Any]], None] | None = None
        # Optional: the compute plane the fabric drives (daemon.ComputePlaneDriver): `cable(node,
        # port, enabled)` mirrors a port change on its veth, `install(state, nodes)` turns the
        # LFTs into its routes. Called (in a worker thread) around every port change.
        self.compute_plane: Any = None
        self.last_sweep_time = 0.0
        self.last_sweep_seconds = 0.0
        self._seq = 0
        self._lock = asyncio.Lock()
        self._watchers: set[asyncio.Queue[dict[str, Any]]] = set()
        self._disabled: dict[frozenset[tuple[str, int]], tuple[str, int]] = {}  # cable -> end unlinked
        self._by_port_name: dict[str, tuple[str, int]] = {}
        self._by_description = {n.description: n for n in plan.nodes.values()}
        self._servers = sorted({n.system for n in plan.hcas})
        for node in plan.nodes.values():
            for port in self._cabled(node):
                self._by_port_name[self.port_name(node, port)] = (node.id, port)

    # --- lifecycle ------------------------------------------------------------------------------

    def start(self, timeout: float = 60.0) -> None:
        """Blocking: bring the subnet up and read it back."""
        self.last_sweep_seconds = self.subnet.start(timeout=timeout)
        self.last_sweep_time = self.now()
        self.state = self.subnet.snapshot()

    def stop(self) -> None:
        self.subnet.stop()

    # --- naming ---------------------------------------------------------------------------------

    def _cabled(self, node: IbNode) -> list[int]:
        return [p for p in range(1, node.ports + 1) if self.plan.peer(node.id, p) is not None]

    @staticmethod
    def port_name(node: IbNode, port: int) -> str:
        return f"{_hex(node.port_guid(port))}_{port}"

    def node(self, name: str) -> IbNode:
        node = self.plan.nodes.get(name) or self._by_description.get(name)
        if node is None:
            if name in self._servers:
                raise FabricNotFound(f"{name!r} is a host with {sum(n.system == name for n in self.plan.hcas)} "
                                     f"HCAs: name one, e.g. '{name} mlx5_0'")
            raise FabricNotFound(f"no system {name!r} in the {self.plan.topology} fabric")
        return node

    def resolve_port(self, system: str, port: int = 0) -> tuple[IbNode, int]:
        m = _PORT_NAME.match(system.strip())
        if m:
            found = self._by_port_name.get(system.strip().lower())
            if found is None:
                raise FabricNotFound(f"no port named {system!r} in the {self.plan.topology} fabric")
            return self.plan.nodes[found[0]], found[1]
        node = self.node(system)
        if self.plan.peer(node.id, port) is None:
            cabled = self._cabled(node)
            raise FabricNotFound(f"{node.description} port {port} has no cable (cabled ports: "
                                 f"{_ranges(cabled)})")
        return node, port

    # --- views ----------------------------------------------------------------------------------

    def port_view(self, node: IbNode, port: int) -> dict[str, Any]:
        st = self.state.ports.get((node.guid, port))
        peer_id, peer_port = self.plan.peer(node.id, port) or ("", 0)
        peer = self.plan.nodes.get(peer_id)
        peer_st = self.state.ports.get((peer.guid, peer_port)) if peer else None
        cable = frozenset({(node.id, port), (peer_id, peer_port)})
        return {
            "name": self.port_name(node, port),
            "system": node.system,
            "system_guid": _hex(node.system_guid),
            "node": node.description,
            "node_id": node.id,
            "node_kind": node.kind,
            "role": node.role,
            "rail": node.rail,
            "number": port,
            "guid": _hex(node.port_guid(port)),
            "node_guid": _hex(node.guid),
            "lid": st.lid if st else 0,
            "logical_state": st.state if st else "Down",
            "physical_state": st.phys if st else "Polling",
            "active_width": (st.width or "") if st and st.active else "",
            "active_speed": _SPEED_NAMES.get(st.lane_gbps or 0.0, "") if st and st.active else "",
            "computer": node.kind == HCA,
            "peer_node": peer.description if peer else "",
            "peer_system": peer.system if peer else "",
            "peer_role": peer.role if peer else "",
            "peer_port": peer_port,
            "peer_guid": _hex(peer.port_guid(peer_port)) if peer else "",
            "peer_node_guid": _hex(peer.guid) if peer else "",
            "peer_lid": peer_st.lid if peer_st else 0,
            "disabled": cable in self._disabled,
        }

    def ports(self, system: str = "", computer_only: bool = False) -> list[dict[str, Any]]:
        nodes = list(self.plan.nodes.values())
        if system:
            if system in self._servers:
                nodes = [n for n in nodes if n.system == system]
            else:
                nodes = [self.node(system)]
        out = []
        for node in nodes:
            if computer_only and node.kind != HCA:
                continue
            out.extend(self.port_view(node, p) for p in self._cabled(node))
        return out

    def systems(self, kind: str = "") -> list[dict[str, Any]]:
        if kind not in ("", "switch", "host"):
            raise FabricInvalid(f"system type {kind!r}: use 'switch' or 'host'")
        out = []
        if kind in ("", "switch"):
            for sw in self.plan.switches:
                sys = self.state.systems.get(sw.guid)
                out.append({"name": sw.id, "guid": _hex(sw.system_guid), "type": "switch", "role": sw.role,
                            "model": MODELS[SWITCH], "vendor": VENDOR, "lid": (sys.lid or 0) if sys else 0,
                            "description": sw.description,
                            "ports": [self.port_name(sw, p) for p in self._cabled(sw)]})
        if kind in ("", "host"):
            for server in self._servers:
                hcas = [n for n in self.plan.hcas if n.system == server]
                out.append({"name": server, "guid": _hex(hcas[0].system_guid), "type": "host", "role": "",
                            "model": MODELS[HCA], "vendor": VENDOR, "lid": 0, "description": server,
                            "ports": [self.port_name(n, p) for n in hcas for p in self._cabled(n)]})
        return out

    def links(self) -> list[dict[str, Any]]:
        out = []
        for c in self.plan.cables:
            a, b = self.plan.nodes[c.a], self.plan.nodes[c.b]
            pa, pb = self.state.ports.get((a.guid, c.a_port)), self.state.ports.get((b.guid, c.b_port))
            active = bool(pa and pb and pa.state == ACTIVE and pb.state == ACTIVE)
            link = next((lk for lk in self.state.links if (a.guid, c.a_port) in (lk.a, lk.b)), None)
            out.append({"source_node": a.description, "source_port": c.a_port,
                        "source_guid": _hex(a.port_guid(c.a_port)), "source_node_guid": _hex(a.guid),
                        "destination_node": b.description, "destination_port": c.b_port,
                        "destination_guid": _hex(b.port_guid(c.b_port)), "destination_node_guid": _hex(b.guid),
                        "speed": link.speed if link and active else "", "active": active, "kind": c.kind})
        return out

    # --- routes and analysis ------------------------------------------------------------------------

    def endpoint_lid(self, node: str = "", server: str = "", rail: int = 0, lid: int = 0) -> int:
        if lid:
            if lid not in self.state.lid_owner():
                raise FabricNotFound(f"LID {lid} is not assigned in the fabric")
            return lid
        if node:
            n = self.node(node)
        elif server:
            try:
                n = self.plan.hca(server, rail)
            except KeyError as e:
                raise FabricNotFound(str(e.args[0])) from None
        else:
            raise FabricInvalid("an endpoint needs a node, a server and rail, or a LID")
        try:
            return self.state.lid_of(n.description)
        except KeyError as e:
            raise FabricInvalid(f"{n.description} has no LID now (port down?): {e.args[0]}") from None

    def route(self, src_lid: int, dst_lid: int) -> dict[str, Any]:
        try:
            r = self.state.route(src_lid, dst_lid)
        except RouteError as e:
            raise FabricInvalid(f"no route from LID {src_lid} to {dst_lid}: {e}") from None
        hops = [{"switch_name": self.state.systems[h.guid].description, "switch_guid": _hex(h.guid),
                 "in_port": h.in_port, "out_port": h.out_port} for h in r.hops]
        return {"src_lid": src_lid, "dst_lid": dst_lid, "hops": hops}

    def analyze(self, pattern: str = "ring") -> dict[str, Any]:
        pattern = pattern or "ring"
        if pattern == "ring":
            rails = max((n.rail or 0) for n in self.plan.hcas) + 1
            flows = ring_flows(self._servers, rails)
        elif pattern == "all_to_all":
            flows = all_to_all_flows(self.state)
        else:
            raise FabricInvalid(f"pattern {pattern!r}: use 'ring' or 'all_to_all'")
        caps = leaf_capacity(self.state)
        report = route_balance(self.state, flows, pattern)
        lo, hi = report.spread("up")
        return {
            "leaves": [{"leaf": c.leaf, "down_ports": c.down_ports, "up_ports": c.up_ports, "down_gbps": c.down_gbps,
                        "up_gbps": c.up_gbps, "non_blocking": c.non_blocking} for c in caps],
            "non_blocking": all(c.non_blocking for c in caps),
            "balance": {"pattern": pattern, "flows": report.flows, "routed": report.routed,
                        "unroutable": report.unroutable, "busiest": report.busiest(), "up_min": lo, "up_max": hi,
                        "balanced": report.balanced,
                        "loads": [{"switch_name": ld.switch, "port": ld.port, "peer": ld.peer,
                                   "peer_port": ld.peer_port, "direction": ld.direction, "flows": ld.flows}
                                  for ld in report.loads]},
        }

    def health(self) -> dict[str, Any]:
        ports = [self.port_view(n, p) for n in self.plan.nodes.values() for p in self._cabled(n)]
        down = [p for p in ports if p["logical_state"] != ACTIVE]
        return {"ports_total": len(ports), "ports_active": len(ports) - len(down), "down_ports": down,
                "sm_state": "MASTER" if self.subnet.sm_running else "DOWN", "sm_node": self.plan.sm_node,
                "routing_engine": "ftree", "sweeps": self.subnet.sweeps(),
                "last_sweep_time": self.last_sweep_time, "last_sweep_seconds": self.last_sweep_seconds}

    # --- changes and events ---------------------------------------------------------------------

    async def set_port_state(self, system: str, port: int, enabled: bool, timeout: float = 15.0) -> dict[str, Any]:
        """Disable (ibsim Unlink) or enable (ReLink) the cable at a port; OpenSM re-sweeps; the
        fabric is read back. Raises FabricNotFound (nothing changed) for an unknown port."""
        node, port = self.resolve_port(system, port)
        peer = self.plan.peer(node.id, port)
        assert peer is not None
        cable = frozenset({(node.id, port), peer})
        async with self._lock:
            if enabled == (cable not in self._disabled):
                return {"port": self.port_view(node, port), "changed": False, "resweep_seconds": 0.0,
                        "trap_128": False}
            plane = self.compute_plane
            if plane is not None:   # the veth first: up before routes use it, down before OpenSM re-routes
                await asyncio.to_thread(plane.cable, node.id, port, enabled)
            if enabled:
                end = self._disabled[cable]
                sweep = await asyncio.to_thread(self.subnet.link_up, end[0], end[1], timeout)
                del self._disabled[cable]
            else:
                sweep = await asyncio.to_thread(self.subnet.link_down, node.id, port, timeout)
                self._disabled[cable] = (node.id, port)
            self.last_sweep_time, self.last_sweep_seconds = self.now(), sweep.seconds
            self.state = await asyncio.to_thread(self.subnet.snapshot)
            if plane is not None:
                await asyncio.to_thread(plane.install, self.state, (node.id, port))
            view = self.port_view(node, port)
            peer_node = self.plan.nodes[peer[0]]
            kind = "port_up" if enabled else "port_down"
            self.emit({
                "kind": kind, "severity": "Info" if enabled else "Warning", "system": node.system,
                "node": node.description, "port": port, "port_name": view["name"],
                "message": f"{node.description} port {port} (to {peer_node.description} port {peer[1]}) "
                           f"{'enabled' if enabled else 'disabled'}; OpenSM re-swept in {sweep.seconds:.2f} s"
                           f"{' after trap 128' if sweep.trap_128 else ''}",
                "resweep_seconds": sweep.seconds, "trap_128": sweep.trap_128,
            })
            return {"port": view, "changed": True, "resweep_seconds": sweep.seconds, "trap_128": sweep.trap_128}

    def emit(self, event: dict[str, Any]) -> dict[str, Any]:
        self._seq += 1
        event = {"seq": self._seq, "time": self.now(), **event}
        self.events.append(event)
        del self.events[:-EVENTS_KEPT]
        for q in self._watchers:
            q.put_nowait(event)
        if self.on_event is not None:
            self.on_event(event)
        return event

    def watch(self) -> asyncio.Queue[dict[str, Any]]:
        q: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self._watchers.add(q)
        return q

    def unwatch(self, q: asyncio.Queue[dict[str, Any]]) -> None:
        self._watchers.discard(q)


def _ranges(ports: list[int]) -> str:
    out: list[str] = []
    for p in ports:
        if out and out[-1].rsplit("-", 1)[-1] == str(p - 1):
            out[-1] = f"{out[-1].split('-')[0]}-{p}"
        else:
            out.append(str(p))
    return ", ".join(out) or "none"
