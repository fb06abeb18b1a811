"""`twin ceph ...`: the twin's Ceph cluster (`twin up --ceph`), as `ceph` and `radosgw-admin` show it.

    twin ceph status                       # ceph -s
    twin ceph health detail
    twin ceph osd tree | out ID | in ID | down ID
    twin ceph osd kill ID                  # kill -9 the OSD daemon (the supervisor restarts it)
    twin ceph osd stop ID | start ID       # a stopped OSD stays down (across restarts) until started
    twin ceph osd slow ID FACTOR           # slow disk: every chunk call takes FACTOR x the device model
    twin ceph osd corrupt --pool P --object O [--osd ID]     # flip a byte of one stored chunk
    twin ceph df
    twin ceph pg ls [--pool P] | deep-scrub [PGID] | repair [PGID]
    twin ceph user create --uid UID --display-name NAME [--email E] [--tenant T] [--access-key K --secret S]
    twin ceph user list
    twin ceph rbd create|ls|info|resize|snap ...|clone|rm|import|export   (services/ceph/cli_rbd.py)

kill, stop/start and slow are faults of the twin's fault API (the SDK's CephAdmin.inject_fault): each
is logged with its id (`twin fault list`) and published on the bus.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from rich.table import Table

from clustertwin.v1 import ceph_pb2 as pb
from emulator.cli.common import DEFAULT, RunDirOption, console, fail, user_errors
from services.ceph import cli_rbd as rbd
from services.ceph import status as ceph_status
from services.ceph.sdk import CephAdmin

T = TypeVar("T")

app = typer.Typer(no_args_is_help=True, help=__doc__)
osd_app = typer.Typer(no_args_is_help=True, help="OSDs: tree, map changes and faults.")
pg_app = typer.Typer(no_args_is_help=True, help="Placement groups: list, deep scrub, repair.")
user_app = typer.Typer(no_args_is_help=True, help="RGW users (radosgw-admin user ...).")
health_app = typer.Typer(help="Cluster health (HEALTH_OK/WARN/ERR); `detail` names PGs and objects.")
app.add_typer(osd_app, name="osd")
app.add_typer(pg_app, name="pg")
app.add_typer(user_app, name="user")
app.add_typer(health_app, name="health")


app.add_typer(rbd.app, name="rbd", help="RBD images (rbd create/ls/info/resize/snap/clone/rm).")


def admin(run_dir: Path) -> CephAdmin:
    with user_errors():
        return CephAdmin(run_dir)


def ask(run_dir: Path, call: Callable[[CephAdmin], T]) -> T:
    """`call` on the twin's Ceph admin client; a refusal or an unreachable monitor is a one-line error."""
    a = admin(run_dir)
    with user_errors():
        return call(a)


@app.command()
def status(run_dir: RunDirOption = DEFAULT,
           as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False) -> None:
    """`ceph -s`: health, daemons, OSDs up/in, pools, objects, usage and PG states."""
    r = ask(run_dir, CephAdmin.status)
    if as_json:
        print(json.dumps({"health": r.health, "osds": r.osds, "osds_up": r.osds_up, "osds_in": r.osds_in,
                          "epoch": r.epoch, "pg_states": dict(r.pg_states), "objects": r.objects,
                          "stored_bytes": r.stored_bytes, "raw_bytes": r.raw_bytes}, indent=2))
        return
    print(ceph_status.status_text(r), end="")


@health_app.callback(invoke_without_command=True)
def health(ctx: typer.Context, run_dir: RunDirOption = DEFAULT) -> None:
    """`ceph health`: the overall status and one line per check."""
    if ctx.invoked_subcommand:
        return
    print(ceph_status.health_detail_text(ask(run_dir, CephAdmin.health_detail)).splitlines()[0])


@health_app.command("detail")
def health_detail(run_dir: RunDirOption = DEFAULT) -> None:
    """`ceph health detail`: every check with the OSDs, PGs and objects it concerns."""
    print(ceph_status.health_detail_text(ask(run_dir, CephAdmin.health_detail)), end="")


@app.command()
def df(run_dir: RunDirOption = DEFAULT) -> None:
    """`ceph df`: per pool, what clients stored and the raw bytes it uses."""
    print(ceph_status.df_text(ask(run_dir, CephAdmin.df)), end="")


# -- osd ------------------------------------------------------------------------------------------

OsdId = Annotated[int, typer.Argument(help="OSD id, e.g. 3 for osd.3.", min=0)]


@osd_app.command("tree")
def osd_tree(run_dir: RunDirOption = DEFAULT) -> None:
    """`ceph osd tree`."""
    print(ceph_status.osd_tree_text(ask(run_dir, CephAdmin.osd_tree)), end="")


def _osd_command(run_dir: Path, osd: int, command: str) -> None:
    print(ask(run_dir, lambda a: a.osd_command(osd, command)))


@osd_app.command("out")
def osd_out(osd: OsdId, run_dir: RunDirOption = DEFAULT) -> None:
    """Mark an OSD out: CRUSH moves its shards elsewhere (backfill) if a spare host exists."""
    _osd_command(run_dir, osd, "out")


@osd_app.command("in")
def osd_in(osd: OsdId, run_dir: RunDirOption = DEFAULT) -> None:
    """Mark an OSD in again."""
    _osd_command(run_dir, osd, "in")


@osd_app.command("down")
def osd_down(osd: OsdId, run_dir: RunDirOption = DEFAULT) -> None:
    """Mark an OSD down in the map; a running OSD's next heartbeat marks it up again, as in Ceph."""
    _osd_command(run_dir, osd, "down")


# kill, stop, start and slow are shortcuts onto the fault API (CephAdmin.inject_fault/clear_fault):
# each fault is logged with its id (`twin fault list`) and published on the bus.

@osd_app.command("kill")
def osd_kill(osd: OsdId, run_dir: RunDirOption = DEFAULT) -> None:
    """kill -9 the OSD daemon. The supervisor restarts it; it keeps its data directory."""
    f = ask(run_dir, lambda a: a.inject_fault(osd, "kill"))
    console.print(f"osd.{osd} {f.effect} (fault {f.id})", highlight=False)


@osd_app.command("stop")
def osd_stop(osd: OsdId, run_dir: RunDirOption = DEFAULT) -> None:
    """Stop an OSD: marked down at once, refuses I/O, no heartbeats, stays so across restarts."""
    f, st = ask(run_dir, lambda a: (a.inject_fault(osd, "stop"), a.osd(osd, "Stat", pb.CephOsdStatRequest()).stat))
    console.print(f"osd.{st.osd} {st.state} (fault {f.id})", highlight=False)


@osd_app.command("start")
def osd_start(osd: OsdId, run_dir: RunDirOption = DEFAULT) -> None:
    """Start a stopped OSD: it heartbeats again and the monitor marks it up."""
    a = admin(run_dir)
    with user_errors():
        f = a.active_fault(osd, "stop")
        if f is not None:
            a.clear_fault(f.id)
        st = a.set_osd_fault(osd, stopped=False)   # also a stop the fault log does not know
    console.print(f"osd.{st.osd} {st.state}" + (f" (fault {f.id} cleared)" if f else ""), highlight=False)


@osd_app.command("slow")
def osd_slow(osd: OsdId, factor: Annotated[float, typer.Argument(help="Multiplier on the device model; 1 heals.")],
             run_dir: RunDirOption = DEFAULT) -> None:
    """Slow disk: every chunk call on the OSD takes FACTOR times the device model's time."""
    if not factor >= 1:
        fail(f"FACTOR must be >= 1 (1 = a healthy disk), got {factor:g}")
    a = admin(run_dir)
    with user_errors():
        old = a.active_fault(osd, "slow")
        if old is not None:
            a.clear_fault(old.id)
        f = a.inject_fault(osd, "slow", factor=factor) if factor > 1 else None
        st = a.set_osd_fault(osd, slow_factor=factor) if f is None else a.osd(osd, "Stat", pb.CephOsdStatRequest()).stat
    m = st.model
    console.print(f"osd.{st.osd} ({m.device_class}: {m.latency_s * 1e3:g} ms + {m.bandwidth_bytes_s / 1e6:g} MB/s) "
                  f"slow factor {st.slow_factor:g}" + (f" (fault {f.id})" if f else ""), highlight=False)


@osd_app.command("corrupt")
def osd_corrupt(
    pool: Annotated[str, typer.Option(help="Pool of the object.")] = "default.rgw.buckets.data",
    obj: Annotated[str, typer.Option("--object", help="RADOS object name.")] = "",
    osd: Annotated[int, typer.Option(help="The OSD whose shard to corrupt (-1: shard 0's).")] = -1,
    offset: Annotated[int, typer.Option(help="Byte to flip.", min=0)] = 0,
    run_dir: RunDirOption = DEFAULT,
) -> None:
    """Flip one byte of a stored chunk (bit rot), found by deep scrub and fixed by repair."""
    if not obj:
        fail("say which object: --object NAME (`twin ceph pg ls` and the gateway name them)")
    r = ask(run_dir, lambda a: a.corrupt(obj, pool, osd, offset))
    console.print(f"corrupted shard {r.shard} of {obj!r} (pg {r.pg}) on osd.{r.osd}", highlight=False)


# -- pg -------------------------------------------------------------------------------------------

@pg_app.command("ls")
def pg_ls(pool: Annotated[str, typer.Option(help="Only this pool.")] = "", run_dir: RunDirOption = DEFAULT) -> None:
    """`ceph pg ls`: every PG, its state, up and acting sets."""
    rows = ask(run_dir, lambda a: a.pgs(pool))
    table = Table("PG", "OBJECTS", "BYTES", "STATE", "UP", "ACTING", box=None)
    for p in rows:
        table.add_row(p.pgid, str(p.objects), str(p.bytes), p.state, f"[{','.join(map(str, p.up))}]",
                      f"[{','.join(map(str, p.acting))}]")
    console.print(table, highlight=False)


def _scrub(run_dir: Path, pgid: str, repair: bool) -> None:
    r = ask(run_dir, lambda a: a.scrub(pgid, repair))
    for e in r.errors:
        print(f"pg {e.pg}: {e.object} shard {e.shard} on osd.{e.osd}: {e.problem}")
    verb = "repaired" if repair else "deep-scrubbed"
    print(f"{verb} {r.pgs} pg(s): {len(r.errors)} error(s) found" + (f", {r.repaired} fixed" if repair else ""))


@pg_app.command("deep-scrub")
def pg_deep_scrub(pgid: Annotated[str, typer.Argument(help="PG id like 1.1a; default every PG with objects.")] = "",
                  run_dir: RunDirOption = DEFAULT) -> None:
    """Read every shard and check its CRC; errors make the PG inconsistent."""
    _scrub(run_dir, pgid, False)


@pg_app.command("repair")
def pg_repair(pgid: Annotated[str, typer.Argument(help="PG id like 1.1a; default every PG with objects.")] = "",
              run_dir: RunDirOption = DEFAULT) -> None:
    """`ceph pg repair`: rewrite bad shards from the good ones."""
    _scrub(run_dir, pgid, True)


# -- users ----------------------------------------------------------------------------------------

def _user_json(u: pb.CephRgwUser) -> dict[str, Any]:
    """As `radosgw-admin user create/info` prints a user."""
    uid = f"{u.tenant}${u.uid}" if u.tenant else u.uid
    quota = {"enabled": False, "check_on_raw": False, "max_size": -1, "max_size_kb": 0, "max_objects": -1}
    return {"user_id": uid, "display_name": u.display_name, "email": u.email, "suspended": 0, "max_buckets": 1000,
            "subusers": [], "keys": [{"user": uid, "access_key": u.access_key, "secret_key": u.secret_key}],
            "swift_keys": [], "caps": [], "op_mask": "read, write, delete", "default_placement": "",
            "default_storage_class": "", "placement_tags": [], "bucket_quota": quota, "user_quota": quota,
            "temp_url_keys": [], "type": "rgw", "mfa_ids": []}


@user_app.command("create")
def user_create(
    uid: Annotated[str, typer.Option("--uid", help="User id.")] = "",
    display_name: Annotated[str, typer.Option("--display-name", help="Display name.")] = "",
    email: Annotated[str, typer.Option("--email", help="E-mail address.")] = "",
    tenant: Annotated[str, typer.Option("--tenant", help="Tenant: the user is tenant$uid.")] = "",
    access_key: Annotated[str, typer.Option("--access-key", help="S3 access key (default generated).")] = "",
    secret: Annotated[str, typer.Option("--secret", "--secret-key", help="S3 secret (default generated).")] = "",
    run_dir: RunDirOption = DEFAULT,
) -> None:
    """`radosgw-admin user create`: prints the user as radosgw-admin does (JSON)."""
    u = ask(run_dir, lambda a: a.user_create(uid, display_name, email=email, tenant=tenant, access_key=access_key,
                                             secret_key=secret))
    print(json.dumps(_user_json(u), indent=4))


@user_app.command("list")
def user_list(run_dir: RunDirOption = DEFAULT) -> None:
    """`radosgw-admin user list`."""
    users = ask(run_dir, CephAdmin.users)
    print(json.dumps([f"{u.tenant}${u.uid}" if u.tenant else u.uid for u in users], indent=4))
