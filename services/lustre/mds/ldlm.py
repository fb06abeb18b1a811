"""LDLM for the clients' caches, as the MDS's lock manager gives them: a client that reads an inode's
attributes or a directory's entries holds a lock on it (granted with the reply, here implicitly), and
may cache them as long as it holds it; when another client changes the inode, the MDS sends each holder
a blocking callback and the lock is gone (the holder drops what it cached and asks again).

The twin's locks are per path (the MDS protocol is path-based): a read (Getattr, Readdir: the directory
and every entry listed, Create: the new file) grants the caller a lock on those paths; a change revokes
the locks of the others on the changed path and, for a namespace change, on the parent directory (its
listing changed) or, for a rename or rmdir, on every path under it. The lock is granted before the read
runs and revoked after the change is committed, so a read that saw the old state always gets the
callback; the change answers its caller once every holder has answered its callback (as a Lustre client
cancels its lock), so what the changer does next no other client sees stale. A holder that does not
answer within LOCK_TIMEOUT_S is evicted. Only a client with its callback stream (the Ldlm RPC) open
holds locks; a client without one (lfs, the SDK) caches nothing and its changes still revoke the
others'. Locks live in the active MDS's memory: after a failover the clients reconnect their streams and
drop everything they cached (Lustre's clients replay their locks instead).

Write locks: a client that creates a file with its callback stream open holds the file's write lock (as
a Lustre writer holds its PW extent lock): it may keep what it wrote, and the size, in its own memory
after close and write them back later (client/fuse.py). Any other client's read or change of that path
(or a listing of its directory, or a change of a directory above it) first sends the holder a blocking
callback, which it answers once the data is on the OSTs and the size on the MDS; then the call runs. The
holder keeps its write lock through its own changes (a Lustre client caches its locks until they
conflict), except those that remove, move or link the path (unlink, rename, link: it wrote back or dropped first).

    attach(MdsServicer(daemon), LockManager())   # wraps the servicer's methods; adds Ldlm
"""

from __future__ import annotations

import asyncio
import functools
import logging
import posixpath
from collections.abc import AsyncIterator, Callable
from typing import Any

from clustertwin.v1 import lustre_pb2 as pb
from services.lustre.errors import LustreError

log = logging.getLogger("lustre.ldlm")
UUID_KEY = "lustre-client-uuid"
LOCK_TIMEOUT_S = 5.0   # a holder that does not answer a blocking callback within it is evicted


def parent(path: str) -> str:
    return posixpath.dirname(path.rstrip("/")) or "/"


class LockManager:
    """Locks per path, each holder's callback queue, and the callbacks not yet answered; used on the
    daemon's event loop only."""

    def __init__(self, timeout: float = LOCK_TIMEOUT_S) -> None:
        self.timeout = timeout
        self.holders: dict[str, set[str]] = {}
        self.writers: dict[str, str] = {}   # path -> the client holding its write lock
        self.written_in: dict[str, set[str]] = {}   # directory -> its paths in `writers` (a listing recalls them)
        self.streams: dict[str, asyncio.Queue] = {}
        self.unanswered: dict[int, asyncio.Future] = {}
        self.seq = 0
        self.evictions = 0

    def grant(self, client: str | None, paths: list[str]) -> None:
        if client and client in self.streams:
            for p in paths:
                self.holders.setdefault(p, set()).add(client)

    def grant_write(self, client: str | None, path: str) -> None:
        if client and client in self.streams:
            self.writers[path] = client
            self.written_in.setdefault(parent(path), set()).add(path)

    def _end_write(self, path: str) -> None:
        del self.writers[path]
        d = parent(path)
        paths = self.written_in.get(d)
        if paths is not None:
            paths.discard(path)
            if not paths:
                del self.written_in[d]

    async def recall(self, by: str | None, paths: list[str], subtree: list[str] = (), listed: str | None = None,
                     ends: bool = False) -> None:
        """Write locks of other clients than `by` on `paths`, on files under `subtree` or in directory
        `listed` called back (each holder writes back, then answers); with `ends`, `by`'s own there end
        too (the path is removed or moved)."""
        if not self.writers:
            return
        hit = [p for p in [*paths, *subtree] if p in self.writers]
        if listed is not None:
            hit += list(self.written_in.get(listed, ()))
        if subtree:
            prefixes = tuple(root.rstrip("/") + "/" for root in subtree)
            hit += [p for p in self.writers if p.startswith(prefixes)]
        waits: dict[asyncio.Future, str] = {}
        for p in hit:
            holder = self.writers.get(p)
            if holder is None or holder == by and not ends:
                continue
            self._end_write(p)
            if holder == by:
                continue
            if holder in self.streams:
                waits[self._send(holder, p, False)] = holder
        if waits:
            _done, late = await asyncio.wait(waits, timeout=self.timeout)
            for f in late:
                self.evict(waits[f])

    async def revoke(self, by: str | None, paths: list[str], subtree: list[str] = ()) -> None:
        """Blocking callbacks to every holder but `by` of `paths` and of every path under `subtree`;
        returns once each has answered, or was evicted for not answering within the lock timeout."""
        gone: list[tuple[str, bool]] = [(p, False) for p in paths] + [(p, True) for p in subtree]
        for root in subtree:
            prefix = root.rstrip("/") + "/"
            gone += [(p, False) for p in self.holders if p.startswith(prefix)]
        waits: dict[asyncio.Future, str] = {}
        for p, sub in gone:
            # a subtree's callback goes to every client with a stream (entries under it it may cache)
            who = set(self.streams) if sub else self.holders.get(p, set())
            for c in [c for c in who if c != by]:
                waits[self._send(c, p, sub)] = c
            if p in self.holders:
                self.holders[p] &= {by} if by else set()
                if not self.holders[p]:
                    del self.holders[p]
        if not waits:
            return
        _done, late = await asyncio.wait(waits, timeout=self.timeout)
        for f in late:
            self.evict(waits[f])

    def _send(self, client: str, path: str, subtree: bool) -> asyncio.Future:
        self.seq += 1
        fut = asyncio.get_running_loop().create_future()
        self.unanswered[self.seq] = fut
        self.streams[client].put_nowait(pb.LustreMdsLdlmResponse(path=path, subtree=subtree, seq=self.seq))
        return fut

    def cancelled(self, seq: int) -> None:
        fut = self.unanswered.pop(seq, None)
        if fut is not None and not fut.done():
            fut.set_result(None)

    def evict(self, client: str) -> None:
        """A holder that did not answer: its locks dropped and its stream ended (it reconnects and
        drops everything it cached)."""
        q = self.streams.pop(client, None)
        if q is not None:
            self.evictions += 1
            log.warning("evicting client %s: a blocking callback went unanswered for %.0f s", client, self.timeout)
            q.put_nowait(None)
        self._drop(client)

    async def stream(self, requests: AsyncIterator[pb.LustreMdsLdlmRequest], client: str) \
            -> AsyncIterator[pb.LustreMdsLdlmResponse]:
        if client in self.streams:   # a reconnect: the old stream's locks are gone with it
            self.evict(client)
        q: asyncio.Queue = asyncio.Queue()
        self.streams[client] = q

        async def answers() -> None:
            async for r in requests:
                self.cancelled(r.cancel)
            q.put_nowait(None)   # the client closed its side

        reader = asyncio.create_task(answers())
        try:
            yield pb.LustreMdsLdlmResponse(ready=True)
            while (cb := await q.get()) is not None:
                yield cb
        finally:
            reader.cancel()
            if self.streams.get(client) is q:
                del self.streams[client]
                self._drop(client)

    def _drop(self, client: str) -> None:
        for p in [p for p, who in self.writers.items() if who == client]:
            self._end_write(p)
        for p in [p for p, who in self.holders.items() if client in who]:
            self.holders[p].discard(client)
            if not self.holders[p]:
                del self.holders[p]


def _client(context: Any) -> str | None:
    for k, v in context.invocation_metadata() or ():
        if k == UUID_KEY:
            return v
    return None


READS: dict[str, Callable[[Any], list[str]]] = {
    "Getattr": lambda r: [r.path],
    "Getstripe": lambda r: [r.path],
    "Readdir": lambda r: [r.path],
    "Getxattr": lambda r: [r.path],
    "Listxattr": lambda r: [r.path],
}
CHANGES: dict[str, Callable[[Any], tuple[list[str], list[str]]]] = {   # (paths, subtrees)
    "Create": lambda r: ([r.path, parent(r.path)], []),
    "Mkdir": lambda r: ([r.path, parent(r.path)], []),
    "Unlink": lambda r: ([r.path, parent(r.path)], []),
    "Rmdir": lambda r: ([parent(r.path)], [r.path]),
    "Rename": lambda r: ([parent(r.src), parent(r.dst)], [r.src, r.dst]),
    "Link": lambda r: ([r.src, r.dst, parent(r.dst)], []),   # the source's link count changed too
    "Symlink": lambda r: ([r.path, parent(r.path)], []),
    "Mknod": lambda r: ([r.path, parent(r.path)], []),
    "Setattr": lambda r: ([r.path], []),
    "Setstripe": lambda r: ([r.path], []),
    "Setxattr": lambda r: ([r.path], []),
    "Removexattr": lambda r: ([r.path], []),
}


# the creator and a setattr's caller hold the lock on what they changed (they cache its attributes; a
# create's reply carries the directory's too, and a new directory's entries are none)
GRANTS: dict[str, Callable[[Any], list[str]]] = {
    "Create": lambda r: [r.path, parent(r.path)],
    "Mkdir": lambda r: [r.path],
    "Setattr": lambda r: [r.path],
}


# the holder's write lock on the path ends when the path goes, moves or gains a name (its writes would
# not call back through the other name)
ENDS_WRITE = {"Unlink", "Rename", "Rmdir", "Link"}


def attach(servicer: Any, mgr: LockManager) -> Any:
    """`servicer` with its reads granting locks and its changes revoking them, and the Ldlm stream."""
    for name, paths in READS.items():
        setattr(servicer, name, _read(getattr(servicer, name), mgr, paths, name == "Readdir"))
    servicer.Find = _find(servicer.Find, mgr)
    for name, paths in CHANGES.items():
        setattr(servicer, name, _change(getattr(servicer, name), mgr, name, paths, GRANTS.get(name)))

    async def Ldlm(requests, context):  # noqa: N802, ANN001, ANN202
        try:
            servicer._ns()   # a standby refuses (EAGAIN): the client goes on to the active MDS
        except LustreError as e:
            await e.abort(context)
        first = await anext(aiter(requests), None)
        if first is None or not first.client_uuid:
            await LustreError("EINVAL", "Ldlm: the first message names the client (client_uuid)").abort(context)
        async for cb in mgr.stream(requests, first.client_uuid):
            yield cb

    servicer.Ldlm = Ldlm
    return servicer


def _read(fn: Callable, mgr: LockManager, paths: Callable[[Any], list[str]], listing: bool) -> Callable:
    @functools.wraps(fn)
    async def call(request, context):  # noqa: ANN001, ANN202
        client = _client(context)
        await mgr.recall(client, paths(request), listed=request.path.rstrip("/") or "/" if listing else None)
        mgr.grant(client, paths(request))
        reply = await fn(request, context)
        if listing and client:   # the entries listed come with their attributes: the client caches them
            base = request.path.rstrip("/")
            mgr.grant(client, [f"{base}/{e.name}" for e in reply.entries])
        return reply
    return call


def _change(fn: Callable, mgr: LockManager, name: str, paths: Callable[[Any], tuple[list[str], list[str]]],
            grants: Callable[[Any], list[str]] | None) -> Callable:
    @functools.wraps(fn)
    async def call(request, context):  # noqa: ANN001, ANN202
        client = _client(context)
        plain, subtrees = paths(request)
        await mgr.recall(client, plain, subtrees, ends=name in ENDS_WRITE)
        if grants is not None:
            mgr.grant(client, grants(request))
        reply = await fn(request, context)
        if name == "Create":
            mgr.grant_write(client, request.path)
        plain += getattr(reply, "linked", [])   # a hard-linked file's other names: their link count changed
        await mgr.revoke(client, plain, subtrees)
        return reply
    return call


def _find(fn: Callable, mgr: LockManager) -> Callable:
    """`lfs find` matches sizes: the files under its start written back first."""
    @functools.wraps(fn)
    async def call(request, context):  # noqa: ANN001, ANN202
        await mgr.recall(_client(context), [request.start], [request.start])
        return await fn(request, context)
    return call
