"""The fabric-manager daemon: one per twin. Runs the real subnet manager (ibsim + OpenSM ftree) over
the topology's compute fabric and serves it on the daemon skeleton (emulator/daemon.TwinDaemon): gRPC
`clustertwin.v1.Fabric` (with health and reflection) and, when configured, a UFM-shaped REST API; port
changes go out on the bus.

    python -m services.fabric.daemon CONFIG.json      # normally forked by the supervisor

DaemonConfig fields read:
    name, twin                  MQTT identity; events on `events/fabric/<kind>` (docs/EVENTS.md)
    spec.topology_file       the topology (a path, or a name under topologies/)
    grpc                        HOST:PORT of the Fabric service
    broker_host, broker_port    the MQTT broker (the publisher retries; a missing broker never blocks)
    clock_epoch, clock_scale    event times
    spec.ufm                HOST:PORT of the UFM REST API (absent: no REST server)
    spec.ufm_user, spec.ufm_password    its basic-auth credentials (default admin / 123456)
    store_url                   the store (`FabricStore`): disabled cables, unhealthy ports,
                                partitions and events outlive the process there
    run_dir                     the twin's run directory: the subnet's files go to
                                `<run_dir>/fabric/<name>`, the control socket is the run dir's
    spec.fabric_dir         optional: where the subnet's files go instead (ibsim net file,
                                OpenSM log, ...)
    spec.sm_node            optional: where OpenSM attaches (default the first spine)
    spec.control_socket     optional: the supervisor's control socket (default the run dir's);
                                on a netns twin the daemon drives the compute plane through it
                                (`ComputePlaneDriver`), and follows the network's own switch-down
                                and cut faults; spec.drive_compute_plane = false: don't
Needs root and ibsim-utils, opensm, infiniband-diags (see services/fabric/subnet.py).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
from pathlib import Path
from typing import Any

from clustertwin.v1 import fabric_pb2_grpc as pb_grpc
from emulator import bus
from emulator.daemon import TwinDaemon, main
from emulator.daemon_config import DaemonConfig, split_hostport
from emulator.network.errors import NetworkError
from emulator.network.plan import COMPUTE, make_network_plan
from emulator.network.remote import RemoteNetwork
from emulator.rundir import RunDir
from emulator.topology import Topology, load_topology
from services.fabric.daemon_spec import FabricSpec
from services.fabric.lft_routes import ComputeMap
from services.fabric.manager import FabricManager
from services.fabric.model import FabricState
from services.fabric.netfile import SWITCH, FabricPlan, make_fabric_plan
from services.fabric.servicer import SERVICE_NAME, FabricServicer
from services.fabric.store import FabricStore
from services.fabric.subnet import Subnet
from services.fabric.ufm_rest import UfmRest
from services.fabric.ufm_rest import serve as serve_rest

log = logging.getLogger("fabric")

SUBNET_START_TIMEOUT_S = 120.0
SUBNET_INFO = "subnet.json"


def fabric_dir(cfg: DaemonConfig) -> Path:
    """Where the subnet's files live (see the module docstring)."""
    if d := FabricSpec.of(cfg).fabric_dir:
        return Path(d)
    if cfg.run_dir:
        return Path(cfg.run_dir) / "fabric" / cfg.name
    raise ValueError("the fabric manager's config names no run directory: set run_dir (or spec.fabric_dir)")


def control_socket(cfg: DaemonConfig) -> Path | None:
    """The supervisor's control socket (None: no run directory given, so no supervisor to drive)."""
    if sock := FabricSpec.of(cfg).control_socket:
        return Path(sock)
    if cfg.run_dir:
        return RunDir(cfg.run_dir).control_socket
    return None


class ComputePlaneDriver:
    """One fabric, every view: the namespace compute plane follows the subnet manager. After OpenSM
    comes up and after every re-sweep the LFTs become the leaf and spine routers' route tables
    (`lft_routes.ComputeMap`), installed through the supervisor's `Network.set_routes`, with the
    network's own shortest-path rerouting off for the compute routers; a port disabled or enabled
    here takes the matching veth down or up there, and is undone there if the fabric cannot follow
    (`FabricManager._transaction`). Blocking: call from a worker thread."""

    def __init__(self, plan: FabricPlan, topo: Topology, socket_path: Path) -> None:
        self.plan = plan
        self.map = ComputeMap(plan, make_network_plan(topo, "ct0"))   # labels and ifnames only
        self.net = RemoteNetwork(socket_path)
        self.active = False

    def attach(self, state: FabricState) -> bool:
        """Take the compute plane's routes over; False (and nothing done) on a loopback twin."""
        try:
            self.net.external_routes([COMPUTE])
        except NetworkError as e:
            log.info("compute plane not driven by the fabric: %s", e)
            return False
        self.active = True
        self.install(state)
        return True

    def cables(self, ends: list[tuple[str, int]], enabled: bool) -> dict[str, Any] | None:
        """Take the veths of the cables at these ports down or up, in one step (one network fault
        for a cut); returns the network's mark from before, for `restore`. NetworkError if the
        network refuses (and then it changed nothing)."""
        if not self.active:
            return None
        links = sorted({self.map.link_args(node, port) for node, port in ends})
        mark = self.net.mark()
        if enabled:
            self.net.cables_up([list(lk) for lk in links])
        else:
            self.net.cables_down([list(lk) for lk in links])
        return mark

    def nodes_down(self) -> dict[tuple[str, int], str]:
        """The fabric ports whose veths the network took down itself: every cabled port of an IB
        switch powered off, every HCA port of a host cut off (`twin net fault switch-down|cut`),
        each with the fault ("net-3 (switch-down ib-leaf01)"). For `FabricManager.follow_network`."""
        out: dict[tuple[str, int], str] = {}
        for f in self.net.faults():
            if f.kind not in ("switch-down", "node-cut"):
                continue
            node = self.plan.nodes.get(f.target)
            if node is not None and node.kind == SWITCH:
                ends = [(node.id, p) for p in range(1, node.ports + 1) if self.plan.peer(node.id, p)]
            else:
                ends = [(h.id, 1) for h in self.plan.hcas if h.system == f.target]
            for end in ends:
                out.setdefault(end, f"{f.id} ({f.kind} {f.target})")
        return out

    def restore(self, mark: dict[str, Any] | None) -> None:
        """Undo `cables`: the veths and the network's fault log as they were."""
        if mark is not None:
            self.net.restore(mark)

    def install(self, state: FabricState, changed: list[tuple[str, int]] | None = None, strict: bool = False) -> None:
        """The LFTs of `state` as routes; `changed`: ports whose veths changed (their routers' tables
        are rewritten whole, as the kernel dropped the nexthops on a downed veth by itself).
        `strict`: raise NetworkError when the network refuses, rather than log it."""
        if not self.active:
            return
        t0 = time.monotonic()
        tables = self.map.routes(state)
        full = sorted({ns for end in changed or [] for ns in self.map.namespaces_of(*end) if ns in tables})
        try:
            self.net.set_routes(tables, full=full)
        except NetworkError as e:
            if strict:
                raise
            log.warning("could not install the fabric's routes in the compute plane: %s", e)
            return
        log.info("compute plane: %d routes from OpenSM's LFTs installed on %d routers in %.2f s",
                 sum(map(len, tables.values())), len(tables), time.monotonic() - t0)


class FabricDaemon(TwinDaemon):
    def __init__(self, cfg: DaemonConfig) -> None:
        super().__init__(cfg)
        self.spec = FabricSpec.of(cfg)
        self.topology = load_topology(self.spec.topology_file)
        self.plan = make_fabric_plan(self.topology, self.spec.sm_node)
        self.subnet = Subnet(self.plan, fabric_dir(cfg))
        self.store = FabricStore(cfg.store_url, cfg.name)
        self.manager = FabricManager(self.plan, self.subnet, cfg.clock.now, self.store)
        self.bus = bus.Publisher(cfg.broker_host, cfg.broker_port, cfg.twin, cfg.name)
        self.manager.on_event = self.publish

    def write_subnet_info(self) -> None:
        """How to reach this fabric's simulator from outside (`twin ib exec`): ibsim's socket name,
        the directory diags run in, the HCA they attach to, and a process in ibsim's network
        namespace (its abstract sockets are per namespace)."""
        info = {"sockname": self.subnet.sockname, "work": str(self.subnet.work), "diag_node": self.subnet.diag_node,
                "sm_node": self.subnet.sm_node, "pid": os.getpid(),
                "hcas": [n.id for n in self.plan.hcas], "switches": [n.id for n in self.plan.switches]}
        path = self.subnet.run_dir / SUBNET_INFO
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(info, indent=1))
        tmp.replace(path)

    def publish(self, event: dict[str, Any]) -> None:
        if event["kind"] in ("port_down", "port_up"):
            self.write_subnet_info()   # the diags' HCA may have moved off a downed cable
        payload = {k: v for k, v in event.items() if k not in ("time", "kind", "message")}
        self.bus.event("fabric", event["kind"], payload, time=event["time"], message=event.get("message", ""))

    async def attach_compute_plane(self) -> None:
        """On a netns twin: drive the compute plane from OpenSM's LFTs and follow its faults."""
        sock = control_socket(self.cfg)
        if self.spec.drive_compute_plane and sock is not None and sock.exists():
            driver = ComputePlaneDriver(self.plan, self.topology, sock)
            if await asyncio.to_thread(driver.attach, self.manager.state):
                self.manager.compute_plane = driver
                self.manager.watch_network()

    async def start(self) -> None:
        await asyncio.to_thread(self.manager.start, SUBNET_START_TIMEOUT_S)
        if self.stopping is not None and self.stopping.is_set():
            return   # stopped while OpenSM came up: tear down without serving
        self.manager.watch_subnet()
        self.write_subnet_info()
        await self.attach_compute_plane()
        log.info("%s: %s fabric up (%d switches, %d HCAs), OpenSM ftree in %.2f s, files in %s",
                 self.cfg.name, self.plan.topology, len(self.plan.switches), len(self.plan.hcas),
                 self.manager.last_sweep_seconds, self.subnet.run_dir)
        await self.start_grpc([(pb_grpc.add_FabricServicer_to_server, FabricServicer(self.manager), SERVICE_NAME)])
        if ufm := self.spec.ufm:
            host, port = split_hostport(ufm)
            self.serve_http(await serve_rest(UfmRest(self.manager, self.spec.ufm_user, self.spec.ufm_password),
                                             host, port))
        log.info("%s serving gRPC on %s, UFM REST on %s", self.cfg.name, self.cfg.grpc, self.spec.ufm or "(off)")

    async def close(self) -> None:
        """No more restarts of ibsim or OpenSM, then both stopped (also after a start that failed)."""
        await self.manager.cancel_background()
        await asyncio.to_thread(self.manager.stop)
        self.store.close()


run = FabricDaemon.run


if __name__ == "__main__":
    main("services.fabric.daemon", run)
