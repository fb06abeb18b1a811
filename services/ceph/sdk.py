"""Client of the twin's Ceph (`twin up --ceph`): `Twin.ceph()`, what `twin ceph` and `twin fault ... osd.N` use.

    ceph = Twin.connect(run_dir).ceph()
    ceph.status().health                        # "HEALTH_OK"; status.status_text(ceph.status()) is `ceph -s`
    ceph.osd_command(4, "out")                  # ceph osd out 4
    f = ceph.inject_fault(4, "slow", factor=10)    # applied, logged and published; f.id is "osd.4-1"
    ceph.list_faults()
    ceph.clear_fault(f.id)
    ceph.user_create("alice", "Alice", access_key=AK, secret_key=SK)
    ceph.rbd().create("rbd", "disk1", 1 << 30)

The monitor (`clustertwin.v1.CephMon`, `CephRbd`) and the OSD daemons (`CephOsd`) are found
through the manifest. Calls return the generated messages (`clustertwin.v1.ceph_pb2`); a refusal
raises `TwinRpcError`, a bad argument `ValueError` or `KeyError`, before anything changes.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc

from clustertwin.v1 import ceph_pb2 as pb
from clustertwin.v1 import ceph_pb2_grpc as pb_grpc
from emulator import paging
from emulator.errors import BadInput, NotFound, TwinRpcError
from emulator.manifest import Manifest
from emulator.rundir import RunDir, RunDirError
from emulator.sdk import daemons
from services.ceph.manifest import OsdEntry, gateway, osds

OPTIONS = [("grpc.max_receive_message_length", 64 << 20)]
IO_PIECE = 16 << 20   # RBD reads and writes go in calls of at most this many bytes
OSD_FAULT_KINDS = ("stop", "kill", "down", "slow", "corrupt", "out")
DATA_POOL = "default.rgw.buckets.data"
SNAP_METHODS = ("SnapCreate", "SnapRollback", "SnapRemove", "SnapProtect", "SnapUnprotect")


def _call(stub: Any, method: str, request: Any, target: str, timeout: float) -> Any:
    """One call; a List RPC called without page_token returns every page in one reply (its lists joined)."""
    try:
        return paging.joined(lambda r: getattr(stub, method)(r, timeout=timeout), request)
    except grpc.RpcError as e:
        raise TwinRpcError(target, e.code(), e.details() or "") from None


def _events(stream: Any, target: str) -> Iterator[pb.CephEvent]:
    """The events of a WatchEvents stream until the caller stops iterating (which cancels the call)."""
    try:
        for response in stream:
            yield response.event
    except grpc.RpcError as e:
        if e.code() != grpc.StatusCode.CANCELLED:
            raise TwinRpcError(target, e.code(), e.details() or "") from None
    finally:
        stream.cancel()


class RbdClient:
    """The monitor's CephRbd service; write/read split big buffers into calls of at most 16 MiB."""

    def __init__(self, address: str, timeout: float = 120.0) -> None:
        self.channel = grpc.insecure_channel(address, options=[("grpc.max_receive_message_length", 64 << 20),
                                                               ("grpc.max_send_message_length", 64 << 20)])
        self.stub = pb_grpc.CephRbdStub(self.channel)
        self.timeout = timeout

    def call(self, method: str, request: Any) -> Any:
        return _call(self.stub, method, request, "ceph-mon", self.timeout)

    def close(self) -> None:
        self.channel.close()

    def watch(self, pool: str = "", image: str = "", since_seq: int = 0,
              timeout: float | None = None) -> Iterator[pb.CephEvent]:
        """`rbd watch`: header changes of an image (or a pool's, or all) until you stop iterating (or
        `timeout` seconds pass)."""
        req = pb.CephRbdWatchEventsRequest(pool=pool, image=image, since_seq=since_seq)
        return _events(self.stub.WatchEvents(req, timeout=timeout), "ceph-mon")

    def create(self, pool: str, name: str, size: int) -> pb.CephRbdImage:
        return self.call("Create", pb.CephRbdCreateRequest(pool=pool, name=name, size=size)).image

    def list(self, pool: str = "rbd") -> list[str]:
        return list(self.call("List", pb.CephRbdListRequest(pool=pool)).names)

    def info(self, pool: str, name: str) -> pb.CephRbdImage:
        return self.call("Info", pb.CephRbdInfoRequest(pool=pool, name=name)).image

    def resize(self, pool: str, name: str, size: int, allow_shrink: bool = False) -> None:
        self.call("Resize", pb.CephRbdResizeRequest(pool=pool, name=name, size=size, allow_shrink=allow_shrink))

    def remove(self, pool: str, name: str) -> None:
        self.call("Remove", pb.CephRbdRemoveRequest(pool=pool, name=name))

    def snaps(self, pool: str, name: str) -> list[pb.CephRbdSnap]:
        return list(self.call("SnapList", pb.CephRbdSnapListRequest(pool=pool, name=name)).snaps)

    def snap(self, method: str, pool: str, image: str, snap: str) -> Any:
        """SnapCreate, SnapRollback, SnapRemove, SnapProtect or SnapUnprotect."""
        if method not in SNAP_METHODS:
            raise BadInput(f"no RBD snapshot call {method!r}: one of {', '.join(SNAP_METHODS)}")
        return self.call(method, getattr(pb, f"CephRbd{method}Request")(pool=pool, image=image, snap=snap))

    def clone(self, parent_pool: str, parent: str, snap: str, pool: str, name: str) -> pb.CephRbdImage:
        return self.call("Clone", pb.CephRbdCloneRequest(parent_pool=parent_pool, parent=parent, snap=snap, pool=pool,
                                                         name=name)).image

    def write(self, pool: str, name: str, offset: int, data: bytes) -> int:
        mv = memoryview(data)
        for off in range(0, len(data), IO_PIECE):
            self.call("Write", pb.CephRbdWriteRequest(pool=pool, name=name, offset=offset + off,
                                                      data=bytes(mv[off: off + IO_PIECE])))
        return len(data)

    def read(self, pool: str, name: str, offset: int, length: int, snap: str = "") -> bytes:
        out = bytearray()
        while len(out) < length:
            n = min(IO_PIECE, length - len(out))
            got = self.call("Read", pb.CephRbdReadRequest(pool=pool, name=name, offset=offset + len(out), length=n,
                                                          snap=snap)).data
            out += got
            if len(got) < n:
                break
        return bytes(out)


class CephAdmin:
    """The twin's Ceph from outside: the monitor's CephMon service and the OSD daemons, by the manifest."""

    def __init__(self, run_dir: Path | str, timeout: float = 60.0, manifest: Manifest | None = None) -> None:
        self.run = RunDir(run_dir)
        self.manifest = manifest if manifest is not None else self.run.load_manifest()
        self.daemons = {d.name: d for d in self.manifest.daemons}
        self.osds = {d.osd: d for d in osds(self.manifest)}
        mons = self.manifest.daemons_of("ceph_mon")
        if not mons:
            raise RunDirError(f"the twin in {self.run.path} runs no Ceph: start it with `twin up --ceph`")
        self.mon_address = mons[0].grpc
        self.timeout = timeout
        self.channel = grpc.insecure_channel(self.mon_address, options=OPTIONS)
        self.mon = pb_grpc.CephMonStub(self.channel)

    def call(self, method: str, request: Any, target: str = "ceph-mon", stub: Any = None) -> Any:
        """Any CephMon method by name (or another stub's, e.g. an OSD's)."""
        return _call(stub or self.mon, method, request, target, self.timeout)

    def close(self) -> None:
        self.channel.close()

    def rbd(self) -> RbdClient:
        return RbdClient(self.mon_address)

    def s3_endpoint(self) -> str:
        rgw = gateway(self.manifest)
        if rgw is None:
            raise RunDirError(f"the twin in {self.run.path} runs no S3 gateway: start it with `twin up --ceph`")
        return rgw.s3

    # cluster state
    def status(self) -> pb.CephMonStatusResponse:
        """`ceph -s`'s values: health and its checks, OSDs up/in, PG states, usage
        (services/ceph/status.py's status_text renders them as `ceph -s` prints them)."""
        return self.call("Status", pb.CephMonStatusRequest())

    def health_detail(self) -> pb.CephMonHealthDetailResponse:
        return self.call("HealthDetail", pb.CephMonHealthDetailRequest())

    def df(self) -> pb.CephMonDfResponse:
        return self.call("Df", pb.CephMonDfRequest())

    def events(self, since_seq: int = 0, timeout: float | None = None) -> Iterator[pb.CephEvent]:
        """`ceph -w`: the monitor's events (those it kept after since_seq, then new ones) until you stop
        iterating (or `timeout` seconds pass: DEADLINE_EXCEEDED)."""
        req = pb.CephMonWatchEventsRequest(since_seq=since_seq)
        return _events(self.mon.WatchEvents(req, timeout=timeout), "ceph-mon")

    def osd_events(self, osd: int, since_seq: int = 0, timeout: float | None = None) -> Iterator[pb.CephEvent]:
        """One OSD daemon's own events (osd_stop, osd_start, osd_slow, chunk_corrupt), as events()."""
        d = self.osd_entry(osd)
        ch = grpc.insecure_channel(d.grpc, options=OPTIONS)
        try:
            req = pb.CephOsdWatchEventsRequest(since_seq=since_seq)
            yield from _events(pb_grpc.CephOsdStub(ch).WatchEvents(req, timeout=timeout), d.name)
        finally:
            ch.close()

    def osd_tree(self) -> pb.CephMonOsdTreeResponse:
        return self.call("OsdTree", pb.CephMonOsdTreeRequest())

    def pgs(self, pool: str = "", obj: str = "") -> list[pb.CephPg]:
        return list(self.call("Pgs", pb.CephMonPgsRequest(pool=pool, object=obj)).pgs)

    def scrub(self, pgid: str = "", repair: bool = False) -> pb.CephMonScrubResponse:
        """Deep-scrub (or repair) one PG, or every PG with objects."""
        return self.call("Scrub", pb.CephMonScrubRequest(pg=pgid, repair=repair))

    # OSDs
    def osd_entry(self, osd: int) -> OsdEntry:
        d = self.osds.get(osd)
        if d is None:
            ids = sorted(self.osds)
            raise NotFound(f"there is no osd.{osd} in this twin (OSDs {ids[0]}..{ids[-1]})")
        return d

    def osd(self, osd: int, method: str, request: Any) -> Any:
        """A CephOsd method on one OSD daemon."""
        d = self.osd_entry(osd)
        with grpc.insecure_channel(d.grpc, options=OPTIONS) as ch:
            return self.call(method, request, d.name, pb_grpc.CephOsdStub(ch))

    def osd_command(self, osd: int, command: str) -> str:
        """`ceph osd out|in|down ID`; returns the monitor's message."""
        return self.call("OsdCommand", pb.CephMonOsdCommandRequest(osd=osd, command=command)).message

    def set_osd_fault(self, osd: int, **fields: Any) -> pb.CephOsdStat:
        """The OSD daemon's own fault state: stopped=True|False, slow_factor=F (1 heals)."""
        return self.osd(osd, "SetFault", pb.CephOsdSetFaultRequest(**fields)).stat

    def corrupt(self, obj: str, pool: str = DATA_POOL, osd: int = -1,
                offset: int = 0) -> pb.CephMonCorruptChunkResponse:
        """Flip one byte of a stored chunk (osd -1: shard 0's)."""
        where = {"osd": osd} if osd >= 0 else {}
        return self.call("CorruptChunk", pb.CephMonCorruptChunkRequest(pool=pool, object=obj, offset=offset, **where))

    def pid(self, name: str) -> int:
        """A Ceph daemon's pid while the supervisor's record of it still holds (RunDirError if not)."""
        return daemons.running_pid(self.run, name)

    def kill(self, name: str) -> int:
        """SIGKILL a Ceph daemon by the supervisor's record of its pid; the supervisor restarts it."""
        return daemons.kill(self.run, name)

    # RGW users
    def user_create(self, uid: str, display_name: str, email: str = "", tenant: str = "", access_key: str = "",
                    secret_key: str = "") -> pb.CephRgwUser:
        """`radosgw-admin user create` (keys generated when not given)."""
        if not uid:
            raise BadInput("no user id specified (--uid)")
        if not display_name:
            raise BadInput("no display name specified (--display-name)")
        return self.call("UserCreate", pb.CephMonUserCreateRequest(user=pb.CephRgwUser(
            uid=uid, display_name=display_name, email=email, tenant=tenant, access_key=access_key,
            secret_key=secret_key))).user

    def users(self) -> list[pb.CephRgwUser]:
        return list(self.call("UserList", pb.CephMonUserListRequest()).users)

    # the fault API (`twin fault inject|clear|list osd.N`; `twin ceph osd kill|stop|start|slow` are shortcuts)
    def inject_fault(self, osd: int, kind: str, factor: float = 0.0, obj: str = "",
                     pool: str = DATA_POOL) -> pb.CephFault:
        """Apply an OSD fault, then log it on the monitor, which gives it its id (`.id`, osd.N-<n>) and
        publishes it (events/ceph/fault, retained on faults/ceph/<id> while active). Kinds:
        stop (stays down until cleared), kill (kill -9 of the recorded pid, its start time checked;
        the supervisor restarts it), down (marked down by the monitor until its next heartbeat),
        out, slow (--factor F > 1), corrupt (a byte of --object's shard)."""
        self._check_fault(osd, kind, factor, obj)
        effect = self._apply(osd, kind, factor, obj, pool)
        fault = pb.CephFault(kind=kind, osd=osd, factor=factor, pool=pool if kind == "corrupt" else "", object=obj,
                             effect=effect)
        return self.call("RecordFault", pb.CephMonRecordFaultRequest(fault=fault)).fault

    def _check_fault(self, osd: int, kind: str, factor: float, obj: str) -> None:
        if kind not in OSD_FAULT_KINDS:
            raise BadInput(f"an OSD fault needs --kind {'|'.join(OSD_FAULT_KINDS)}"
                             + (f", not {kind!r}" if kind else ""))
        if kind == "slow" and not factor > 1:
            raise BadInput("--kind slow needs --factor F with F > 1 (1 is a healthy disk)")
        if kind == "corrupt" and not obj:
            raise BadInput("--kind corrupt needs --object NAME "
                             "(a RADOS object: `twin ceph pg ls`, the gateway's names)")
        self.osd_entry(osd)   # NotFound for an OSD this twin does not have

    def _apply(self, osd: int, kind: str, factor: float, obj: str, pool: str) -> str:
        if kind == "stop":
            self.set_osd_fault(osd, stopped=True)
            return "stopped: marked down at once, refuses I/O, stays down until cleared"
        if kind == "kill":
            return f"killed (pid {self.kill(f'osd.{osd}')}) with SIGKILL; the supervisor restarts it"
        if kind == "slow":
            st = self.set_osd_fault(osd, slow_factor=factor)
            return f"slow disk: every chunk call takes {st.slow_factor:g}x the {st.model.device_class} model"
        if kind in ("out", "down"):
            return self.osd_command(osd, kind).strip()
        r = self.corrupt(obj, pool, osd)
        return f"corrupted shard {r.shard} of {obj!r} (pg {r.pg})"

    def clear_fault(self, fault_id: str, osd: int | None = None) -> pb.CephFault:
        """Undo an OSD fault (start, heal, mark in, repair the PG; a kill or a mark-down is over by
        itself) and log it cleared. `osd`: refuse the id unless it is that OSD's."""
        f = {f.id: f for f in self.list_faults(include_cleared=True)}.get(fault_id)
        if f is None or (osd is not None and f.osd != osd):
            raise NotFound(f"no fault {fault_id!r}" + (f" on osd.{osd}" if osd is not None else "")
                           + " (see `twin fault list`)")
        if f.active:
            if f.kind == "stop":
                self.set_osd_fault(f.osd, stopped=False)
            elif f.kind == "slow":
                self.set_osd_fault(f.osd, slow_factor=1.0)
            elif f.kind == "out":
                self.osd_command(f.osd, "in")
            elif f.kind == "corrupt":
                self.scrub(self.pgs(f.pool, f.object)[0].pgid, repair=True)
        return self.call("ClearFault", pb.CephMonClearFaultRequest(id=fault_id)).fault

    def list_faults(self, include_cleared: bool = False) -> list[pb.CephFault]:
        """The OSD fault log, oldest first (active ones only unless `include_cleared`)."""
        return list(self.call("ListFaults", pb.CephMonListFaultsRequest(include_cleared=include_cleared)).faults)

    def active_fault(self, osd: int, kind: str) -> pb.CephFault | None:
        return next((f for f in self.list_faults() if f.osd == osd and f.kind == kind), None)

    # the names the fault API had before (emulator/sdk/faults.py, workloads and tests still use them)
    inject_osd_fault = inject_fault
    clear_osd_fault = clear_fault
    osd_faults = list_faults

    def __enter__(self) -> CephAdmin:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()
