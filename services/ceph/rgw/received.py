"""A request body with the digests the front end computed while its bytes arrived.

RGW hashes a PUT body as it streams in (MD5 for the ETag, SHA-256 for the SigV4 payload check,
any `x-amz-checksum-*`), so none of that work waits for the last byte. The front end does the
same here: each digest a big body needs is followed by its own thread, one step behind the
socket (hashlib and zlib release the GIL on large buffers), and the gateway asks `digest(body,
algorithm)`, which uses the one computed on arrival or else computes it. Every byte is still hashed
and every check still made; only when changes.
"""

from __future__ import annotations

import hashlib
import threading
import zlib
from collections.abc import Callable
from concurrent.futures import Future
from typing import Protocol

import crc32c

STEP = 1 << 20  # hash in steps of at least this much (or what is left): fewer, larger updates


class _Hasher(Protocol):
    def update(self, data: memoryview, /) -> None: ...
    def digest(self) -> bytes: ...


class _Crc:
    """CRC-32 (zlib) or CRC-32C (SSE4.2 via crc32c) as a hasher; S3 sends both as 4 big-endian bytes."""

    def __init__(self, fn: Callable[[memoryview, int], int]) -> None:
        self.fn, self.value = fn, 0

    def update(self, data: memoryview) -> None:
        self.value = self.fn(data, self.value)

    def digest(self) -> bytes:
        return self.value.to_bytes(4, "big")


def new_hasher(algorithm: str) -> _Hasher:
    if algorithm == "crc32":
        return _Crc(zlib.crc32)
    if algorithm == "crc32c":
        return _Crc(crc32c.crc32c)
    return hashlib.new(algorithm)


STREAMED = ("md5", "sha1", "sha256", "crc32", "crc32c")  # what can be hashed as the bytes arrive


class ReceivedBody(bytearray):
    """The body buffer the socket is read into. `arrived(n)` says the first `n` bytes are in;
    `abandon()` says the rest never will be (the connection ended)."""

    def __init__(self, size: int, algorithms: tuple[str, ...] = ()) -> None:
        super().__init__(size)
        self._cond = threading.Condition()
        self._got = 0
        self._abandoned = False
        self.digests: dict[str, Future[bytes]] = {}
        view = memoryview(self)  # exported for the body's lifetime: it is never resized
        for algorithm in dict.fromkeys(algorithms):
            fut: Future[bytes] = Future()
            self.digests[algorithm] = fut
            threading.Thread(target=self._follow, args=(view, new_hasher(algorithm), fut),
                             name=f"rgw-{algorithm}", daemon=True).start()

    def arrived(self, n: int) -> None:
        with self._cond:
            self._got = n
            self._cond.notify_all()

    def abandon(self) -> None:
        with self._cond:
            self._abandoned = True
            self._cond.notify_all()

    def _follow(self, view: memoryview, hasher: _Hasher, fut: Future[bytes]) -> None:
        size, done = len(view), 0
        while done < size:
            with self._cond:
                while self._got - done < STEP and self._got < size and not self._abandoned:
                    self._cond.wait()
                got, abandoned = self._got, self._abandoned
            if got == done and abandoned:
                fut.cancel()
                return
            hasher.update(view[done:got])
            done = got
        fut.set_result(hasher.digest())


def wanted(method: str, headers: dict[str, str]) -> tuple[str, ...]:
    """The digests the gateway will take of this request's body: the ETag's MD5 for an object or
    part PUT, the declared SigV4 payload SHA-256, and any `x-amz-checksum-*` it can stream."""
    if method not in ("PUT", "POST"):
        return ()
    out = ["md5"] if method == "PUT" and "x-amz-copy-source" not in headers else []
    if len(headers.get("x-amz-content-sha256", "")) == 64:
        out.append("sha256")
    out += [a for a in STREAMED if f"x-amz-checksum-{a}" in headers]
    return tuple(dict.fromkeys(out))


def pending(data: bytes, algorithm: str) -> Future[bytes] | None:
    """The digest being computed as `data` arrived, if it is."""
    return getattr(data, "digests", {}).get(algorithm)  # type: ignore[no-any-return]


def digest(data: bytes, algorithm: str) -> bytes:
    """`algorithm`'s digest of `data`: the one computed as it arrived, if the front end did."""
    fut = pending(data, algorithm)
    if fut is not None:
        return fut.result()
    hasher = new_hasher(algorithm)
    hasher.update(memoryview(data))
    return hasher.digest()
