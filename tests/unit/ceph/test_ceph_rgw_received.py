"""A body hashed as it arrives: the digests equal those of the whole body whatever the steps the
bytes came in, and a body that never completes leaves no digest waiting."""

from __future__ import annotations

import hashlib
import os
import zlib
from concurrent.futures import CancelledError

import pytest

from services.ceph.rgw.received import ReceivedBody, digest, pending, wanted


@pytest.mark.parametrize("steps", [[0], [1, 7, 4096, 3 << 20], [5 << 20]])
def test_digests_follow_arrival(steps: list[int]) -> None:
    data = os.urandom(5 << 20)
    body = ReceivedBody(len(data), ("md5", "sha256", "crc32"))
    for n in [*steps, len(data)]:
        body[:n] = data[:n]
        body.arrived(n)
    assert digest(body, "md5") == hashlib.md5(data).digest()
    assert digest(body, "sha256") == hashlib.sha256(data).digest()
    assert digest(body, "crc32") == zlib.crc32(data).to_bytes(4, "big")
    assert pending(body, "sha1") is None and digest(body, "sha1") == hashlib.sha1(data).digest()


def test_abandoned_body_cancels_its_digests() -> None:
    body = ReceivedBody(4 << 20, ("md5",))
    body.arrived(1 << 20)
    body.abandon()
    fut = pending(body, "md5")
    assert fut is not None
    with pytest.raises(CancelledError):
        fut.result(timeout=5)


def test_plain_bytes_are_hashed_when_asked() -> None:
    assert digest(b"abc", "md5") == hashlib.md5(b"abc").digest()
    assert pending(b"abc", "md5") is None
    assert digest(b"123456789", "crc32c") == bytes.fromhex("e3069283")  # the CRC-32C check value (RFC 3720)
    assert digest(b"123456789", "crc32") == bytes.fromhex("cbf43926")


def test_crc32c_follows_arrival() -> None:
    data = b"123456789" * 500_000
    body = ReceivedBody(len(data), ("crc32c",))
    for n in (1, 2 << 20, len(data)):
        body[:n] = data[:n]
        body.arrived(n)
    assert digest(body, "crc32c") == digest(bytes(data), "crc32c")


def test_wanted_digests() -> None:
    sha = "0" * 64
    signed = {"x-amz-content-sha256": sha, "x-amz-checksum-crc32": "AAAAAA=="}
    assert wanted("PUT", signed) == ("md5", "sha256", "crc32")
    assert wanted("PUT", {"x-amz-content-sha256": "UNSIGNED-PAYLOAD", "x-amz-copy-source": "/b/k"}) == ()
    assert wanted("POST", {"x-amz-checksum-sha256": "x"}) == ("sha256",)
    assert wanted("GET", {"x-amz-content-sha256": sha}) == ()
