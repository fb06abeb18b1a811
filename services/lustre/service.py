"""Lustre as a service of the twin (`twin up --lustre`): the MDS and OSS daemons; FUSE client mounts."""

from __future__ import annotations

from emulator.service import DaemonKind, Service, ServiceError
from services.lustre.daemon_spec import MdsSpec, OssSpec
from services.lustre.plan import plan


def check(opts, topo) -> None:  # noqa: ANN001 - emulator.plan.Options, emulator.topology.Topology
    if "lustre" in opts.services and topo.spec.lustre is None:
        raise ServiceError(f"--lustre: topology {topo.name} ({topo.source}) has no lustre section")


def unmount(run) -> list[str]:  # noqa: ANN001 - emulator.rundir.RunDir
    """The twin's Lustre client mounts go before the servers: a FUSE client whose servers are gone
    cannot flush what was written, and its unmount would hang."""
    from services.lustre.client.mount import unmount_all
    return unmount_all(run.path)


def lustre_admin(twin):  # noqa: ANN001, ANN201 - emulator.client.Twin
    """Lustre's admin client (a twin started with --lustre)."""
    from services.lustre.sdk import LustreAdmin
    return LustreAdmin(twin.run, twin.manifest)


SERVICE = Service(
    name="lustre", summary="Also run Lustre: the MDS (active/standby with mds_ha) and the topology's OSS daemons.",
    order=40, plan=plan, check=check, before_down=unmount, down_order=20,
    daemons={"lustre_mds": DaemonKind("services.lustre.mds.daemon:run", MdsSpec),
             "lustre_oss": DaemonKind("services.lustre.oss.daemon:run", OssSpec)},
    cli={"lustre": "services.lustre.cli:app"},
    sdk={"lustre": lambda twin: lambda: lustre_admin(twin)},
)
