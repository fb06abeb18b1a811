"""S3's additional checksums (`x-amz-checksum-<algorithm>`), base64 of the big-endian digest.

Shared by header checksums on PUT/UploadPart and the trailers of `aws-chunked` bodies, which is
how boto3 ≥ 1.36 sends them over TLS. Each digest is received.py's: taken as a big body arrived,
or computed when asked (CRC32C by the crc32c package, SSE4.2 where the CPU has it).
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

from services.ceph.rgw import received
from services.ceph.rgw.s3_errors import S3Error

ALGORITHMS: dict[str, Callable[[bytes], bytes]] = {
    "crc32": lambda d: received.digest(d, "crc32"),
    "crc32c": lambda d: received.digest(d, "crc32c"),
    "sha1": lambda d: received.digest(d, "sha1"),
    "sha256": lambda d: received.digest(d, "sha256"),
}


T = TypeVar("T")

# Hashes of big bodies (MD5 for the ETag, x-amz-checksum-*) run here, on another core, while the
# request thread verifies the SigV4 payload hash and erasure-codes the stripes: hashlib and zlib
# release the GIL on buffers this large. Each is still computed over every byte and checked.
PARALLEL_MIN = 1 << 20
_HASHERS = ThreadPoolExecutor(max_workers=2, thread_name_prefix="rgw-hash")


def alongside(fn: Callable[..., T], *args: Any) -> Future[T]:
    return _HASHERS.submit(fn, *args)


def compute(algorithm: str, data: bytes) -> str:
    return base64.b64encode(ALGORITHMS[algorithm](data)).decode()


def verify(values: Mapping[str, str], data: bytes) -> dict[str, str]:
    """Check every `x-amz-checksum-*` in `values` (lower-case names) against `data`; returns the
    verified ones (S3 echoes them in the response). A checksum S3 cannot compute is refused."""
    ok: dict[str, str] = {}
    for name, value in values.items():
        if not name.startswith("x-amz-checksum-") or name in ("x-amz-checksum-type", "x-amz-checksum-algorithm"):
            continue
        algorithm = name.removeprefix("x-amz-checksum-")
        if algorithm not in ALGORITHMS:
            raise S3Error("InvalidRequest", f"checksum algorithm {algorithm!r} is not supported by this gateway")
        if compute(algorithm, data) != value.strip():
            raise S3Error("BadDigest", f"the {algorithm.upper()} you specified did not match the calculated checksum")
        ok[name] = value.strip()
    return ok
