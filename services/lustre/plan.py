"""The topology's Lustre section as daemons: MDT0000's MDS (with `mds_ha`, an active/standby pair
sharing the MDT's store and lock, as failover pairs share its disk) and one OSS per `oss`, OSS k
serving OSTs k*osts_per_oss.. (data in RUN/lustre/OSTxxxx); with `oss_failover_pairs` OSS 2p and
2p+1 are partners.

Lustre's servers and clients talk over the storage segment (the lossless RDMA network of the seed),
so each daemon's service (`grpc`, and an OSS's bulk port next to it) is on its host's storage
address when the addressing has one; the same gRPC server also answers on the host's OOB address
(`admin`: health, `Status`, statfs and the OST admin calls of `twin` run from the operator port, as
a server's management interface). The manifest's `lustre` section is what a client mount needs."""

from __future__ import annotations

from typing import Any

from emulator.service import PlanContext, ServicePlan
from emulator.topology import naming
from services.lustre.daemon_spec import MdsOst, MdsSpec, MdtSpec, OssOst, OssSpec
from services.lustre.manifest import SECTION, LustreSection, MdsEntry, OssEntry, OstInfo

LUSTRE_HOST_BASE = 900
LUSTRE_GRPC_PORT = 50988     # LNet's port is 988; the MDS's and each OSS's gRPC service


def _osts(lu: Any, oss_names: list[str], grpc: dict[str, str], admin: dict[str, str], data: Any) -> list[OstInfo]:
    osts = []
    for k, oss in enumerate(oss_names):
        partner = (oss_names[k ^ 1] if k ^ 1 < len(oss_names) else None) if lu.oss_failover_pairs else None
        for j in range(lu.osts_per_oss):
            idx = k * lu.osts_per_oss + j
            osts.append(OstInfo(index=idx, oss=oss, partner=partner, capacity_bytes=int(lu.ost_size_tb * 1e12),
                                dir=str(data / f"OST{idx:04x}"),
                                servers=[grpc[oss]] + ([grpc[partner]] if partner else []),
                                admin=[admin[oss]] + ([admin[partner]] if partner else [])))
    return osts


def _served(osts: list[OstInfo]) -> list[OssOst]:
    return [OssOst(index=o.index, capacity_bytes=o.capacity_bytes, dir=o.dir) for o in osts]


def plan(ctx: PlanContext) -> ServicePlan:
    lu = ctx.topo.spec.lustre
    mds_names = naming.series(naming.LUSTRE_MDS, lu.mds)[: 2 if lu.mds_ha and lu.mds >= 2 else 1]
    oss_names = naming.series(naming.LUSTRE_OSS, lu.oss)
    hosts_all = naming.series(naming.LUSTRE_MDS, lu.mds) + oss_names
    addrs = {h: ctx.hosts.addresses(h, LUSTRE_HOST_BASE + i) for i, h in enumerate(hosts_all)}
    nid = {h: addrs[h].get("storage", addrs[h]["oob"]) for h in hosts_all}   # the host's address for Lustre
    grpc = {h: f"{nid[h]}:{LUSTRE_GRPC_PORT}" for h in hosts_all}
    admin = {h: f"{addrs[h]['oob']}:{LUSTRE_GRPC_PORT}" for h in hosts_all}
    data = ctx.run_dir / "lustre"
    osts = _osts(lu, oss_names, grpc, admin, data)
    out = ServicePlan()
    mdt = MdtSpec(index=0, capacity_bytes=int(lu.mdt_size_tb * 1e12))
    mds_osts = [MdsOst(index=o.index, oss=o.oss, capacity_bytes=o.capacity_bytes) for o in osts]
    for n in mds_names:
        spec = MdsSpec(fsname=lu.fsname, admin=admin[n], mdt=mdt, osts=mds_osts,
                       ost_servers={o.index: o.servers for o in osts}, lock_file=str(data / "MDT0000.lock"))
        out.daemons.append(ctx.config(n, "lustre_mds", n, grpc[n], spec=spec, store=f"{lu.fsname}-MDT0000"))
        out.entries.append(MdsEntry(name=n, kind="lustre_mds", host=n, grpc=grpc[n], admin=admin[n],
                                    addresses=addrs[n], service="clustertwin.v1.LustreMds",
                                    netns=ctx.hosts.netns(n), fsname=lu.fsname, mdt=0,
                                    failover=[grpc[m] for m in mds_names if m != n]).model_dump())
    for oss in oss_names:
        mine = [o for o in osts if o.oss == oss]
        partner = mine[0].partner if mine else None   # failover: it takes over the partner's OSTs
        theirs = [o for o in osts if mine and o.oss == partner]
        oss_spec = OssSpec(fsname=lu.fsname, admin=admin[oss], data_dir=str(data), osts=_served(mine),
                           partner=partner, partner_osts=_served(theirs))
        out.daemons.append(ctx.config(oss, "lustre_oss", oss, grpc[oss], spec=oss_spec))
        out.entries.append(OssEntry(name=oss, kind="lustre_oss", host=oss, grpc=grpc[oss], admin=admin[oss],
                                    bulk=f"{nid[oss]}:{LUSTRE_GRPC_PORT + 1}", addresses=addrs[oss],
                                    service="clustertwin.v1.LustreOss", netns=ctx.hosts.netns(oss),
                                    osts=[o.index for o in mine], partner=partner).model_dump())
    mgs = ":".join(f"{nid[n]}@tcp" for n in mds_names)   # the MGS NIDs, on the storage network
    out.sections[SECTION] = LustreSection(fsname=lu.fsname, mgs=f"{mgs}:/{lu.fsname}", mds=[grpc[n] for n in mds_names],
                                          mds_admin=[admin[n] for n in mds_names], osts=osts,
                                          data_dir=str(data)).model_dump()
    return out
