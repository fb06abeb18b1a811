"""The topology's Ceph section as daemons: a monitor, one daemon per OSD and the RGW gateway."""

from __future__ import annotations

from emulator.service import PlanContext, ServicePlan
from emulator.topology import naming
from services.ceph.daemon_spec import (
    ErasureProfile,
    MonSpec,
    MonTimingSpec,
    OsdPlacement,
    OsdSpec,
    ReplicatedProfile,
    RgwSpec,
)
from services.ceph.manifest import OsdEntry, RgwEntry
from services.ceph.msgr import msgr_address
from services.ceph.options import CephOptions

CEPH_MON_GRPC_PORT = 3300    # the monitor's msgr2 port; here its gRPC CephMon service
CEPH_OSD_GRPC_PORT = 6800    # first of Ceph's OSD port range; OSD n of a host listens on 6800 + n
RGW_S3_PORT = 7480           # RGW's default
RGW_GRPC_PORT = 7481         # the gateway's gRPC health endpoint
CEPH_HOST_BASE = 1000
TIMING = MonTimingSpec(heartbeat_interval=6.0, heartbeat_grace=20.0, down_out_interval=600.0)


def plan(ctx: PlanContext) -> ServicePlan:
    """One daemon per OSD (each host's HDD OSDs, then its SSD OSDs on the first `ssd_hosts` hosts,
    numbered in host order as `ceph-volume` would), and the monitor and the RGW gateway on the first
    Ceph host (Ceph colocates them with OSDs). gRPC listens on each host's OOB address (the twin's
    management plane); the OSDs' messengers (chunk data) and S3 on the storage addresses."""
    ce = ctx.topo.spec.ceph
    o = CephOptions(**ctx.opts.of("ceph"))
    names = naming.series(naming.CEPH_HOST, ce.hosts)
    addrs = {h: ctx.hosts.addresses(h, CEPH_HOST_BASE + i) for i, h in enumerate(names)}
    mon_host = names[0]
    mon = f"{addrs[mon_host]['oob']}:{CEPH_MON_GRPC_PORT}"
    out = ServicePlan()
    osds: list[OsdPlacement] = []
    for i, host in enumerate(names):
        disks = [("hdd", ce.hdd_size_tb)] * ce.hdd_per_host
        if i < ce.ssd_hosts:
            disks += [("ssd", ce.ssd_size_tb)] * ce.ssd_per_host
        for n, (cls, tb) in enumerate(disks):
            osd = len(osds)
            grpc = f"{addrs[host]['oob']}:{CEPH_OSD_GRPC_PORT + n}"
            # Chunk data on the storage plane (Ceph's public network), apart from the OOB where the
            # heartbeats go: on the OOB, bulk chunks held heartbeats back and OSDs flapped.
            msgr = msgr_address(f"{addrs[host].get('storage', addrs[host]['oob'])}:{CEPH_OSD_GRPC_PORT + n}")
            osds.append(OsdPlacement(id=osd, host=host, device_class=cls, capacity_bytes=int(tb * 1e12), grpc=grpc,
                                     msgr=msgr))
            c = ctx.config(f"osd.{osd}", "ceph_osd", host, grpc, spec=OsdSpec(
                osd=osd, host=host, device_class=cls, capacity_bytes=int(tb * 1e12),
                data_dir=str(ctx.run_dir / "state" / "ceph" / f"osd.{osd}"), mon=mon,
                heartbeat_interval=TIMING.heartbeat_interval, storage_timing=o.storage_timing, msgr=msgr))
            out.daemons.append(c)
            out.entries.append(OsdEntry(name=c.name, kind="ceph_osd", host=host, grpc=grpc, addresses=addrs[host],
                                        osd=osd, device_class=cls, service="clustertwin.v1.CephOsd",
                                        netns=c.netns).model_dump())
    mon_cfg = ctx.config("ceph-mon", "ceph_mon", mon_host, mon, spec=MonSpec(
        osds=osds, ec=ErasureProfile(**ce.ec.model_dump()),
        replicated=ReplicatedProfile(**(ce.rbd.model_dump() if ce.rbd else {})), timing=TIMING))
    s3 = f"{addrs[mon_host].get('storage', addrs[mon_host]['oob'])}:{RGW_S3_PORT}"
    rgw_cfg = ctx.config("ceph-rgw", "ceph_rgw", mon_host, f"{addrs[mon_host]['oob']}:{RGW_GRPC_PORT}",
                         spec=RgwSpec(mon=mon, s3=s3, op_timeout=30.0, users_file=o.ceph_users or None,
                                      lc_debug_interval=o.rgw_lc_debug_interval or None,
                                      osds={p.id: p.msgr for p in osds if p.msgr},
                                      ec=ErasureProfile(**ce.ec.model_dump())))
    out.daemons = [mon_cfg, *out.daemons, rgw_cfg]
    out.entries.insert(0, {"name": mon_cfg.name, "kind": "ceph_mon", "host": mon_host, "grpc": mon,
                           "addresses": addrs[mon_host], "service": "clustertwin.v1.CephMon",
                           "netns": mon_cfg.netns})
    out.entries.append(RgwEntry(name=rgw_cfg.name, kind="ceph_rgw", host=mon_host, grpc=rgw_cfg.grpc,
                                s3=f"http://{s3}", addresses=addrs[mon_host], netns=rgw_cfg.netns).model_dump())
    return out
