"""emulator/event_ring.py, the replay-then-stream every WatchEvents runs (Ceph, Lustre): what is kept after
since_seq first, then what comes, each event once, from worker threads too."""

from __future__ import annotations

import asyncio
import threading

from emulator.event_ring import EventRing


def watched(ring: EventRing, since_seq: int, add_while_watching: int) -> list[tuple[int, str]]:
    """(seq, kind) of what a watcher from since_seq sees, while a thread adds `add_while_watching` events."""
    async def main() -> list[tuple[int, str]]:
        seen: list[tuple[int, str]] = []
        started = asyncio.Event()

        async def watch() -> None:
            stream = ring.stream(since_seq)
            first = asyncio.ensure_future(anext(stream))   # subscribes, then replays
            await asyncio.sleep(0)
            started.set()
            ev = await first
            while True:
                seen.append((ev["seq"], ev["kind"]))
                ev = await anext(stream)

        task = asyncio.create_task(watch())
        await started.wait()
        t = threading.Thread(target=lambda: [ring.add(f"new{i}", 0.0, "m") for i in range(add_while_watching)])
        t.start()
        t.join()
        for _ in range(50):   # the thread's events reach the loop through call_soon_threadsafe
            await asyncio.sleep(0)
        task.cancel()
        return seen

    return asyncio.run(main())


def test_replay_after_since_seq_then_new_events_each_once() -> None:
    ring = EventRing(kept=3)
    for i in range(5):
        ring.add(f"old{i}", float(i), "m", osd=i)
    assert watched(ring, 3, 2) == [(4, "old3"), (5, "old4"), (6, "new0"), (7, "new1")]


def test_only_the_kept_are_replayed_and_a_since_seq_from_the_future_means_from_now_on() -> None:
    ring = EventRing(kept=2)
    for i in range(4):
        ring.add(f"old{i}", 0.0, "m")
    assert watched(ring, 0, 1) == [(3, "old2"), (4, "old3"), (5, "new0")]
    assert watched(ring, 1000, 1) == [(6, "new0")]


def test_a_watcher_that_ended_takes_no_more_events() -> None:
    ring = EventRing()
    watched(ring, 0, 0)   # its call ended (cancelled) and its loop is closed
    assert not ring._watchers
    ring.add("later", 0.0, "m")
    assert [ev["kind"] for ev in asyncio.run(_first(ring))] == ["later"]


async def _first(ring: EventRing) -> list[dict]:
    stream = ring.stream(0)
    return [await anext(stream)]
