"""An S3 request as the HTTP front end hands it to the gateway, and the response it gets back."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

# A piece of a response body: bytes, or a list of buffers to send in order as one (one RADOS object's
# stripe units, gathered by the sender's writev rather than joined first: ErasureCode.decode_pieces).
Part = bytes | memoryview | list[memoryview]


def part_len(part: Part) -> int:
    return sum(len(p) for p in part) if isinstance(part, list) else len(part)


@dataclass
class Request:
    method: str
    raw_path: str  # as on the request line, still percent-encoded, without the query
    raw_query: str
    headers: dict[str, str]  # lower-case names
    body: bytes = b""
    remote: str = ""  # the client's address (aws:SourceIp)
    secure: bool = False  # came over TLS (aws:SecureTransport)
    checksums: dict[str, str] = field(default_factory=dict)  # verified x-amz-checksum-* (headers or trailers)


@dataclass
class Response:
    status: int
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes = b""
    length: int | None = None  # Content-Length when it is not len(body) (HEAD, or a body in `parts`)
    parts: Iterable[Part] | None = None  # a GET's body as its RADOS objects' data, read and sent in turn
