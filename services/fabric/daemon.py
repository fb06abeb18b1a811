"""The fabric-manager daemon: one per twin. Runs the real subnet manager (ibsim + OpenSM ftree) over
the topology's compute fabric and serves it: gRPC `clustertwin.v1.Fabric` (with health and
reflection) and, when configured, a UFM-shaped REST API; port changes go out on the bus.

    python -m services.fabric.daemon CONFIG.json      # normally forked by the supervisor

DaemonConfig fields read:
    name, twin                  MQTT identity; events on `bus.event_topic(twin, "fabric", kind)`
    spec["topology_file"]       the topology (a path, or a name under topologies/)
    grpc                        HOST:PORT of the Fabric service
    broker_host, broker_port    the MQTT broker (the publisher retries; a missing broker never blocks)
    clock_epoch, clock_scale    event times
    extra["ufm"]                HOST:PORT of the UFM REST API (absent: no REST server)
    extra["ufm_user"], extra["ufm_password"]    its basic-auth credentials (default admin / 123456)
    extra["fabric_dir"]         where the subnet's files go (ibsim net file, OpenSM log, ...);
                                default `<run dir>/fabric/<name>`, the run dir being log_file's
                                parent's parent (`<run>/logs/<name>.log`), else the SQLite
                                store's (`sqlite:///<run>/state/<name>.db`)
    extra["sm_node"]            optional: where OpenSM attaches (default the first spine)
Needs root and ibsim-utils, opensm, infiniband-diags (see services/fabric/subnet.py).
"""

from __future__ import annotations

import asyncio
import logging
import signal
import sys
from pathlib import Path
from typing import Any

from clustertwin.v1 import fabric_pb2_grpc as pb_grpc
from emulator import bus
from emulator.daemon_config import DaemonConfig, split_hostport
from emulator.grpc_server import start_server
from emulator.topology import load_topology
from services.fabric.manager import FabricManager
from services.fabric.netfile import make_fabric_plan
from services.fabric.servicer import SERVICE_NAME, FabricServicer
from services.fabric.subnet import Subnet
from services.fabric.ufm_rest import UfmRest
from services.fabric.ufm_rest import serve as serve_rest

log = logging.getLogger("fabric")

DEFAULT_UFM_USER = "admin"
DEFAULT_UFM_PASSWORD = "123456"
SUBNET_START_TIMEOUT_S = 120.0


def fabric_dir(cfg: DaemonConfig) -> Path:
    """Where the subnet's files live (see the module docstring)."""
    if cfg.extra.get("fabric_dir"):
        return Path(cfg.extra["fabric_dir"])
    if cfg.log_file:
        return Path(cfg.log_file).resolve().parent.parent / "fabric" / cfg.name
    if cfg.store_url.startswith("sqlite:///"):
        return Path(cfg.store_url.removeprefix("sqlite:///")).resolve().parent.parent / "fabric" / cfg.name
    raise ValueError("cannot tell the run directory: set log_file, a sqlite store_url or extra['fabric_dir']")


class FabricDaemon:
    def __init__(self, cfg: DaemonConfig) -> None:
        self.cfg = cfg
        topo_ref = cfg.spec.get("topology_file") or cfg.spec.get("topology")
        if not topo_ref:
            raise ValueError("spec needs 'topology_file'")
        self.plan = make_fabric_plan(load_topology(topo_ref), cfg.extra.get("sm_node"))
        self.subnet = Subnet(self.plan, fabric_dir(cfg))
        self.subnet.spawn_diags = True   # diags run while gRPC serves: no fork() from its threads
        self.manager = FabricManager(self.plan, self.subnet, cfg.clock.now)
        self.bus = bus.Publisher(cfg.broker_host, cfg.broker_port, client_id=f"{cfg.twin}/{cfg.name}",
                                 status_topic=bus.status_topic(cfg.twin, cfg.name))
        self.manager.on_event = self.publish

    def publish(self, event: dict[str, Any]) -> None:
        self.bus.publish(bus.event_topic(self.cfg.twin, "fabric", event["kind"]), event, qos=1)

    async def serve(self) -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        bus_task = asyncio.create_task(self.bus.run(), name="bus")
        server = health = rest = None
        try:
            start = asyncio.create_task(asyncio.to_thread(self.manager.start, SUBNET_START_TIMEOUT_S))
            await asyncio.wait([start, asyncio.create_task(stop.wait())], return_when=asyncio.FIRST_COMPLETED)
            if not start.done():   # stopped while OpenSM came up: let it finish, then tear down
                await start
                return
            start.result()
            log.info("%s: %s fabric up (%d switches, %d HCAs), OpenSM ftree in %.2f s, files in %s",
                     self.cfg.name, self.plan.topology, len(self.plan.switches), len(self.plan.hcas),
                     self.manager.last_sweep_seconds, self.subnet.run_dir)
            server, health = await start_server(self.cfg.grpc, [(pb_grpc.add_FabricServicer_to_server,
                                                                 FabricServicer(self.manager), SERVICE_NAME)])
            ufm = self.cfg.extra.get("ufm")
            if ufm:
                host, port = split_hostport(ufm)
                rest = await serve_rest(UfmRest(self.manager, self.cfg.extra.get("ufm_user", DEFAULT_UFM_USER),
                                                self.cfg.extra.get("ufm_password", DEFAULT_UFM_PASSWORD)), host, port)
            log.info("%s serving gRPC on %s, UFM REST on %s", self.cfg.name, self.cfg.grpc, ufm or "(off)")
            await stop.wait()
            log.info("%s stopping", self.cfg.name)
        finally:
            if health is not None:
                await health.enter_graceful_shutdown()
            if server is not None:
                await server.stop(grace=1.0)
            if rest is not None:
                rest.close()
            await asyncio.to_thread(self.manager.stop)
            await self.bus.close()
            bus_task.cancel()
            await asyncio.wait([bus_task], timeout=0.5)


def run(cfg: DaemonConfig) -> None:
    asyncio.run(FabricDaemon(cfg).serve())


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m services.fabric.daemon CONFIG.json")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    run(DaemonConfig.from_file(Path(sys.argv[1])))
