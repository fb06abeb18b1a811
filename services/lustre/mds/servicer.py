"""`clustertwin.v1.LustreMds` on grpc.aio: each call runs its namespace operation in a worker thread
(services.lustre.wire.answer), a refusal mapped to gRPC in services/lustre/errors.py. A standby MDS
refuses every filesystem call with EAGAIN, which clients take as "try the other MDS of the pair".
"""

from __future__ import annotations

import logging
import posixpath
import time
from collections.abc import Callable
from typing import Any, Protocol

import grpc

from clustertwin.v1 import lustre_pb2 as pb
from clustertwin.v1 import lustre_pb2_grpc as pb_grpc
from services.lustre import find as lfind
from services.lustre.errors import LustreError
from services.lustre.events import EventPublisher
from services.lustre.layout import StripeObject
from services.lustre.mds import params as mdt_params
from services.lustre.mds.namespace import DurableNamespace
from services.lustre.namespace import ROOT, Cred, Inode
from services.lustre.ost import MdtState, OstState, target_name
from services.lustre.wire import answer, dir_cookie, layout_to_pb, page_of, spec_from_pb, spec_to_pb, watch

# Inode times (atime, mtime, ctime: what stat shows through the FUSE client) are the machine's real
# time, not the twin clock: real Lustre stamps them with the client's and MDS's clocks, and under
# --clock-scale twin times would lie in the future for every program that compares them with the time
# it reads itself (make, find -newer, rsync, tar's "time stamp in the future"); utimens(UTIME_NOW)
# means the caller's now. What the twin reports of itself (events, faults) uses the twin clock.
inode_time = time.time_ns   # integer nanoseconds, as the MDT keeps them
ORDERS_KEPT = 64   # directories whose cookie order Readdir keeps
ATTRS_KEPT = 1 << 20   # inodes whose attribute message the MDS keeps

Ctx = grpc.aio.ServicerContext
log = logging.getLogger("lustre.mds")


class MdsState(Protocol):
    """What the servicer needs of the MDS daemon."""

    name: str
    fsname: str
    ns: DurableNamespace | None
    events: EventPublisher

    def destroy(self, objects: list[StripeObject]) -> None: ...


def cred_of(msg: pb.LustreCred) -> Cred:
    return Cred(msg.uid, msg.gid, tuple(msg.groups))


def attr_of(n: Inode, ns: DurableNamespace | None = None) -> pb.LustreAttr:
    a = pb.LustreAttr(fid=str(n.fid), ino=n.ino, mode=n.st_mode, nlink=n.nlink, uid=n.uid, gid=n.gid, size=n.size,
                      blocks=(n.size + 511) // 512, atime_ns=n.atime, mtime_ns=n.mtime, ctime_ns=n.ctime, rdev=n.rdev,
                      privileged_xattrs=ns is not None and ns.has_privileged_xattrs(n.ino))
    if n.layout is not None:
        a.layout.CopyFrom(layout_to_pb(n.layout))
    if n.default_spec is not None:
        a.default_spec.CopyFrom(spec_to_pb(n.default_spec))
    return a


def other_names(ns: DurableNamespace, node: Inode | None, but: str) -> list[str]:
    """A hard-linked file's names but `but`: what a client cached under them changed too."""
    if node is None or node.is_dir or node.nlink <= 1:
        return []
    return [p for p in ns.paths_of(node.ino) if p != but]


def lookup_or_none(ns: DurableNamespace, path: str, cred: Cred) -> Inode | None:
    try:
        return ns.lookup(path, cred)
    except LustreError:
        return None


def param_pb(p: mdt_params.Param) -> pb.LustreParam:
    return pb.LustreParam(name=p.name, value=p.value, min=p.min, max=p.max)


def target_pb(fsname: str, t: OstState | MdtState, kind: str, server: str) -> pb.LustreTargetState:
    return pb.LustreTargetState(uuid=target_name(fsname, kind, t.index), kind=kind, index=t.index, server=server,
                                capacity_bytes=t.capacity_bytes, used_bytes=t.used_bytes, avail_bytes=t.avail_bytes,
                                inodes_total=t.inodes_total, inodes_used=t.inodes_used, active=t.active,
                                degraded=getattr(t, "degraded", False), readonly=getattr(t, "readonly", False),
                                full=getattr(t, "full", False))


class MdsServicer(pb_grpc.LustreMdsServicer):
    def __init__(self, mds: MdsState) -> None:
        self.d = mds
        self._attrs: dict[int, tuple[tuple, pb.LustreAttr]] = {}   # Readdir's (servicer._attr_pb)
        self._orders: dict[int, tuple[tuple, list[str], list[int]]] = {}   # Readdir's (servicer._cookie_order)

    def _ns(self) -> DurableNamespace:
        ns = self.d.ns
        if ns is None:
            raise LustreError("EAGAIN", f"{self.d.name} is the standby MDS")
        return ns

    async def _call(self, context: Ctx, fn: Callable[[DurableNamespace], Any]) -> Any:
        return await answer(context, lambda: fn(self._ns()))

    async def _now(self, context: Ctx, fn: Callable[[DurableNamespace], Any]) -> Any:
        """A read of the in-memory namespace or a change of a few inodes (one short transaction), answered
        on the event loop: a worker thread's hand-off cost as much as the work (requests are serialised
        by the namespace lock anyway). Listings, statfs and find, which can take long, go to a worker
        (`_call`)."""
        try:
            return fn(self._ns())
        except LustreError as e:
            await e.abort(context)

    async def _removed(self, context: Ctx, fn: Callable[[DurableNamespace], list[StripeObject]]) \
            -> list[pb.LustreObject]:
        freed = await self._now(context, fn)
        self.d.destroy(freed)   # on the event loop: the destroyer's queue is an asyncio one
        return [pb.LustreObject(ost=o.ost, objid=o.objid, seq=o.seq) for o in freed]

    async def Getattr(self, request, context):  # noqa: N802
        return pb.LustreMdsGetattrResponse(attr=await self._now(
            context, lambda ns: self._attr_pb(ns, ns.lookup(request.path, cred_of(request.cred)))))

    async def Getstripe(self, request, context):  # noqa: N802
        return pb.LustreMdsGetstripeResponse(attr=await self._now(
            context, lambda ns: attr_of(ns.lookup(request.path, cred_of(request.cred)), ns)))

    async def Create(self, request, context):  # noqa: N802
        r = request
        spec = spec_from_pb(r.spec) if r.HasField("spec") else None

        def create(ns: DurableNamespace) -> pb.LustreMdsCreateResponse:
            with ns.lock:   # the directory as this create left it
                node = ns.create(r.path, inode_time(), r.mode or 0o644, cred_of(r.cred), spec, r.delay_layout,
                                 r.exclusive)
                return pb.LustreMdsCreateResponse(attr=self._attr_pb(ns, node), parent=self._attr_pb(
                    ns, ns.lookup(posixpath.dirname(r.path.rstrip("/")) or "/", cred_of(r.cred))))
        return await self._now(context, create)

    async def Mkdir(self, request, context):  # noqa: N802
        r = request
        spec = spec_from_pb(r.spec) if r.HasField("spec") else None
        return pb.LustreMdsMkdirResponse(attr=await self._now(context, lambda ns: attr_of(ns.mkdir(
            r.path, inode_time(), r.mode or 0o755, cred_of(r.cred), spec), ns)))

    async def Unlink(self, request, context):  # noqa: N802
        linked: list[str] = []
        parent: list[pb.LustreAttr] = []

        def unlink(ns: DurableNamespace) -> list[StripeObject]:
            with ns.lock:   # the directory as this unlink left it
                cred = cred_of(request.cred)
                ino = ns.lookup(request.path, cred).ino
                freed = ns.unlink(request.path, inode_time(), cred, request.open)
                linked.extend(ns.paths_of(ino))
                d = lookup_or_none(ns, posixpath.dirname(request.path.rstrip("/")) or "/", cred)
                if d is not None and d.is_dir:   # none for an orphan's FID path
                    parent.append(self._attr_pb(ns, d))
                return freed
        freed = await self._removed(context, unlink)
        return pb.LustreMdsUnlinkResponse(freed=freed, linked=linked, parent=parent[-1] if parent else None)

    async def Rmdir(self, request, context):  # noqa: N802
        return pb.LustreMdsRmdirResponse(freed=await self._removed(
            context, lambda ns: ns.rmdir(request.path, inode_time(), cred_of(request.cred)) or []))

    async def Rename(self, request, context):  # noqa: N802
        r = request
        linked: list[str] = []

        def rename(ns: DurableNamespace) -> list[StripeObject]:
            with ns.lock:
                node, old = ns.lookup(r.src, cred_of(r.cred)), lookup_or_none(ns, r.dst, cred_of(r.cred))
                freed = ns.rename(r.src, r.dst, inode_time(), cred_of(r.cred))
                linked.extend(other_names(ns, node, r.dst))
                if old is not None and old is not node and not old.is_dir:   # its other names' nlink fell
                    linked.extend(p for p in ns.paths_of(old.ino) if p != r.dst)
                return freed
        freed = await self._removed(context, rename)
        return pb.LustreMdsRenameResponse(freed=freed, linked=linked)

    async def Link(self, request, context):  # noqa: N802
        r = request

        def link(ns: DurableNamespace) -> pb.LustreMdsLinkResponse:
            with ns.lock:
                node = ns.link(r.src, r.dst, inode_time(), cred_of(r.cred))
                return pb.LustreMdsLinkResponse(attr=attr_of(node, ns), linked=ns.paths_of(node.ino))
        return await self._now(context, link)

    async def Symlink(self, request, context):  # noqa: N802
        r = request
        return pb.LustreMdsSymlinkResponse(attr=await self._now(context, lambda ns: attr_of(ns.symlink(
            r.path, r.target, inode_time(), cred_of(r.cred)), ns)))

    async def Mknod(self, request, context):  # noqa: N802
        r = request
        return pb.LustreMdsMknodResponse(attr=await self._now(context, lambda ns: attr_of(ns.mknod(
            r.path, r.mode, r.rdev, inode_time(), cred_of(r.cred)), ns)))

    async def Readlink(self, request, context):  # noqa: N802
        return pb.LustreMdsReadlinkResponse(target=await self._now(
            context, lambda ns: ns.readlink(request.path, cred_of(request.cred))))

    async def Readdir(self, request, context):  # noqa: N802
        r = request

        def readdir(ns: DurableNamespace) -> pb.LustreMdsReaddirResponse:
            # in cookie order, as Lustre's readdir pages go (wire.dir_cookie); attributes for this page only
            with ns.lock:
                d = ns.directory(r.path, cred_of(r.cred))
                names, cookies = self._cookie_order(d, ns.versions.get(d.ino, 0))
                got, token = page_of("Readdir", names, r.page_size, r.page_token, keys=cookies)
                return pb.LustreMdsReaddirResponse(entries=[
                    pb.LustreDirEntry(name=n, attr=self._attr_pb(ns, d.children[n])) for n in got],
                    next_page_token=token)
        return await self._call(context, readdir)

    def _attr_pb(self, ns: DurableNamespace, n: Inode) -> pb.LustreAttr:
        """attr_of(n), kept while the inode is unchanged (building the message costs more than the rest
        of a Readdir page): any change of an inode saves it, which counts its version (read before the
        message is built: a change meanwhile leaves a key that no longer matches)."""
        key = (id(ns), ns.versions.get(n.ino, 0))
        hit = self._attrs.get(n.ino)
        if hit is None or hit[0] != key:
            if len(self._attrs) >= ATTRS_KEPT:   # removed inodes' too: start again
                self._attrs.clear()
            hit = self._attrs[n.ino] = (key, attr_of(n, ns))
        return hit[1]

    def _cookie_order(self, d: Inode, version: int) -> tuple[list[str], list[int]]:
        """A directory's names in cookie order and their cookies, kept while it is unchanged (each of a
        large directory's pages would sort it all again): any change of its entries saves its inode,
        which counts its `version` (DurableNamespace.versions)."""
        key = (version, len(d.children))
        hit = self._orders.get(d.ino)
        if hit is None or hit[0] != key:
            names = sorted(d.children, key=dir_cookie)
            hit = self._orders[d.ino] = (key, names, [dir_cookie(n) for n in names])
            while len(self._orders) > ORDERS_KEPT:
                del self._orders[next(iter(self._orders))]
        return hit[1], hit[2]

    async def Setattr(self, request, context):  # noqa: N802
        r = request
        kw = {k: getattr(r, k) for k in ("mode", "uid", "gid", "size") if r.HasField(k)}
        kw |= {k[:-3]: getattr(r, k) for k in ("atime_ns", "mtime_ns") if r.HasField(k)}

        def setattr_(ns: DurableNamespace) -> pb.LustreMdsSetattrResponse:
            with ns.lock:
                node = ns.setattr(r.path, inode_time(), cred_of(r.cred), grow_only=r.grow_only,
                                  explicit_times=r.explicit_times, append=r.append, read_atime=r.read_atime, **kw)
                return pb.LustreMdsSetattrResponse(attr=self._attr_pb(ns, node), linked=other_names(ns, node, r.path))
        return await self._now(context, setattr_)

    async def Setstripe(self, request, context):  # noqa: N802
        r = request
        return pb.LustreMdsSetstripeResponse(attr=await self._now(context, lambda ns: attr_of(ns.setstripe(
            r.path, spec_from_pb(r.spec), inode_time(), cred_of(r.cred)), ns)))

    async def Statfs(self, request, context):  # noqa: N802
        def statfs(ns: DurableNamespace) -> pb.LustreMdsStatfsResponse:
            with ns.lock:
                fs = ns.fsname
                return pb.LustreMdsStatfsResponse(fsname=fs, mdts=[target_pb(fs, ns.ns.mdt, "MDT", self.d.name)],
                                            osts=[target_pb(fs, o, "OST", o.oss) for o in ns.ns.osts.values()])
        return await self._call(context, statfs)

    async def Getxattr(self, request, context):  # noqa: N802
        r = request
        return pb.LustreMdsGetxattrResponse(value=await self._now(
            context, lambda ns: ns.get_xattr(r.path, r.name, cred_of(r.cred))))

    async def Listxattr(self, request, context):  # noqa: N802
        r = request

        def listxattr(ns: DurableNamespace) -> pb.LustreMdsListxattrResponse:
            names, token = page_of("Listxattr", ns.list_xattrs(r.path, cred_of(r.cred)), r.page_size, r.page_token)
            return pb.LustreMdsListxattrResponse(names=names, next_page_token=token)
        return await self._call(context, listxattr)

    async def Setxattr(self, request, context):  # noqa: N802
        r = request

        def setxattr(ns: DurableNamespace) -> pb.LustreMdsSetxattrResponse:
            with ns.lock:
                ns.set_xattr(r.path, r.name, r.value, r.flags, inode_time(), cred_of(r.cred))
                return pb.LustreMdsSetxattrResponse(linked=other_names(ns, ns.lookup(r.path, ROOT), r.path))
        return await self._now(context, setxattr)

    async def Removexattr(self, request, context):  # noqa: N802
        r = request

        def removexattr(ns: DurableNamespace) -> pb.LustreMdsRemovexattrResponse:
            with ns.lock:
                ns.remove_xattr(r.path, r.name, inode_time(), cred_of(r.cred))
                return pb.LustreMdsRemovexattrResponse(linked=other_names(ns, ns.lookup(r.path, ROOT), r.path))
        return await self._now(context, removexattr)

    async def Find(self, request, context):  # noqa: N802
        r = request

        def run(ns: DurableNamespace) -> pb.LustreMdsFindResponse:
            q = lfind.FindQuery(
                name=r.name or None, size=lfind.parse_size_filter(r.size) if r.size else None,
                stripe_count=lfind.parse_count_filter(r.stripe_count) if r.stripe_count else None,
                ost=r.ost if r.ost >= 0 else None, type=r.type or None)
            with ns.lock:
                return pb.LustreMdsFindResponse(paths=lfind.find(ns.ns, r.start or "/", q))
        return await self._call(context, run)

    async def Status(self, request, context):  # noqa: N802
        ns = self.d.ns
        return pb.LustreMdsStatusResponse(name=self.d.name, role="active" if ns else "standby",
                                          fsname=self.d.fsname, inodes=ns.inode_count() if ns else 0)

    async def GetParams(self, request, context):  # noqa: N802
        return await self._now(context, lambda ns: pb.LustreMdsGetParamsResponse(
            params=[param_pb(p) for p in mdt_params.listing(ns.ns)]))

    async def SetParam(self, request, context):  # noqa: N802
        def set_(ns: DurableNamespace) -> pb.LustreMdsSetParamResponse:
            p = mdt_params.set_param(ns.ns, request.name, request.value)
            log.info("%s: lctl set_param %s=%d", self.d.name, p.name, p.value)
            return pb.LustreMdsSetParamResponse(param=param_pb(p))
        return await self._now(context, set_)

    async def WatchEvents(self, request, context):  # noqa: N802
        async for ev in watch(self.d.events, request.since_seq):
            yield pb.LustreMdsWatchEventsResponse(event=ev)
