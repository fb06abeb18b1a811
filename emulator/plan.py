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
CEPH_MON_GRPC_PORT = 3300    # the monitor's msgr2 port; here its gRPC CephMon service
CEPH_OSD_GRPC_PORT = 6800    # first of Ceph's OSD port range; OSD n of a host listens on 6800 + n
RGW_S3_PORT = 7480           # RGW's default
RGW_GRPC_PORT = 7481         # the gateway's gRPC health endpoint

# Host index ranges per role, so that addresses stay stable as other roles are added.
MANAGEMENT_HOST_BASE = 0
GPU_SERVER_HOST_BASE = 16
CEPH_HOST_BASE = 1000
LUSTRE_HOST_BASE = 900
LUSTRE_GRPC_PORT = 50988     # LNet's port is 988; the MDS's and each OSS's gRPC service

# Each daemon kind and the module whose `run(DaemonConfig)` serves it.
DAEMON_MODULES = {"gpu_node": "services.gpu_node.daemon", "fabric": "services.fabric.daemon",
                  "ceph_mon": "services.ceph.mon.daemon", "ceph_osd": "services.ceph.osd.daemon",
                  "ceph_rgw": "services.ceph.rgw.daemon",
                  "lustre_mds": "services.lustre.mds.daemon", "lustre_oss": "services.lustre.oss.daemon"}


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
    ceph: bool = False                    # run Ceph: a monitor, one daemon per OSD, an RGW gateway
    lustre: bool = False                  # run Lustre: the MDS (pair with mds_ha) and the OSS daemons
    ceph_users: str | None = None         # RGW users file (JSON/YAML) the gateway creates at start-up
    rgw_lc_debug_interval: float = 0.0    # twin seconds per lifecycle day (0: real days)

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


def ceph_daemons(topo: Topology, hosts: Addressing, run_dir: Path, opts: Options, broker_host: str,
                 broker_port: int) -> tuple[list[DaemonConfig], list[dict[str, Any]]]:
    """The topology's Ceph section as daemons: one per OSD (each host's HDD OSDs, then its SSD OSDs on
    the first `ssd_hosts` hosts, numbered in host order as `ceph-volume` would), and the monitor and
    the RGW gateway on the first Ceph host (Ceph colocates them with OSDs). gRPC listens on each
    host's OOB address (the twin's management plane); S3 on the first host's storage address."""
    from emulator.topology import naming

    ce = topo.spec.ceph
    if ce is None:
        raise ValueError(f"topology {topo.name} has no ceph section: nothing for --ceph to run")
    names = naming.series(naming.CEPH_HOST, ce.hosts)
    addrs = {h: hosts.addresses(h, CEPH_HOST_BASE + i) for i, h in enumerate(names)}
    mon_host = names[0]
    mon = f"{addrs[mon_host]['oob']}:{CEPH_MON_GRPC_PORT}"
    timing = {"heartbeat_interval": 6.0, "heartbeat_grace": 20.0, "down_out_interval": 600.0}

    def cfg(name: str, kind: str, host: str, grpc: str, extra: dict[str, Any]) -> DaemonConfig:
        return DaemonConfig(
            name=name, kind=kind, twin=opts.twin, spec={}, grpc=grpc, metrics=None,
            store_url=store_url(opts.store_url, run_dir / "state", name),
            broker_host=broker_host, broker_port=broker_port, log_file=str(run_dir / "logs" / f"{name}.log"),
            netns=hosts.netns(host), clock_epoch=opts.clock_epoch, clock_scale=opts.clock_scale, extra=extra)

    daemons: list[DaemonConfig] = []
    entries: list[dict[str, Any]] = []
    osds: list[dict[str, Any]] = []
    for i, host in enumerate(names):
        disks = [("hdd", ce.hdd_size_tb)] * ce.hdd_per_host
        if i < ce.ssd_hosts:
            disks += [("ssd", ce.ssd_size_tb)] * ce.ssd_per_host
        for n, (cls, tb) in enumerate(disks):
            osd = len(osds)
            grpc = f"{addrs[host]['oob']}:{CEPH_OSD_GRPC_PORT + n}"
            osds.append({"id": osd, "host": host, "device_class": cls, "capacity_bytes": int(tb * 1e12),
                         "grpc": grpc})
            c = cfg(f"osd.{osd}", "ceph_osd", host, grpc, {
                "osd": osd, "host": host, "device_class": cls, "capacity_bytes": int(tb * 1e12),
                "data_dir": str(run_dir / "state" / "ceph" / f"osd.{osd}"), "mon": mon,
                "heartbeat_interval": timing["heartbeat_interval"]})
            daemons.append(c)
            entries.append({"name": c.name, "kind": "ceph_osd", "host": host, "grpc": grpc, "addresses": addrs[host],
                            "osd": osd, "device_class": cls, "service": "clustertwin.v1.CephOsd", "netns": c.netns})
    mon_cfg = cfg("ceph-mon", "ceph_mon", mon_host, mon, {
        "osds": osds, "ec": ce.ec.model_dump(), "replicated": (ce.rbd.model_dump() if ce.rbd else {}),
        "timing": timing})
    s3 = f"{addrs[mon_host].get('storage', addrs[mon_host]['oob'])}:{RGW_S3_PORT}"
    rgw_cfg = cfg("ceph-rgw", "ceph_rgw", mon_host, f"{addrs[mon_host]['oob']}:{RGW_GRPC_PORT}",
                  {"mon": mon, "s3": s3, "op_timeout": 30.0, "users_file": opts.ceph_users,
                   "lc_debug_interval": opts.rgw_lc_debug_interval})
    entries.insert(0, {"name": mon_cfg.name, "kind": "ceph_mon", "host": mon_host, "grpc": mon,
                       "addresses": addrs[mon_host], "service": "clustertwin.v1.CephMon", "netns": mon_cfg.netns})
    entries.append({"name": rgw_cfg.name, "kind": "ceph_rgw", "host": mon_host, "grpc": rgw_cfg.grpc,
                    "s3": f"http://{s3}", "addresses": addrs[mon_host], "netns": rgw_cfg.netns})
    return [mon_cfg, *daemons, rgw_cfg], entries


def lustre_daemons(topo: Topology, hosts: Addressing, run_dir: Path, opts: Options, broker_host: str,
                   broker_port: int) -> tuple[list[DaemonConfig], list[dict[str, Any]], dict[str, Any]]:
    """The topology's Lustre section as daemons: MDT0000's MDS (with `mds_ha`, an active/standby pair
    sharing the MDT's store and lock, as failover pairs share its disk) and one OSS per `oss`, OSS k
    serving OSTs k*osts_per_oss.. (data in RUN/lustre/OSTxxxx); with `oss_failover_pairs` OSS 2p and
    2p+1 are partners. Lustre's servers and clients talk over the storage segment (the lossless RDMA
    network of the seed), so each daemon's service (`grpc`, and an OSS's bulk port next to it) is on
    its host's storage address when the addressing has one; the same gRPC server also answers on the
    host's OOB address (`admin`: health, `Status`, statfs and the OST admin calls of `twin` run from
    the operator port, as a server's management interface). Returns (configs, manifest entries, the
    manifest's `lustre` section: what a client mount needs)."""
    from emulator.topology import naming

    lu = topo.spec.lustre
    if lu is None:
        raise ValueError(f"topology {topo.name} has no lustre section: nothing for --lustre to run")
    mds_names = naming.series(naming.LUSTRE_MDS, lu.mds)[: 2 if lu.mds_ha and lu.mds >= 2 else 1]
    oss_names = naming.series(naming.LUSTRE_OSS, lu.oss)
    hosts_all = naming.series(naming.LUSTRE_MDS, lu.mds) + oss_names
    addrs = {h: hosts.addresses(h, LUSTRE_HOST_BASE + i) for i, h in enumerate(hosts_all)}
    nid = {h: addrs[h].get("storage", addrs[h]["oob"]) for h in hosts_all}   # the host's address for Lustre
    grpc = {h: f"{nid[h]}:{LUSTRE_GRPC_PORT}" for h in hosts_all}
    admin = {h: f"{addrs[h]['oob']}:{LUSTRE_GRPC_PORT}" for h in hosts_all}
    data = run_dir / "lustre"
    osts: list[dict[str, Any]] = []
    for k, oss in enumerate(oss_names):
        partner = (oss_names[k ^ 1] if k ^ 1 < len(oss_names) else None) if lu.oss_failover_pairs else None
        for j in range(lu.osts_per_oss):
            idx = k * lu.osts_per_oss + j
            osts.append({"index": idx, "oss": oss, "partner": partner, "capacity_bytes": int(lu.ost_size_tb * 1e12),
                         "dir": str(data / f"OST{idx:04x}"),
                         "servers": [grpc[oss]] + ([grpc[partner]] if partner else []),
                         "admin": [admin[oss]] + ([admin[partner]] if partner else [])})
    ost_servers = {str(o["index"]): o["servers"] for o in osts}

    def cfg(name: str, kind: str, spec: dict[str, Any], store: str) -> DaemonConfig:
        return DaemonConfig(
            name=name, kind=kind, twin=opts.twin, spec=spec, grpc=grpc[name], metrics=None,
            store_url=store_url(opts.store_url, run_dir / "state", store), broker_host=broker_host,
            broker_port=broker_port, log_file=str(run_dir / "logs" / f"{name}.log"), netns=hosts.netns(name),
            clock_epoch=opts.clock_epoch, clock_scale=opts.clock_scale, extra={"admin": admin[name]})

    mdt = f"{lu.fsname}-MDT0000"
    mds_spec = {"fsname": lu.fsname, "mdt": {"index": 0, "capacity_bytes": int(lu.mdt_size_tb * 1e12)},
                "osts": [{k: o[k] for k in ("index", "oss", "capacity_bytes")} for o in osts],
                "ost_servers": ost_servers, "lock_file": str(data / "MDT0000.lock")}
    daemons = [cfg(n, "lustre_mds", mds_spec, mdt) for n in mds_names]
    entries = [{"name": n, "kind": "lustre_mds", "host": n, "grpc": grpc[n], "admin": admin[n], "addresses": addrs[n],
                "service": "clustertwin.v1.LustreMds", "netns": hosts.netns(n), "fsname": lu.fsname,
                "mdt": 0, "failover": [grpc[m] for m in mds_names if m != n]} for n in mds_names]
    for oss in oss_names:
        mine = [o for o in osts if o["oss"] == oss]
        theirs = [o for o in osts if mine and o["oss"] == mine[0]["partner"]]
        daemons.append(cfg(oss, "lustre_oss", {"fsname": lu.fsname, "data_dir": str(data), "osts": [
            {k: o[k] for k in ("index", "capacity_bytes", "dir")} for o in mine],
            "partner": mine[0]["partner"] if mine else None,   # failover: it takes over the partner's OSTs
            "partner_osts": [{k: o[k] for k in ("index", "capacity_bytes", "dir")} for o in theirs]}, oss))
        entries.append({"name": oss, "kind": "lustre_oss", "host": oss, "grpc": grpc[oss], "admin": admin[oss],
                        "bulk": f"{nid[oss]}:{LUSTRE_GRPC_PORT + 1}",
                        "addresses": addrs[oss],
                        "service": "clustertwin.v1.LustreOss", "netns": hosts.netns(oss),
                        "osts": [o["index"] for o in mine], "partner": mine[0]["partner"] if mine else None})
    mgs = ":".join(f"{nid[n]}@tcp" for n in mds_names)   # the MGS NIDs, on the storage network
    section = {"fsname": lu.fsname, "mgs": f"{mgs}:/{lu.fsname}", "mds": [grpc[n] for n in mds_names],
               "mds_admin": [admin[n] for n in mds_names], "osts": osts, "data_dir": str(data)}
    return daemons, entries, section


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

    if opts.ceph:
        cfgs, ceph_entries = ceph_daemons(topo, hosts, run_dir, opts, broker_host, broker_port)
        daemons += cfgs
        entries += ceph_entries

    lustre = None
    if opts.lustre:
        cfgs, lustre_entries, lustre = lustre_daemons(topo, hosts, run_dir, opts, broker_host, broker_port)
        daemons += cfgs
        entries += lustre_entries

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
    if lustre is not None:
        manifest["lustre"] = lustre
    broker_netns = None if opts.broker_url or not topo.management_nodes else hosts.netns(mgmt)
    manifest["management"]["netns"] = broker_netns
    return Plan(broker_netns, broker_host, broker_port, not opts.broker_url, daemons, manifest)
