"""Retiring names from the kernel's cache (services/lustre/client/session.py: retire, settle): a blocking
callback for a directory with many cached names queues one expiry per name and waits once, however many,
so a kernel that holds the directory's lock cannot make the callback outlast the MDS's 5 s eviction."""

from __future__ import annotations

import threading

from services.lustre.client import kernel as k
from services.lustre.client import session
from services.lustre.client.session import Session

HANG_GUARD_S = 10.0   # only so that a retire stuck on the kernel fails the test instead of hanging it


class BlockedChannel:
    """A /dev/fuse stand-in whose notifications wait until `open` is set (the kernel holding the
    directory's lock), then are recorded."""

    def __init__(self) -> None:
        self.open = threading.Event()
        self.sent: list[tuple[int, bytes]] = []

    def notify(self, code: int, *parts: bytes) -> int:
        self.open.wait()
        self.sent.append((code, b"".join(parts)))
        return 0


def test_retiring_many_names_queues_their_expiry_and_settle_waits_once(monkeypatch) -> None:
    monkeypatch.setattr(session, "EXPIRE_WAIT_S", 30.0)
    ch = BlockedChannel()
    s = Session(object(), ch, 5.0, 0)
    names = [f"/f{i}" for i in range(50)]
    for p in names:
        s._ref(p)
    retired = threading.Event()

    def retire_all() -> None:
        if all(s.retire(p) for p in names):
            retired.set()

    threading.Thread(target=retire_all, daemon=True).start()
    assert retired.wait(HANG_GUARD_S), "retire waited on the kernel: a callback would wait once per name"
    assert all(p not in s.ids for p in names)   # the next lookup of each makes a new node
    assert not ch.sent
    ch.open.set()
    s.settle()   # everything queued before it has reached the kernel
    head = k.INVAL_ENTRY.size
    assert [(code, raw[:head], raw[head:]) for code, raw in ch.sent] == [
        (k.NOTIFY_INVAL_ENTRY, k.INVAL_ENTRY.pack(k.ROOT_ID, len(p) - 1, k.EXPIRE_ONLY), p[1:].encode() + b"\0")
        for p in names]
    s.stop()


def test_a_name_the_kernel_holds_open_is_not_retired() -> None:
    ch = BlockedChannel()
    ch.open.set()
    s = Session(object(), ch, 5.0, 0)
    nid = s._ref("/open")
    s._opened(nid)
    assert not s.retire("/open")
    assert s.ids["/open"] == nid
    assert s.retire("/open", opens=1)   # its own last handle closing (an O_APPEND writer's flush)
    s.settle()
    assert len(ch.sent) == 1 and "/open" not in s.ids
    s.stop()
