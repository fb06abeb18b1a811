"""A listing's offsets (services/lustre/client/session.py: `_readdir`, `cookie`): the kernel opens
directories without OPENDIR, so its READDIR requests carry no handle, and another reader may take the
listing again between two of them; the offsets are hashes of the names, as Lustre's readdir cookies are,
so a reader goes on after the last name it got. Every name there all along is listed exactly once."""

from __future__ import annotations

import stat

from services.lustre.client import kernel as k
from services.lustre.client.session import Session

PAGE = 200   # bytes the kernel's buffer holds: a few entries per request


class Listing:
    """The directory as the mount would list it: "." and "..", then its names."""

    def __init__(self, names: list[str]) -> None:
        self.names = names

    def listing(self, path: str, plus: bool) -> tuple[list, bool]:
        entries = [(n, {"st_mode": stat.S_IFREG | 0o644, "st_ino": 100 + i}) for i, n in enumerate(self.names)]
        return [(".", None), ("..", None), *entries], False


class Replies:
    def __init__(self) -> None:
        self.last = b""

    def reply(self, unique: int, *parts: bytes) -> None:
        self.last = b"".join(parts)


def page(s: Session, ch: Replies, offset: int) -> list[tuple[str, int]]:
    """One READDIR from `offset`: the (name, offset) of each entry it returned."""
    s.readdir(1, k.ROOT_ID, memoryview(k.READ_IN.pack(0, offset, PAGE, 0, 0, 0, 0)))
    out, raw, at = [], ch.last, 0
    while at < len(raw):
        _ino, off, namelen, _type = k.DIRENT.unpack_from(raw, at)
        at += k.DIRENT.size
        out.append((raw[at:at + namelen].decode(), off))
        at += (namelen + 7) // 8 * 8
    return out


def test_a_listing_taken_again_between_two_requests_goes_on_after_the_same_name() -> None:
    d = Listing([f"file{i:02d}" for i in range(30)])
    ch = Replies()
    s = Session(d, ch, 5.0, 0)
    try:
        got, offset = [], 0
        first = page(s, ch, 0)
        assert [n for n, _ in first[:2]] == [".", ".."] and len(first) < 32
        got += first
        offset = first[-1][1]
        # between two requests: a name already listed goes, a new one comes, and another reader lists
        # the directory from the start (the mount keeps one listing per directory)
        listed = {n for n, _ in got}
        d.names = [n for n in d.names if n != sorted(listed - {".", ".."})[0]] + ["late"]
        assert page(s, ch, 0)
        while batch := page(s, ch, offset):
            got += batch
            offset = batch[-1][1]
        names = [n for n, _ in got]
        assert len(names) == len(set(names)), "a name was listed twice"
        assert {f"file{i:02d}" for i in range(30)} <= set(names), "a name there all along was skipped"
        offsets = [off for _, off in got]
        assert offsets == sorted(offsets) and len(set(offsets)) == len(offsets)
        again, offset = [], 0
        while batch := page(s, ch, offset):
            again += [n for n, _ in batch]
            offset = batch[-1][1]
        assert sorted(again) == sorted([".", "..", *d.names])   # from 0 the listing is taken anew, whole
    finally:
        s.stop()
