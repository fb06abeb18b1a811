"""The RGW gateway's view of the monitor daemon: `MonCluster` gives `Gateway` the part of `Cluster`
it calls (put/get/remove_object/list_objects) as calls to the monitor's `CephMon` RADOS methods, and
`MonUsers` the RGW users the monitor keeps. A failed call raises the monitor's CephError
(`CephError.from_rpc`); an unreachable monitor is UNAVAILABLE.
"""

from __future__ import annotations

import logging
import threading
import time

import grpc

from clustertwin.v1 import ceph_pb2 as pb
from clustertwin.v1 import ceph_pb2_grpc as pb_grpc
from emulator import paging
from emulator.frame_rpc import FramedChannel
from services.ceph.errors import CephError
from services.ceph.msgr import mon_framed_address
from services.ceph.rgw.direct_io import DirectIo
from services.ceph.rgw.group_call import GroupCall
from services.ceph.rgw.users import User, Users

log = logging.getLogger("ceph_rgw")

CALL_TIMEOUT_S = 60.0
CHANNEL_OPTIONS = [("grpc.max_receive_message_length", 64 << 20), ("grpc.max_send_message_length", 64 << 20)]


class MonCluster:
    """The part of `Cluster` the gateway uses, over the monitor daemon. With `direct`, objects' chunks
    are written and removed straight on the OSDs, and those of `direct_pool` (the EC data pool) read
    from them too (direct_io.py); the monitor keeps the metadata. Without it, the monitor does all."""

    def __init__(self, address: str, timeout: float = CALL_TIMEOUT_S, direct: DirectIo | None = None,
                 direct_pool: str = "") -> None:
        self.channel = grpc.insecure_channel(address, options=CHANNEL_OPTIONS)
        self.stub = pb_grpc.CephMonStub(self.channel)
        # The calls themselves go framed to the monitor's other port (emulator/frame_rpc.py): gRPC's
        # HTTP/2 cost the monitor more CPU per object commit than the commit did.
        self.framed = FramedChannel(mon_framed_address(address))
        self.calls = pb_grpc.CephMonStub(self.framed)
        self.timeout = timeout
        self.direct, self.direct_pool = direct, direct_pool
        if direct is not None:
            direct.bind(self._call)
        # Without `direct`: the writes of concurrent requests leave in one call.
        self._puts: GroupCall[pb.CephMonPutObjectRequest, pb.CephMonPutObjectResult] = GroupCall(
            lambda objs: list(self._call("PutObjects", pb.CephMonPutObjectsRequest(objects=objs)).results))

    def close(self) -> None:
        self.framed.close()
        self.channel.close()

    def _call(self, method: str, request: object) -> object:
        try:
            return getattr(self.calls, method)(request, timeout=self.timeout)
        except grpc.RpcError as e:
            raise CephError.from_rpc(e) from None  # a deadline, the monitor gone: UNAVAILABLE

    def _direct(self, pool: str) -> DirectIo | None:
        return self.direct if pool == self.direct_pool else None

    def put(self, pool: str, name: str, data: bytes | memoryview) -> str:
        if self.direct is not None:   # every pool's chunks go straight to the OSDs
            return self.direct.write(pool, name, data)
        data = data if isinstance(data, bytes) else bytes(data)  # protobuf takes bytes, not a stripe's view
        (r,) = self._puts.call([pb.CephMonPutObjectRequest(pool=pool, name=name, data=data)])
        if r.code:
            raise CephError(r.code, r.error)   # type: ignore[arg-type]
        return r.pg

    def get(self, pool: str, name: str) -> bytes:
        return self._get(pool, name, False)   # type: ignore[return-value]

    def get_pieces(self, pool: str, name: str) -> list[memoryview]:
        """`get`, the object as pieces in order (DirectIo.read's), for a sender that gathers them."""
        data = self._get(pool, name, True)
        return data if isinstance(data, list) else [memoryview(data)]

    def _get(self, pool: str, name: str, pieces: bool) -> bytes | list[memoryview]:
        direct = self._direct(pool)
        if direct is not None:
            data = direct.read(name, pieces)
            if data is not None:
                return data
        r = self._call("GetObject", pb.CephMonGetObjectRequest(pool=pool, name=name))
        if direct is not None:
            direct.learn(name, r.pg, r.placement)
        return r.data

    def remove_object(self, pool: str, name: str) -> None:
        if (direct := self._direct(pool)) is not None:
            direct.forget(name)
        self._call("RemoveObject", pb.CephMonRemoveObjectRequest(pool=pool, name=name))

    def remove_objects(self, pool: str, names: list[str]) -> tuple[list[str], str]:
        """Remove several objects in one call: (those not removed, why the first was not)."""
        if self.direct is not None:
            return self.direct.remove(pool, names)
        r = self._call("RemoveObjects", pb.CephMonRemoveObjectsRequest(pool=pool, names=names))
        return list(r.failed), r.error

    def list_objects(self, pool: str, prefix: str) -> list[pb.CephObjectStat]:
        """Every object of the pool with this prefix, in name order: all the monitor's pages."""
        req = pb.CephMonListObjectsRequest(pool=pool, prefix=prefix, page_size=paging.MAX_PAGE_SIZE)
        return paging.every_page(lambda r: self._call("ListObjects", r), req, "objects")

    def users(self) -> list[pb.CephRgwUser]:
        return list(self._call("UserList", pb.CephMonUserListRequest()).users)

    def create_user(self, user: pb.CephRgwUser) -> None:
        self._call("UserCreate", pb.CephMonUserCreateRequest(user=user))


class MonUsers(Users):
    """RGW users as the monitor keeps them. An unknown access key makes the gateway ask the monitor
    again, so a user is usable the moment `user create` returns; concurrent misses share one
    refresh when it started after they arrived (a flood of bad keys costs one call at a time)."""

    def __init__(self, cluster: MonCluster) -> None:
        super().__init__()
        self.cluster = cluster
        self._refreshed = 0.0  # when the last refresh started
        self._lock = threading.Lock()
        self.refresh()

    def refresh(self) -> None:
        with self._lock:
            self._refresh_locked()

    def _refresh_locked(self) -> None:
        self._refreshed = time.monotonic()
        for u in self.cluster.users():
            if u.access_key not in self._by_key:
                self._by_key[u.access_key] = User(u.uid, u.display_name, u.access_key, u.secret_key, u.tenant,
                                                  u.email)

    def _miss(self, access_key: str) -> None:
        if access_key in self._by_key:
            return
        asked = time.monotonic()
        with self._lock:
            if access_key in self._by_key or self._refreshed > asked:
                return
            try:
                self._refresh_locked()
            except CephError as e:
                log.warning("cannot fetch users from the monitor: %s", e.message)

    def by_key(self, access_key: str) -> User | None:
        self._miss(access_key)
        return super().by_key(access_key)

    def secret_of(self, access_key: str) -> str | None:
        self._miss(access_key)
        return super().secret_of(access_key)

    def by_id(self, user_id: str) -> User | None:
        return next((u for u in self._by_key.values() if u.id == user_id), None)


def seed_users(cluster: MonCluster, path: str | None) -> int:
    """Create the users of the start-up file through the monitor; returns how many were new."""
    if not path:
        return 0
    from services.ceph.users_file import UsersFileError, load_users
    try:
        users = load_users(path)
    except UsersFileError as e:   # checked at `twin up`; the monitor keeps the users it already made
        log.error("users file: %s", e)
        return 0
    have = {u.access_key for u in cluster.users()}
    made = 0
    for u in users:
        if u["access_key"] in have:
            continue
        try:
            cluster.create_user(pb.CephRgwUser(**u))
            made += 1
        except CephError as e:
            if e.code != "ALREADY_EXISTS":
                raise
            log.warning("users file %s: %s", path, e.message)
    return made
