"""From a topology to a running plan: which daemons to start, where each listens, and the manifest.

Pure: the same topology, slot and options give the same plan, so a restarted supervisor (or a
replayed drill) puts every daemon back on the same address.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from emulator import addressing, bus
from emulator.daemon_config import DaemonConfig
from emulator.network.errors import NetworkError
from emulator.store import store_url
from emulator.topology import Topology

GPU_NODE_GRPC_PORT = 50051
FABRIC_GRPC_PORT = 50052
UFM_REST_PORT = 80
DCGM_EXPORTER_PORT = 9400  # dcgm-exporter's default
MQTT_PORT = 1883

# Host index ranges per role, so that addresses stay stable as other roles are added.
MANAGEMENT_HOST_BASE = 0
GPU_SERVER_HOST_BASE = 16

# Each daemon kind and the module whose `run(DaemonConfig)` serves it.
DAEMON_MODULES = {"gpu_node": "services.gpu_node.daemon", "fabric": "services.fabric.daemon"}


@dataclass(frozen=True)
class Options:
    twin: str
    network: str = "loopback"
    store_url: str | None = None          # None: SQLite per daemon in the run directory
    broker_url: str | None = None         # None: the supervisor starts Mosquitto
    clock_epoch: float = 0.0
    clock_scale: float = 1.0
    telemetry_interval: float = 1.0
    bandwidth_scale: float = 0.001        # netns links shaped to real rate x this (0: unshaped)
    fabric: bool = False                  # run the fabric manager (ibsim + OpenSM; needs root)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Options:
        return cls(**{k: d[k] for k in cls.__dataclass_fields__ if k in d})


@dataclass(frozen=True)
class Plan:
    broker_netns: str | None
    broker_host: str
    broker_port: int
    start_broker: bool
    daemons: list[DaemonConfig]
    manifest: dict[str, Any]


def parse_broker_url(url: str) -> tuple[str, int]:
    if not url.startswith("mqtt://"):
        raise ValueError(f"broker URL {url!r} must look like mqtt://HOST:PORT")
    hostport = url.removeprefix("mqtt://").rstrip("/")
    host, _, port = hostport.rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"broker URL {url!r} must look like mqtt://HOST:PORT")
    return host, int(port)


def host_addresses(slot: int, host: int) -> dict[str, str]:
    return {plane: addressing.host_address(slot, plane, host) for plane in addressing.PLANES}


class Addressing(Protocol):
    """Where an emulated host sits: its address per plane and its network namespace, if any."""

    def addresses(self, host: str, index: int) -> dict[str, str]: ...
    def netns(self, host: str) -> str | None: ...


@dataclass(frozen=True)
class LoopbackAddressing:
    slot: int

    def addresses(self, host: str, index: int) -> dict[str, str]:
        return host_addresses(self.slot, index)

    def netns(self, host: str) -> str | None:
        return None


@dataclass(frozen=True)
class NamespaceAddressing:
    """Hosts are namespaces of an emulated network (emulator.network.Network)."""

    network: Any

    def addresses(self, host: str, index: int) -> dict[str, str]:
        out = {}
        for plane in addressing.PLANES:
            try:
                out[plane] = self.network.address(host, plane)
            except NetworkError:   # the host is not on this plane (e.g. a management node on storage)
                continue
        return out

    def netns(self, host: str) -> str | None:
        return self.network.netns(host)


def fabric_host(topo: Topology) -> tuple[str, int]:
    """The management node the fabric manager (UFM) runs on, and its host index."""
    roles = [(m.name, m.role) for m in topo.spec.management_nodes]
    for wanted in ("ufm", "mgmt"):
        for i, (name, role) in enumerate(roles):
            if role == wanted:
                return name, MANAGEMENT_HOST_BASE + i
    return roles[0][0], MANAGEMENT_HOST_BASE


def fabric_daemon(topo: Topology, hosts: Addressing, run_dir: Path, opts: Options, broker_host: str,
                  broker_port: int) -> tuple[DaemonConfig, dict[str, Any]]:
    host, index = fabric_host(topo)
    addrs = hosts.addresses(host, index)
    oob = addrs["oob"]
    cfg = DaemonConfig(
        name="fabric", kind="fabric", twin=opts.twin, spec={"topology_file": str(topo.source)},
        grpc=f"{oob}:{FABRIC_GRPC_PORT}", metrics=None,
        store_url=store_url(opts.store_url, run_dir / "state", "fabric"),
        broker_host=broker_host, broker_port=broker_port, log_file=str(run_dir / "logs" / "fabric.log"),
        netns=hosts.netns(host), clock_epoch=opts.clock_epoch, clock_scale=opts.clock_scale,
        extra={"ufm": f"{oob}:{UFM_REST_PORT}"},
    )
    entry = {"name": "fabric", "kind": "fabric", "host": host, "grpc": cfg.grpc, "addresses": addrs,
             "ufm": f"http://{oob}:{UFM_REST_PORT}/ufmRest", "ufm_user": "admin", "ufm_password": "123456",
             "service": "clustertwin.v1.Fabric", "netns": cfg.netns}
    return cfg, entry


def make_plan(topo: Topology, slot: int, run_dir: Path, opts: Options, hosts: Addressing | None = None) -> Plan:
    hosts = hosts or LoopbackAddressing(slot)
    mgmt = topo.management_nodes[0] if topo.management_nodes else "mgmt01"
    mgmt_addr = hosts.addresses(mgmt, MANAGEMENT_HOST_BASE)
    if opts.broker_url:
        broker_host, broker_port = parse_broker_url(opts.broker_url)
    else:
        broker_host, broker_port = mgmt_addr["oob"], MQTT_PORT

    daemons: list[DaemonConfig] = []
    entries: list[dict[str, Any]] = []
    for server in topo.gpu_servers:
        addrs = hosts.addresses(server.name, GPU_SERVER_HOST_BASE + server.index)
        oob = addrs["oob"]
        spec = server.to_dict() | {"twin": opts.twin}
        cfg = DaemonConfig(
            name=server.name, kind="gpu_node", twin=opts.twin, spec=spec,
            grpc=f"{oob}:{GPU_NODE_GRPC_PORT}", metrics=f"{oob}:{DCGM_EXPORTER_PORT}",
            store_url=store_url(opts.store_url, run_dir / "state", server.name),
            broker_host=broker_host, broker_port=broker_port,
            log_file=str(run_dir / "logs" / f"{server.name}.log"), netns=hosts.netns(server.name),
            clock_epoch=opts.clock_epoch, clock_scale=opts.clock_scale,
            telemetry_interval=opts.telemetry_interval,
        )
        daemons.append(cfg)
        entries.append({
            "name": server.name, "kind": "gpu_node", "host": server.name, "rack": server.rack,
            "grpc": cfg.grpc, "metrics": f"http://{cfg.metrics}/metrics", "addresses": addrs,
            "service": "clustertwin.v1.GpuNode", "netns": cfg.netns,
        })

    if opts.fabric:
        cfg, entry = fabric_daemon(topo, hosts, run_dir, opts, broker_host, broker_port)
        daemons.append(cfg)
        entries.append(entry)

    manifest = {
        "twin": opts.twin,
        "topology": topo.name,
        "topology_file": str(topo.source),
        "network": opts.network,
        "slot": slot,
        "run_dir": str(run_dir),
        "clock": {"epoch": opts.clock_epoch, "scale": opts.clock_scale},
        "store": opts.store_url or f"sqlite:///{run_dir / 'state'}/<daemon>.db",
        "broker": {"host": broker_host, "port": broker_port, "url": f"mqtt://{broker_host}:{broker_port}",
                   "managed": not opts.broker_url, "topic_prefix": bus.prefix(opts.twin)},
        "management": {"host": mgmt, "addresses": mgmt_addr},
        "daemons": entries,
    }
    broker_netns = None if opts.broker_url or not topo.management_nodes else hosts.netns(mgmt)
    manifest["management"]["netns"] = broker_netns
    return Plan(broker_netns, broker_host, broker_port, not opts.broker_url, daemons, manifest)
