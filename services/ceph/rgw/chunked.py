"""`Content-Encoding: aws-chunked` bodies: the streaming uploads SigV4 clients send when they do
not want to hash the whole body before sending it.

`x-amz-content-sha256` names the framing:
- STREAMING-AWS4-HMAC-SHA256-PAYLOAD: `hex-size;chunk-signature=SIG\r\n DATA \r\n`, ending with
  a zero-size chunk. Each SIG is HMAC over ("AWS4-HMAC-SHA256-PAYLOAD", date, scope, previous
  signature, sha256(""), sha256(DATA)), the first chained from the Authorization signature, so
  chunks can be neither altered, dropped nor reordered.
- STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER: the same, then trailer lines (`x-amz-checksum-…`)
  and an `x-amz-trailer-signature` over them chained from the last chunk's signature.
- STREAMING-UNSIGNED-PAYLOAD-TRAILER: `hex-size\r\n DATA \r\n` chunks, then the trailers; no
  signatures, the trailing checksum protects the data. boto3 ≥ 1.36 sends this for PutObject and
  UploadPart over https (over plain http it signs the payload and sends the checksum as a header).
The decoded length must equal `x-amz-decoded-content-length`.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping

from services.ceph.rgw import checksums
from services.ceph.rgw.s3_errors import S3Error
from services.ceph.rgw.sigv4 import Signed

SIGNED = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"
SIGNED_TRAILER = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER"
UNSIGNED_TRAILER = "STREAMING-UNSIGNED-PAYLOAD-TRAILER"
MODES = (SIGNED, SIGNED_TRAILER, UNSIGNED_TRAILER)
_EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()


def _incomplete(why: str) -> S3Error:
    return S3Error("IncompleteBody", f"the aws-chunked body is malformed: {why}")


def _sig_mismatch(what: str) -> S3Error:
    return S3Error("SignatureDoesNotMatch", f"the {what} signature we calculated does not match the one you provided")


def _hmac(signed: Signed, kind: str, prev: str, tail: list[str]) -> str:
    sts = "\n".join([kind, signed.amz_date, signed.scope, prev, *tail])
    return hmac.new(signed.key, sts.encode(), hashlib.sha256).hexdigest()


def decode(body: bytes, headers: Mapping[str, str], signed: Signed | None) -> tuple[bytes, dict[str, str]]:
    """The payload and the verified trailers (lower-case names) of an aws-chunked body."""
    mode = headers.get("x-amz-content-sha256", "")
    if mode not in MODES:
        raise S3Error("InvalidArgument", f"x-amz-content-sha256 {mode!r} is not a streaming mode S3 knows")
    chunk_signed = mode != UNSIGNED_TRAILER
    if chunk_signed and signed is None:
        raise S3Error("InvalidRequest", f"{mode} needs an AWS4-HMAC-SHA256 Authorization header")
    prev = signed.signature if signed is not None else ""
    out = bytearray()
    pos = 0
    while True:
        eol = body.find(b"\r\n", pos)
        if eol < 0:
            raise _incomplete("a chunk header has no CRLF")
        header = body[pos:eol].decode("latin-1")
        size_hex, _, ext = header.partition(";")
        try:
            size = int(size_hex.strip(), 16)
        except ValueError:
            raise _incomplete(f"chunk size {size_hex!r} is not hexadecimal") from None
        data = body[eol + 2: eol + 2 + size]
        if len(data) != size:
            raise _incomplete("a chunk is shorter than its declared size")
        pos = eol + 2 + size
        if chunk_signed:
            name, _, sig = ext.strip().partition("=")
            if name != "chunk-signature":
                raise _incomplete("a chunk has no chunk-signature")
            assert signed is not None
            want = _hmac(signed, "AWS4-HMAC-SHA256-PAYLOAD", prev, [_EMPTY_SHA256, hashlib.sha256(data).hexdigest()])
            if not hmac.compare_digest(want, sig.strip()):
                raise _sig_mismatch("chunk")
            prev = want
        if size == 0:
            break
        if body[pos: pos + 2] != b"\r\n":
            raise _incomplete("a chunk's data is not followed by CRLF")
        pos += 2
        out += data
    trailers = _trailers(body[pos:], mode, signed, prev)
    declared = headers.get("x-amz-decoded-content-length")
    if declared is not None and declared != str(len(out)):
        raise _incomplete(f"x-amz-decoded-content-length is {declared}, the chunks carry {len(out)} bytes")
    wanted = {t.strip().lower() for t in headers.get("x-amz-trailer", "").split(",") if t.strip()}
    if wanted - set(trailers):
        raise _incomplete(f"x-amz-trailer announced {sorted(wanted - set(trailers))} but the body did not send it")
    return bytes(out), checksums.verify(trailers, bytes(out))


def _trailers(rest: bytes, mode: str, signed: Signed | None, prev: str) -> dict[str, str]:
    if mode == SIGNED:
        if rest not in (b"\r\n", b""):
            raise _incomplete("data after the final chunk")
        return {}
    lines = rest.decode("latin-1").split("\r\n")
    trailers: dict[str, str] = {}
    text = ""
    trailer_sig = None
    for line in lines:
        if not line:
            continue
        name, sep, value = line.partition(":")
        if not sep:
            raise _incomplete(f"trailer line {line!r} has no colon")
        name = name.strip().lower()
        if name == "x-amz-trailer-signature":
            trailer_sig = value.strip()
            continue
        trailers[name] = value.strip()
        text += f"{name}:{value.strip()}\n"
    if mode == SIGNED_TRAILER:
        assert signed is not None
        if trailer_sig is None:
            raise _incomplete("no x-amz-trailer-signature")
        want = _hmac(signed, "AWS4-HMAC-SHA256-TRAILER", prev, [hashlib.sha256(text.encode()).hexdigest()])
        if not hmac.compare_digest(want, trailer_sig):
            raise _sig_mismatch("trailer")
    return trailers
