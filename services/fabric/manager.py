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

What an operator changed (disabled cables, unhealthy ports, partitions) and the event log are kept
in the daemon's store (`FabricStore`, committed before a request is answered) and applied again when
the manager starts, so a restarted fabric manager comes back to the fabric it left, not to a healthy one.
"""

from __future__ import annotations

import asyncio
import logging
import math
import re
import time
from collections.abc import Callable
from typing import Any

from emulator.network.errors import NetworkError
from emulator.process import Backoff
from services.fabric.alarms import LINK_DOWN, UNHEALTHY, Alarms
from services.fabric.balance import all_to_all_flows, leaf_capacity, ring_flows, route_balance
from services.fabric.collectives import CollectiveError, Estimate, FabricView, estimate
from services.fabric.counters import CounterError
from services.fabric.errors import FabricInvalid, FabricNotFound
from services.fabric.model import ACTIVE, FabricState, RouteError
from services.fabric.netfile import HCA, SWITCH, FabricPlan, IbNode
from services.fabric.partitions import DEFAULT_PKEY, Partition, PartitionError
from services.fabric.sharp import AggregationManager, SharpError, SharpJob
from services.fabric.store import FabricStore, Saved
from services.fabric.subnet import Subnet, SubnetError

log = logging.getLogger(__name__)

MODELS = {SWITCH: "MQM9700", HCA: "ConnectX-7"}
VENDOR = "Mellanox"
EVENTS_KEPT = 1000
_PORT_NAME = re.compile(r"^([0-9a-fA-F]{16})_(\d+)$")
_SPEED_NAMES = {2.5: "SDR", 5.0: "DDR", 10.0: "QDR", 14.0625: "FDR", 25.78125: "EDR", 53.125: "HDR",
                106.25: "NDR"}


def _hex(guid: int) -> str:
    return f"{guid:016x}"


class FabricManager:
    def __init__(self, plan: FabricPlan, subnet: Subnet, now: Callable[[], float] = time.time,
                 store: FabricStore | None = None) -> None:
        self.plan = plan
        self.subnet = subnet
        self.now = now
        self.store = store   # None: nothing outlives the process
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
        # Cables down because the network powered a switch off or cut a host (`follow_network`):
        # cable -> (the end unlinked in ibsim, the network fault that did it).
        self._network_down: dict[frozenset[tuple[str, int]], tuple[tuple[str, int], str]] = {}
        self.unhealthy: dict[str, dict[str, Any]] = {}   # UFM port name -> its UnhealthyPort view
        self.alarms = Alarms()
        self._views: dict[tuple[str, ...], FabricView] = {}   # per job's servers, for the current state
        self._port_views: dict[tuple[str, int], dict[str, Any]] = {}   # for the current state; not to be mutated
        self.version = 0   # bumped at every read-back of the fabric: what the views depend on
        self._full_read: asyncio.Task[None] | None = None
        self._keeper: asyncio.Task[None] | None = None   # keep_subnet_up, started by `watch_subnet`
        self._follower: asyncio.Task[None] | None = None   # the network's faults, by `watch_network`
        self.sharp = AggregationManager(self.state)   # SHARP's aggregation manager, next to the SM
        self._by_port_name: dict[str, tuple[str, int]] = {}
        self._by_description = {n.description: n for n in plan.nodes.values()}
        self._servers = sorted({n.system for n in plan.hcas})
        for node in plan.nodes.values():
            for port in self._cabled(node):
                self._by_port_name[self.port_name(node, port)] = (node.id, port)

    # --- lifecycle ------------------------------------------------------------------------------

    def start(self, timeout: float = 60.0) -> None:
        """Blocking: bring the subnet up, apply what was saved, and read it back."""
        saved = self.store.load(EVENTS_KEPT) if self.store is not None else Saved()
        self.events = saved.events
        self._seq = saved.events[-1]["seq"] if saved.events else 0
        self.last_sweep_seconds = self.subnet.start(timeout=timeout)
        self.last_sweep_time = self.now()
        self._set_state(self.subnet.snapshot())   # discovered with every cable up
        if self._restore(saved, timeout):
            self._set_state(self.subnet.snapshot(reuse_discovery=True))

    def _set_state(self, state: FabricState) -> None:
        """A new read-back of the fabric: what depends on it follows (SHARP trees are re-checked,
        each change an event)."""
        self.state = state
        self.version += 1
        self._views.clear()
        self._port_views.clear()
        for change in self.sharp.update(state):
            if change.new_root is None:
                kind, severity, what = "sharp_tree_error", "Warning", "lost: the job falls back to non-SHARP algorithms"
            elif change.old_root is None:
                kind, severity, what = "sharp_tree_recovered", "Info", f"rebuilt on {change.new_root}"
            else:
                kind, severity, what = "sharp_tree_moved", "Info", f"moved from {change.old_root} to {change.new_root}"
            self.emit({"kind": kind, "severity": severity, "system": change.new_root or change.old_root or "",
                       "message": f"SHARP tree {change.tree_id} of job {change.job_id} (rail {change.rail}) {what}: "
                                  f"{change.reason}"})

    def _save(self) -> None:
        if self.store is not None:
            self.store.save(list(self._disabled.values()), self.unhealthy, self.subnet.partition_list)

    def _restore(self, saved: Saved, timeout: float, alarms: bool = True) -> bool:
        """Apply what `_save` kept to a subnet just started; whether there was anything. `alarms`:
        raise the alarms that go with it (not when they are still open, after a restart of ibsim)."""
        self._disabled.clear()
        self.unhealthy.clear()
        for node_id, port in saved.disabled:
            peer = self.plan.peer(node_id, port)
            if peer is None:
                continue
            self.subnet.link_down(node_id, port, timeout)
            self._disabled[frozenset({(node_id, port), peer})] = (node_id, port)
            if alarms:
                self._raise_link_alarm(self.plan.nodes[node_id], port)
        if saved.partitions:
            self.subnet.set_partitions(saved.partitions, timeout)
        for name, view in saved.unhealthy.items():
            if name in self._by_port_name:
                self.unhealthy[name] = view
                node_id, port = self._by_port_name[name]
                if alarms:
                    self._raise_unhealthy_alarm(self.plan.nodes[node_id], port, view["action"])
        return bool(saved.disabled or saved.unhealthy or saved.partitions)

    # --- ibsim and OpenSM kept running ----------------------------------------------------------

    def watch_subnet(self, poll: float = 0.2, timeout: float = 60.0) -> None:
        """From now on, restart ibsim or OpenSM when one dies (`keep_subnet_up`); call in the loop."""
        self._keeper = asyncio.create_task(self.keep_subnet_up(poll, timeout), name="fabric-keep-subnet-up")

    async def keep_subnet_up(self, poll: float = 0.2, timeout: float = 60.0) -> None:
        """Restart what died, with backoff (emulator.process.Backoff): OpenSM alone over the running
        ibsim; after ibsim, both, with the operator's changes applied again. The fabric is read back
        and the compute plane given its routes. Gives up (and logs it) on a crash loop."""
        backoff = {"ibsim": Backoff(), "opensm": Backoff()}
        while True:
            await asyncio.sleep(poll)
            dead = self.subnet.dead()
            if not dead:
                continue
            which = "ibsim" if "ibsim" in dead else "opensm"
            delay = backoff[which].delay(time.monotonic() - self.subnet.started_at.get(which, 0.0))
            if delay is None:
                log.error("%s keeps dying; not restarting it again (the fabric is served as last read)", which)
                return
            log.warning("%s died; restarting %s in %.1f s", ", ".join(dead), which, delay)
            if which == "ibsim":
                self.subnet.kill_diags()   # a read-back holding the lock would wait for ibsim's answers
            await asyncio.sleep(delay)
            async with self._lock:
                try:
                    state = await asyncio.to_thread(self._restart_subnet, which, timeout)
                except SubnetError as e:
                    log.warning("restarting %s failed: %s", which, e)
                    continue
                self._set_state(state)
                if self.compute_plane is not None:
                    await asyncio.to_thread(self.compute_plane.install, state)
            log.warning("%s restarted; OpenSM swept in %.2f s", which, self.last_sweep_seconds)

    def _restart_subnet(self, which: str, timeout: float) -> FabricState:
        """Blocking: `which` ("ibsim" or "opensm") again, and the fabric read back."""
        if which == "opensm":
            self.last_sweep_seconds = self.subnet.restart_opensm(timeout)
            self.last_sweep_time = self.now()
            return self.subnet.snapshot(reuse_discovery=True)
        saved = Saved(list(self._disabled.values()), dict(self.unhealthy), self.subnet.partition_list)
        self._network_down = {}   # a new ibsim has every cable up: `follow_network` takes them down again
        self.subnet.stop()
        self.last_sweep_seconds = self.subnet.start(timeout=timeout)
        self.last_sweep_time = self.now()
        state = self.subnet.snapshot()   # discovered with every cable up, as at `start`
        if self._restore(saved, timeout, alarms=False):
            state = self.subnet.snapshot(reuse_discovery=True)
        return state

    def stop(self) -> None:
        self.subnet.stop()

    async def cancel_background(self) -> None:
        """Before `stop`: no more restarts, and drop a read-back still running (its diags would meet
        a stopped ibsim)."""
        for task in (self._keeper, self._follower, self._full_read):
            if task is not None and not task.done():
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)

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
        """A port as the fabric shows it now (cached until the next read-back: do not mutate)."""
        view = self._port_views.get((node.id, port))
        if view is None:
            view = self._port_views[(node.id, port)] = self._port_view(node, port)
        return view

    def _port_view(self, node: IbNode, port: int) -> dict[str, Any]:
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
            raise FabricInvalid(f"no route from LID {src_lid} to {dst_lid}: {e}", "FAILED_PRECONDITION") from None
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
        congested = self._over_fair_share(report.loads)
        return {
            "degraded_servers": self.degraded_servers(),
            "down_links": [lk for lk in self.links() if not lk["active"]],
            "degraded_paths": self._paths_crossing(flows, congested) if congested else 0,
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

    def degraded_servers(self) -> list[dict[str, Any]]:
        """Servers with a compute HCA whose port is not Active."""
        down: dict[str, list[str]] = {}
        rails: dict[str, int] = {}
        for hca in self.plan.hcas:
            rails[hca.system] = rails.get(hca.system, 0) + 1
            st = self.state.ports.get((hca.guid, 1))
            if st is None or st.state != ACTIVE:
                down.setdefault(hca.system, []).append(hca.description)
        return [{"server": s, "rails_up": rails[s] - len(d), "rails": rails[s], "down": d}
                for s, d in sorted(down.items())]

    def _over_fair_share(self, loads: list[Any]) -> set[tuple[str, int]]:
        """Switch-to-switch links carrying more flows than their share would be if the switch had
        all its cables in that direction up: where faults pushed traffic together."""
        cables: dict[tuple[str, str], int] = {}
        for c in self.plan.cables:
            a, b = self.plan.nodes[c.a], self.plan.nodes[c.b]
            if a.kind == SWITCH and b.kind == SWITCH:
                for x in (a, b):
                    key = (x.description, "up" if x.role == "leaf" else "down")
                    cables[key] = cables.get(key, 0) + 1
        total: dict[tuple[str, str], int] = {}
        for ld in loads:
            total[(ld.switch, ld.direction)] = total.get((ld.switch, ld.direction), 0) + ld.flows
        return {(ld.switch, ld.port) for ld in loads
                if ld.flows > math.ceil(total[(ld.switch, ld.direction)] / cables.get((ld.switch, ld.direction), 1))}

    def _paths_crossing(self, flows: list[tuple[str, str]], links: set[tuple[str, int]]) -> int:
        """How many of `flows` cross one of `links` ((switch description, out port))."""
        owners = self.state.lid_owner()
        count = 0
        for src, dst in flows:
            try:
                r = self.state.route(self.state.lid_of(src), self.state.lid_of(dst), owners)
            except (KeyError, RouteError):
                continue
            if any((self.state.systems[h.guid].description, h.out_port) in links for h in r.hops):
                count += 1
        return count

    def health(self) -> dict[str, Any]:
        ports = [self.port_view(n, p) for n in self.plan.nodes.values() for p in self._cabled(n)]
        down = [p for p in ports if p["logical_state"] != ACTIVE]
        return {"ports_total": len(ports), "ports_active": len(ports) - len(down), "down_ports": down,
                "sm_state": "MASTER" if self.subnet.sm_running else "DOWN", "sm_node": self.subnet.sm_node,
                "routing_engine": "ftree", "sweeps": self.subnet.sweeps(),
                "last_sweep_time": self.last_sweep_time, "last_sweep_seconds": self.last_sweep_seconds}

    # --- changes and events ---------------------------------------------------------------------

    async def set_port_state(self, system: str, port: int, enabled: bool, timeout: float = 15.0,
                             more_ports: tuple[int, ...] = ()) -> dict[str, Any]:
        """Disable (ibsim Unlink) or enable (ReLink) the cable at a port, and at `more_ports` of the
        same system, as one change: OpenSM re-sweeps once, the fabric is read back. Raises
        FabricNotFound / FabricInvalid (nothing changed) for an unknown or held port, SubnetError
        naming the step that failed (and nothing changed: see `_transaction`)."""
        first = self.resolve_port(system, port)
        resolved = [first] + [self.resolve_port(first[0].id, p) for p in more_ports if p != first[1]]
        cables: dict[frozenset[tuple[str, int]], tuple[IbNode, int]] = {}
        for node, p in resolved:
            peer = self.plan.peer(node.id, p)
            assert peer is not None
            held = [n for n in (self.port_name(node, p), self.port_name(self.plan.nodes[peer[0]], peer[1]))
                    if n in self.unhealthy]
            if enabled and held:
                raise FabricInvalid(f"{node.description} port {p} is marked unhealthy ({held[0]}): mark it healthy "
                                    f"to bring it back")
            cables.setdefault(frozenset({(node.id, p), peer}), (node, p))
        node, port = first
        async with self._lock:
            todo = {c: end for c, end in cables.items() if enabled == (c in self._disabled)}
            if not todo:
                return {"port": self.port_view(node, port), "changed": False, "resweep_seconds": 0.0,
                        "trap_128": False}
            # The end that was unlinked (and alarmed) is the one to relink.
            ends = [self._disabled[c] if enabled else (n.id, p) for c, (n, p) in todo.items()]
            sweep, state = await self._transaction(ends, enabled, timeout)
            self.last_sweep_time, self.last_sweep_seconds = self.now(), sweep.seconds
            self._set_state(state)
            self._full_read = asyncio.create_task(self._read_everything(), name="fabric-read-back")
            for cable, (n, p) in todo.items():
                end = self._disabled.pop(cable) if enabled else (n.id, p)
                if enabled:
                    self.alarms.clear(self.port_name(self.plan.nodes[end[0]], end[1]), LINK_DOWN)
                else:
                    self._disabled[cable] = end
                    self._raise_link_alarm(n, p)
            self._save()
            for n, p in todo.values():
                self._emit_port_change(n, p, enabled, sweep, "enabled" if enabled else "disabled")
            return {"port": self.port_view(node, port), "changed": True, "resweep_seconds": sweep.seconds,
                    "trap_128": sweep.trap_128}

    def _emit_port_change(self, n: IbNode, p: int, enabled: bool, sweep: Any, how: str) -> None:
        """The port_up / port_down event of a cable change (`how`: "disabled", "by network fault ...")."""
        peer_id, peer_port = self.plan.peer(n.id, p) or ("", 0)
        seconds, trap = (sweep.seconds, sweep.trap_128) if sweep is not None else (0.0, False)
        self.emit({
            "kind": "port_up" if enabled else "port_down", "severity": "Info" if enabled else "Warning",
            "system": n.system, "node": n.description, "port": p, "port_name": self.port_name(n, p),
            "message": f"{n.description} port {p} (to {self.plan.nodes[peer_id].description} port "
                       f"{peer_port}) {how}; OpenSM re-swept in "
                       f"{seconds:.2f} s{' after trap 128' if trap else ''}",
            "resweep_seconds": seconds, "trap_128": trap,
        })

    async def _transaction(self, ends: list[tuple[str, int]], enabled: bool, timeout: float) -> tuple[Any, FabricState]:
        """Change cables on every plane, or on none. The steps, in order: the compute plane's veths
        (down before OpenSM re-routes, up before routes use them), ibsim and OpenSM's re-sweep, the
        read-back of port states and LFTs, OpenSM's routes into the compute plane. If a step fails,
        the ones done are undone in reverse, and SubnetError names the failed step (and any undo
        that failed too). Returns the re-sweep and the fabric read back; commits nothing itself."""
        what = "up" if enabled else "down"
        cables = ", ".join(f"{self.plan.nodes[n].description} port {p}" for n, p in ends)
        plane = self.compute_plane
        undo: list[tuple[str, Callable[[], Any]]] = []
        step = ""
        try:
            if plane is not None:
                step = f"network: take the compute plane's veths of {cables} {what}"
                mark = await asyncio.to_thread(plane.cables, ends, enabled)
                undo.append(("the veths", lambda: plane.restore(mark)))
            step = f"fabric: {'ReLink' if enabled else 'Unlink'} {cables} in ibsim and OpenSM's re-sweep"
            undo.append(("ibsim's cables", lambda: self.subnet.set_links(ends, not enabled, timeout)))
            sweep = await asyncio.to_thread(self.subnet.set_links, ends, enabled, timeout)
            step = "fabric: read back the port states and LFTs"
            at_ends = {n for end in ends for n, _ in (end, self.plan.peer(*end) or end)}
            switches = sorted(n for n in at_ends if self.plan.nodes[n].kind == SWITCH)
            state = await asyncio.to_thread(self._read_back, switches, timeout)
            if plane is not None:
                step = "network: install OpenSM's routes in the compute plane"
                await asyncio.to_thread(plane.install, state, ends, True)
            return sweep, state
        except (SubnetError, NetworkError, OSError, KeyError) as e:
            failed = []
            for name, action in reversed(undo):
                try:
                    await asyncio.to_thread(action)
                except Exception as u:  # noqa: BLE001  (every undo is tried; each failure is reported)
                    failed.append(f"{name}: {u}")
            if plane is not None:   # the kernel dropped the routes over a veth that went down, even briefly
                try:
                    await asyncio.to_thread(plane.install, self.state, ends, True)
                except Exception as u:  # noqa: BLE001
                    failed.append(f"the compute plane's routes: {u}")
            if failed:
                outcome = "rolling back failed too, the planes may disagree: " + "; ".join(failed)
            else:
                outcome = "rolled back, nothing changed"
            raise SubnetError(f"{step} failed: {e} ({outcome})") from None

    def _cut_off(self, held: set[frozenset[tuple[str, int]]]) -> set[str]:
        """The switches with every cable in `held` (down): no diag or SM reaches them."""
        return {sw.id for sw in self.plan.switches
                if all(frozenset({(sw.id, p), self.plan.peer(sw.id, p)}) in held for p in self._cabled(sw))}

    def watch_network(self, poll: float = 0.5) -> None:
        """From now on, follow the compute plane's own faults (`follow_network`); call in the loop,
        once `compute_plane` is set."""
        self._follower = asyncio.create_task(self._follow_network_loop(poll), name="fabric-follow-network")

    async def _follow_network_loop(self, poll: float) -> None:
        while True:
            await asyncio.sleep(poll)
            try:
                down = await asyncio.to_thread(self.compute_plane.nodes_down)
                await self.follow_network(down)
            except (NetworkError, SubnetError) as e:   # the next poll tries again
                log.warning("could not follow the network's faults: %s", e)

    async def follow_network(self, down: dict[tuple[str, int], str], timeout: float = 15.0) -> bool:
        """The network's own faults in the fabric: `down` are the ports whose compute-plane veths the
        network took down itself (a switch powered off, a host cut: `twin net fault switch-down|cut`),
        each with the fault that did it. Their cables go down in ibsim too (and come back when they are
        no longer listed), OpenSM routes around them, and its new routes become the compute plane's.
        The veths are the network's: they are not touched. Whether anything changed."""
        wanted: dict[frozenset[tuple[str, int]], tuple[tuple[str, int], str]] = {}
        for end, why in sorted(down.items()):
            peer = self.plan.peer(*end)
            cable = frozenset({end, peer}) if peer is not None else None
            if cable is not None and cable not in self._disabled:
                wanted.setdefault(cable, (end, why))
        async with self._lock:
            went = {c: v for c, v in wanted.items() if c not in self._network_down}
            came = {c: v for c, v in self._network_down.items() if c not in wanted and c not in self._disabled}
            if not went and not came:
                return False
            sweep = None
            cut_off = self._cut_off(set(wanted) | set(self._disabled))
            standby = next((n.id for n in (*self.plan.spines, *self.plan.switches) if n.id not in cut_off), None)
            if self.subnet.sm_node in cut_off and standby:   # a standby SM on a switch still cabled takes over
                log.warning("OpenSM's switch %s goes down: OpenSM moves to %s", self.subnet.sm_node, standby)
                await asyncio.to_thread(self.subnet.move_sm, standby, timeout)
            for group, enabled in ((went, False), (came, True)):
                # Only what ibsim does not have yet: a try that failed half-way is taken up again.
                ends = [end for end, _ in group.values() if self.subnet.unlinked(*end) == enabled]
                if ends:
                    sweep = await asyncio.to_thread(self.subnet.set_links, ends, enabled, timeout)
            switches = sorted({n for c in (*went, *came) for n, _ in c
                               if self.plan.nodes[n].kind == SWITCH and n not in cut_off})
            state = await asyncio.to_thread(self._read_back, switches, timeout)
            self._network_down = wanted
            self.last_sweep_time, self.last_sweep_seconds = self.now(), sweep.seconds if sweep else 0.0
            self._set_state(state)
            if self.compute_plane is not None:
                changed = [end for end, _ in (*went.values(), *came.values())]
                await asyncio.to_thread(self.compute_plane.install, state, changed)
            for group, enabled in ((went, False), (came, True)):
                for (node_id, port), why in group.values():
                    self._emit_port_change(self.plan.nodes[node_id], port, enabled, sweep,
                                           f"up, network fault {why} cleared" if enabled else
                                           f"down by network fault {why}")
        return True

    def _read_back(self, switches: list[str], timeout: float, attempts: int = 3) -> FabricState:
        """The fabric after a change, with the LFTs of `switches` read again. A re-sweep that began
        before the last of several cable changes (a trap from the first starts one) leaves tables
        that still send some LIDs out of a port that is now down, or that cannot be read at all
        from the diags' host: then OpenSM is asked for another sweep and the tables read again.
        SubnetError when they still are after `attempts` reads (a fabric split in two, say)."""
        problem = ""
        for attempt in range(attempts):
            if attempt:
                self.subnet.resweep(timeout)
            try:
                state = self.subnet.refresh(self.state, switches)
            except SubnetError as e:
                problem = str(e)
                continue
            stale = []
            for name in switches:
                guid = self.plan.nodes[name].guid
                for lid, port in state.lfts.get(guid, {}).items():
                    p = state.ports.get((guid, port))
                    if port and (p is None or not p.active):
                        stale.append((name, lid, port))
            if not stale:
                return state
            problem = f"{len(stale)} forwarding-table entries still use ports that are down"
        raise SubnetError(f"{problem} (read {attempts} times, after a re-sweep each time)")

    async def _read_everything(self) -> None:
        """Read every switch's table again after a change; a table that differs from what was
        served is taken over (and given to the compute plane)."""
        async with self._lock:
            try:
                state = await asyncio.to_thread(self.subnet.snapshot, True)
            except SubnetError as e:   # stopping, or OpenSM died: the next change reads again
                log.warning("fabric read-back after a change failed: %s", e)
                return
            if state.lfts == self.state.lfts and state.ports == self.state.ports:
                return
            self._set_state(state)
            if self.compute_plane is not None:
                await asyncio.to_thread(self.compute_plane.install, state)

    async def settled(self) -> None:
        """Wait until the read-back behind the last change is done."""
        task = self._full_read
        if task is not None:
            await asyncio.shield(task)

    def _object_path(self, node: IbNode, port: int) -> str:
        if node.kind == HCA:
            return f"Computer: {node.system} / {node.description.split(' ', 1)[-1]}"
        return f"Switch: {node.description} / {port}"

    def _raise_link_alarm(self, node: IbNode, port: int) -> None:
        peer_id, peer_port = self.plan.peer(node.id, port) or ("", 0)
        peer = self.plan.nodes.get(peer_id)
        self.alarms.raise_(self.now(), object_name=self.port_name(node, port),
                           object_path=self._object_path(node, port), name=LINK_DOWN, description="Link went down",
                           reason=f"{node.description} port {port} to {peer.description if peer else '?'} port "
                                  f"{peer_port} is down (disabled by the operator)", severity="Critical")

    def _raise_unhealthy_alarm(self, node: IbNode, port: int, action: str) -> None:
        self.alarms.raise_(self.now(), object_name=self.port_name(node, port),
                           object_path=self._object_path(node, port), name=UNHEALTHY,
                           description="Port marked unhealthy",
                           reason=f"{node.description} port {port} marked unhealthy (MANUAL), action {action}")

    async def reset_port(self, system: str, port: int = 0, timeout: float = 15.0) -> dict[str, Any]:
        """UFM's port_reset: the link goes down and comes back (two traps, two re-sweeps). A port
        that is disabled is refused: enable it instead."""
        node, port = self.resolve_port(system, port)
        if self.port_view(node, port)["disabled"]:
            raise FabricInvalid(f"{node.description} port {port} is disabled: enable it rather than reset it")
        name = self.port_name(node, port)
        if name in self.unhealthy:
            raise FabricInvalid(f"{node.description} port {port} is marked unhealthy: mark it healthy first")
        await self.set_port_state(name, 0, False, timeout)
        r = await self.set_port_state(name, 0, True, timeout)
        self.alarms.clear(name, LINK_DOWN)
        return r

    def unhealthy_ports(self) -> list[dict[str, Any]]:
        return [self.unhealthy[k] for k in sorted(self.unhealthy)]

    async def set_port_health(self, ports: list[str], healthy: bool, action: str = "isolate",
                              timeout: float = 15.0) -> list[dict[str, Any]]:
        """UFM's unhealthy ports: marking a port unhealthy isolates it (its cable is taken down and
        OpenSM routes around it); marking it healthy brings it back. Every name is checked before
        anything changes."""
        action = action or "isolate"
        if action not in ("isolate", "no_discover"):
            raise FabricInvalid(f"action {action!r}: use 'isolate' or 'no_discover'")
        if not ports:
            raise FabricInvalid("which ports? give one or more UFM port names ('<port guid>_<number>')")
        resolved = [self.resolve_port(name) for name in ports]
        names = [self.port_name(n, p) for n, p in resolved]
        if healthy:
            strangers = [n for n in names if n not in self.unhealthy]
            if strangers:
                raise FabricInvalid(f"not marked unhealthy: {', '.join(strangers)}")
        for (node, port), name in zip(resolved, names, strict=True):
            if healthy:
                view = self.unhealthy.pop(name)
                self.alarms.clear(name, UNHEALTHY)
                if view.get("took_down"):
                    await self.set_port_state(name, 0, True, timeout)
                self._save()
            elif name not in self.unhealthy:
                took_down = not self.port_view(node, port)["disabled"]
                if took_down:
                    await self.set_port_state(name, 0, False, timeout)
                peer_id, peer_port = self.plan.peer(node.id, port) or ("", 0)
                self.unhealthy[name] = {"name": name, "node": node.description, "port": port,
                                        "peer_node": self.plan.nodes[peer_id].description if peer_id else "",
                                        "peer_port": peer_port, "action": action, "condition": "MANUAL",
                                        "time": self.now(), "took_down": took_down}
                self._raise_unhealthy_alarm(node, port, action)
                self._save()
        return self.unhealthy_ports()

    # --- the collective-time model on the live fabric ---------------------------------------------

    def fabric_view(self, servers: list[str], sharp: bool = False) -> FabricView:
        """What the collective model reads for a job on `servers`: each server's rails up, and the
        worst spine-link sharing its rings meet on the current routes. Cached per state."""
        key = tuple(servers)
        view = self._views.get(key)
        if view is None:
            rails = max((n.rail or 0) for n in self.plan.hcas) + 1
            report = route_balance(self.state, ring_flows(list(servers), rails), "ring")
            view = FabricView.from_state(self.state, servers, rails=rails, busiest_flows=report.busiest())
            self._views[key] = view
        return view if view.sharp == sharp else FabricView(view.rails_up, view.rails, view.congestion, sharp)

    def estimate_collective(self, op: str, ranks: int, size: int, algorithm: str = "auto",
                            servers: list[str] | None = None, gpus_per_server: int = 0,
                            sharp: bool = False) -> tuple[Estimate, FabricView]:
        per_server = gpus_per_server or min(8, max(ranks, 1))
        want = max(1, math.ceil(ranks / per_server))
        if servers:
            unknown = [s for s in servers if s not in self._servers]
            if unknown:
                raise FabricNotFound(f"no server {unknown[0]!r} in the {self.plan.topology} fabric")
            if len(set(servers)) != len(servers):
                raise FabricInvalid("a server is listed twice")
            if len(servers) < want:
                raise FabricInvalid(f"{ranks} ranks at {per_server} per server need {want} servers, "
                                    f"{len(servers)} given")
        else:
            if want > len(self._servers):
                raise FabricInvalid(f"{ranks} ranks at {per_server} per server need {want} servers; the "
                                    f"{self.plan.topology} fabric has {len(self._servers)}")
            servers = self._servers[:want]
        view = self.fabric_view(list(servers), sharp)
        try:
            est = estimate(op, size, ranks, algorithm or "auto", view, gpus_per_server or None)
        except CollectiveError as e:
            raise FabricInvalid(str(e)) from None
        return est, view

    # --- partitions (PKeys) and port counters ------------------------------------------------------

    def _guid_port(self, guid: int) -> tuple[IbNode, int] | None:
        for node in self.plan.nodes.values():
            for port in ((0,) if node.kind == SWITCH else range(1, node.ports + 1)):
                if node.port_guid(port) == guid:
                    return node, port
        return None

    def partition_view(self, p: Partition) -> dict[str, Any]:
        members = []
        for guid, membership in p.members:
            where = self._guid_port(guid)
            members.append({"guid": _hex(guid), "membership": membership,
                            "node": where[0].description if where else "", "port": where[1] if where else 0})
        return {"name": p.name, "pkey": p.pkey, "ip_over_ib": p.ipoib, "members": members,
                "all_ports": p.pkey == DEFAULT_PKEY}

    def partitions(self) -> list[dict[str, Any]]:
        default = {"name": "Default", "pkey": DEFAULT_PKEY, "ip_over_ib": True, "members": [], "all_ports": True}
        return [default, *(self.partition_view(p) for p in self.subnet.partition_list)]

    def partition(self, pkey: int) -> dict[str, Any]:
        for p in self.partitions():
            if p["pkey"] == pkey:
                return p
        raise FabricNotFound(f"no partition with PKey {pkey:#06x}")

    @staticmethod
    def _member(guid: str, membership: str) -> tuple[int, str]:
        try:
            return int(guid.removeprefix("0x"), 16), membership or "full"
        except ValueError:
            raise FabricInvalid(f"member GUID {guid!r} is not hexadecimal") from None

    async def set_partition(self, pkey: int, members: list[tuple[str, str]], name: str = "",
                            ip_over_ib: bool = False, timeout: float = 15.0) -> dict[str, Any]:
        """Create the partition `pkey`, or replace its members; OpenSM re-reads partitions.conf and
        programs the members' P_Key tables. Bad input (PKey, member, name) changes nothing."""
        if pkey == DEFAULT_PKEY:
            raise FabricInvalid("the default partition 0x7fff holds every port and is not changed")
        parsed = tuple(self._member(g, m) for g, m in members)
        async with self._lock:
            current = self.subnet.partition_list
            old = next((p for p in current if p.pkey == pkey), None)
            new = Partition(name or (old.name if old else f"api_pkey_{pkey:#x}"), pkey, parsed, ip_over_ib)
            rest = [p for p in current if p.pkey != pkey]
            try:
                await asyncio.to_thread(self.subnet.set_partitions, [*rest, new], timeout)
            except PartitionError as e:
                raise FabricInvalid(str(e)) from None
            self._save()
            self.emit({"kind": "partition_set", "severity": "Info", "system": "",
                       "message": f"partition {new.name} ({pkey:#06x}) {'updated' if old else 'created'} with "
                                  f"{len(parsed)} members"})
        return self.partition_view(new)

    async def delete_partition(self, pkey: int, timeout: float = 15.0) -> dict[str, Any]:
        if pkey == DEFAULT_PKEY:
            raise FabricInvalid("the default partition 0x7fff cannot be deleted")
        async with self._lock:
            current = self.subnet.partition_list
            old = next((p for p in current if p.pkey == pkey), None)
            if old is None:
                raise FabricNotFound(f"no partition with PKey {pkey:#06x}")
            await asyncio.to_thread(self.subnet.set_partitions, [p for p in current if p.pkey != pkey], timeout)
            self._save()
            self.emit({"kind": "partition_deleted", "severity": "Info", "system": "",
                       "message": f"partition {old.name} ({pkey:#06x}) deleted"})
        return self.partition_view(old)

    def _hca_or_switch_port(self, system: str, port: int) -> tuple[IbNode, int]:
        if not system:
            raise FabricInvalid("which port? a switch and port, an HCA, or a UFM port name")
        return self.resolve_port(system, port)

    async def pkeys(self, system: str, port: int = 0) -> list[tuple[int, bool]]:
        """A port's P_Key table as the port holds it (read from the simulator with smpquery)."""
        node, port = self._hca_or_switch_port(system, port or 1)
        return await asyncio.to_thread(self.subnet.pkeys, node.id, port)

    async def port_counters(self, system: str, port: int = 0) -> tuple[str, dict[str, int]]:
        """A port's PortCounters as perfquery reads them from the simulator."""
        node, port = self._hca_or_switch_port(system, port or 1)
        return self.port_name(node, port), await asyncio.to_thread(self.subnet.port_counters, node.id, port)

    async def set_port_counter(self, system: str, port: int, counter: str, value: int) -> tuple[str, dict[str, int]]:
        """Make a port count errors, as a bad cable or transceiver would (ibsim PerformanceSet); an
        error counter above zero raises UFM's "Link HW Error" alarm on the port."""
        node, port = self._hca_or_switch_port(system, port or 1)
        try:
            await asyncio.to_thread(self.subnet.set_counter, node.id, port, counter, value)
        except CounterError as e:
            raise FabricInvalid(str(e)) from None
        name = self.port_name(node, port)
        if counter not in ("PortXmitData", "PortRcvData", "PortXmitPkts", "PortRcvPkts", "PortXmitWait"):
            if value:
                self.alarms.raise_(self.now(), object_name=name, object_path=self._object_path(node, port),
                                   name="Link HW Error", description=counter,
                                   reason=f"{counter} is {value} on {node.description} port {port}")
            else:
                self.alarms.clear(name, "Link HW Error")
        return name, await asyncio.to_thread(self.subnet.port_counters, node.id, port)

    # --- SHARP ------------------------------------------------------------------------------------

    def sharp_job(self, job_id: str) -> SharpJob:
        try:
            return self.sharp.job(job_id)
        except SharpError as e:
            raise FabricNotFound(str(e)) from None

    def sharp_granted(self, job_id: str) -> bool:
        return self.sharp_job(job_id).sharp_available

    def create_sharp_job(self, job_id: str, hcas: list[str], servers: list[str], streaming: bool) -> SharpJob:
        if hcas and servers:
            raise FabricInvalid("give the job's HCAs or its servers, not both")
        if not hcas and not servers:
            raise FabricInvalid("a SHARP job needs HCAs ('gpu001 mlx5_0') or servers")
        unknown = [s for s in servers if s not in self._servers]
        if unknown:
            raise FabricNotFound(f"no server {unknown[0]!r} in the {self.plan.topology} fabric")
        for name in hcas:
            self.node(name)   # FabricNotFound for an unknown HCA
        job = self.sharp.create_job(job_id, hcas or None, servers=servers or None, streaming=streaming)
        self.emit({"kind": "sharp_job_created", "severity": "Info", "system": "",
                   "message": f"SHARP job {job_id}: {len(job.trees)} trees "
                              f"({', '.join(f'rail {t.rail} on {t.root}' for t in job.trees)})"})
        return job

    def release_sharp_job(self, job_id: str) -> SharpJob:
        self.sharp_job(job_id)
        job = self.sharp.release_job(job_id)
        self.emit({"kind": "sharp_job_released", "severity": "Info", "system": "",
                   "message": f"SHARP job {job_id} released {len(job.trees)} trees"})
        return job

    def emit(self, event: dict[str, Any]) -> dict[str, Any]:
        self._seq += 1
        event = {"seq": self._seq, "time": self.now(), **event}
        self.events.append(event)
        del self.events[:-EVENTS_KEPT]
        if self.store is not None:
            self.store.add_event(event, EVENTS_KEPT)
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
