"""The MDS's write locks (services/lustre/mds/ldlm.py) as a listing and a change recall them: a listing of a
directory calls back the write locks on files in it, and only those (found from the directory, not by
looking at every lock), and a lock that ended leaves nothing behind."""

from __future__ import annotations

import asyncio

from services.lustre.mds.ldlm import LockManager


def test_a_listing_recalls_the_write_locks_in_its_directory_only() -> None:
    async def run() -> None:
        locks = LockManager(timeout=5.0)
        locks.streams = {"c1": asyncio.Queue(), "c2": asyncio.Queue()}
        for p in ("/a/f1", "/a/f2", "/a/sub/g", "/b/f"):
            locks.grant_write("c1", p)
        locks.grant_write("c3", "/a/f3")   # no callback stream: no write lock

        async def answer() -> list[str]:   # c1 writes back and cancels each callback it gets
            called = []
            while len(called) < 2:
                cb = await locks.streams["c1"].get()
                called.append(cb.path)
                locks.cancelled(cb.seq)
            return called

        answering = asyncio.create_task(answer())
        await locks.recall("c2", [], listed="/a")
        # bounded only so that a recall that sent too few callbacks fails instead of hanging
        assert sorted(await asyncio.wait_for(answering, 10.0)) == ["/a/f1", "/a/f2"]
        assert locks.streams["c2"].empty()
        assert sorted(locks.writers) == ["/a/sub/g", "/b/f"]
        assert locks.written_in == {"/a/sub": {"/a/sub/g"}, "/b": {"/b/f"}}

        await locks.recall("c1", [], listed="/b")   # the holder's own listing keeps its lock
        assert "/b/f" in locks.writers and locks.streams["c1"].empty()
        await locks.recall("c1", ["/b/f"], ends=True)   # its own unlink ends it, with no callback
        assert locks.streams["c1"].empty()
        locks.evict("c1")
        assert locks.writers == {} and locks.written_in == {}

    asyncio.run(run())
