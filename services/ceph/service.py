"""Ceph as a service of the twin (`twin up --ceph`): a monitor, one daemon per OSD, the RGW gateway."""

from __future__ import annotations

from pathlib import Path

from emulator.service import DaemonKind, Service, ServiceError
from services.ceph.daemon_spec import MonSpec, OsdSpec, RgwSpec
from services.ceph.options import CephOptions
from services.ceph.plan import plan


def check(opts, topo):  # noqa: ANN001, ANN201 - emulator.plan.Options, emulator.topology.Topology
    """Refuse Ceph's options before anything starts; returns the options with the users file resolved."""
    on = "ceph" in opts.services
    if on and topo.spec.ceph is None:
        raise ServiceError(f"--ceph: topology {topo.name} ({topo.source}) has no ceph section")
    given = opts.of("ceph")
    o = CephOptions(**given)
    if o.rgw_lc_debug_interval and (not on or o.rgw_lc_debug_interval < 0):
        raise ServiceError("--rgw-lc-debug-interval needs --ceph and a number of seconds >= 0")
    if o.storage_timing != "model" and not on:
        raise ServiceError("--storage-timing needs --ceph")
    if not o.ceph_users:
        return None
    if not on:
        raise ServiceError("--ceph-users needs --ceph")
    from services.ceph.users_file import UsersFileError, load_users
    try:
        load_users(o.ceph_users)   # a bad file is refused before anything starts
    except UsersFileError as e:
        raise ServiceError(str(e)) from None
    return opts.with_options("ceph", given | {"ceph_users": str(Path(o.ceph_users).resolve())})


def ceph_admin(twin, timeout: float):  # noqa: ANN001, ANN201 - emulator.client.Twin
    """Ceph's admin client (a twin started with --ceph); `.rbd()` for RBD images."""
    from services.ceph.sdk import CephAdmin
    return CephAdmin(twin.run.path, timeout=timeout, manifest=twin.manifest)


def s3(twin, access_key: str, secret_key: str, **options):  # noqa: ANN001, ANN003, ANN201
    """A boto3 S3 client on the twin's gateway (keys of a user made with `ceph().user_create`).
    Under `--network netns` the gateway is on the storage plane: the client works only in a
    process inside one of the twin's host namespaces."""
    from emulator.rundir import RunDirError
    from services.ceph.manifest import gateway
    from services.ceph.sdk_s3 import s3_client
    rgw = gateway(twin.manifest)
    if rgw is None:
        raise RunDirError(f"twin {twin.name!r} runs no S3 gateway: start it with `twin up --ceph`")
    return s3_client(rgw.s3, access_key, secret_key, **options)


SERVICE = Service(
    name="ceph", summary="Also run Ceph: a monitor, one daemon per OSD of the topology's ceph section, "
    "and the RGW S3 gateway.",
    order=30, plan=plan, check=check, options=CephOptions,
    daemons={"ceph_mon": DaemonKind("services.ceph.mon.daemon:run", MonSpec),
             "ceph_osd": DaemonKind("services.ceph.osd.daemon:run", OsdSpec),
             "ceph_rgw": DaemonKind("services.ceph.rgw.daemon:run", RgwSpec)},
    cli={"ceph": "services.ceph.cli:app", "rbd": "services.ceph.cli_rbd:app"},
    sdk={"ceph": lambda twin: lambda timeout=60.0: ceph_admin(twin, timeout),
         "s3": lambda twin: lambda access_key, secret_key, **options: s3(twin, access_key, secret_key, **options)},
)
