"""From a topology to a running plan: which daemons to start, where each listens, and the manifest.

Pure: the same topology, slot and options give the same plan, so a restarted supervisor (or a
replayed drill) puts every daemon back on the same address.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from emulator import addressing, bus
from emulator.daemon_config import DaemonConfig
from emulator.errors import BadInput
from emulator.manifest import Manifest
from emulator.network.errors import NetworkError
from emulator.options import Addressing, Options
from emulator.service import PlanContext, services
from emulator.topology import Topology

MQTT_PORT = 1883
MANAGEMENT_HOST_BASE = 0     # host index of the first management node (services keep their own ranges)


@dataclass(frozen=True)
class Plan:
    broker_netns: str | None
    broker_host: str
    broker_port: int
    start_broker: bool
    daemons: list[DaemonConfig]
    manifest: Manifest


def parse_broker_url(url: str) -> tuple[str, int]:
    if not url.startswith("mqtt://"):
        raise BadInput(f"broker URL {url!r} must look like mqtt://HOST:PORT")
    hostport = url.removeprefix("mqtt://").rstrip("/")
    host, _, port = hostport.rpartition(":")
    if not host or not port.isdigit():
        raise BadInput(f"broker URL {url!r} must look like mqtt://HOST:PORT")
    return host, int(port)


def host_addresses(slot: int, host: int) -> dict[str, str]:
    return {plane: addressing.host_address(slot, plane, host) for plane in addressing.PLANES}


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


def make_plan(topo: Topology, slot: int, run_dir: Path, opts: Options, hosts: Addressing | None = None) -> Plan:
    hosts = hosts or LoopbackAddressing(slot)
    mgmt = topo.management_nodes[0] if topo.management_nodes else "mgmt01"
    mgmt_addr = hosts.addresses(mgmt, MANAGEMENT_HOST_BASE)
    if opts.broker_url:
        broker_host, broker_port = parse_broker_url(opts.broker_url)
    else:
        broker_host, broker_port = mgmt_addr["oob"], MQTT_PORT

    ctx = PlanContext(topo, hosts, run_dir, opts, broker_host, broker_port)
    daemons: list[DaemonConfig] = []
    entries: list[dict[str, Any]] = []
    sections: dict[str, Any] = {}
    for service in services().values():
        if service.plan is not None and service.enabled(opts):
            part = service.plan(ctx)
            daemons += part.daemons
            entries += part.entries
            sections |= part.sections

    broker_netns = None if opts.broker_url or not topo.management_nodes else hosts.netns(mgmt)
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
        "management": {"host": mgmt, "addresses": mgmt_addr, "netns": broker_netns},
        "daemons": entries,
    }
    return Plan(broker_netns, broker_host, broker_port, not opts.broker_url, daemons,
                Manifest.model_validate(manifest | sections))
