"""Real boto3 and raw HTTP against the RGW gateway: presigned URLs (SigV4 and boto3's default SigV2),
SigV2 header auth, and streaming aws-chunked uploads (signed chunks by hand, boto3's unsigned
trailer over https)."""

from __future__ import annotations

import hashlib
import hmac
import os
import subprocess
import urllib.error
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import boto3
import pytest
import requests
from botocore.client import BaseClient
from botocore.config import Config
from botocore.exceptions import ClientError

from services.ceph.rgw.cluster_setup import DATA_POOL, INDEX_POOL, rgw_cluster
from services.ceph.rgw.gateway import Gateway
from services.ceph.rgw.http import RunningServer, start_in_thread, tls_context
from services.ceph.rgw.users import Users
from tests.integration import test_ceph_rgw_s3 as base
from tests.integration.test_ceph_rgw_s3 import ALICE, code

gateway = base.gateway  # the shared fixtures: one gateway and client per test module
s3 = base.s3


def _urlopen(url: str, method: str = "GET", data: bytes | None = None,
             headers: dict[str, str] | None = None) -> tuple[int, bytes]:
    req = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def _urlopen_later(gw: Gateway, url: str, seconds: float) -> tuple[int, bytes]:
    """Open `url` with the gateway's clock `seconds` ahead (a presigned URL past its expiry)."""
    wall = gw.wall
    gw.wall = lambda: wall() + seconds  # type: ignore[method-assign]
    try:
        return _urlopen(url)
    finally:
        gw.wall = wall  # type: ignore[method-assign]


def test_presigned_v4_get_put_expired_tampered(gateway: tuple[Gateway, RunningServer], s3: BaseClient) -> None:
    gw, _ = gateway
    s3.create_bucket(Bucket="presign")
    put_url = s3.generate_presigned_url("put_object", Params={"Bucket": "presign", "Key": "up.bin"}, ExpiresIn=300)
    assert "X-Amz-Signature=" in put_url and "X-Amz-Expires=300" in put_url
    data = os.urandom(70_000)
    status, _ = _urlopen(put_url, "PUT", data)
    assert status == 200
    get_url = s3.generate_presigned_url("get_object", Params={"Bucket": "presign", "Key": "up.bin"}, ExpiresIn=300)
    assert _urlopen(get_url) == (200, data)
    assert requests.get(get_url, timeout=10).content == data

    tampered = get_url.replace("up.bin", "other.bin")
    status, body = _urlopen(tampered)
    assert status == 403 and b"<Code>SignatureDoesNotMatch</Code>" in body
    sig = get_url.split("X-Amz-Signature=")[1][:64]
    flipped = get_url.replace(sig, ("0" if sig[0] != "0" else "1") + sig[1:])
    assert _urlopen(flipped)[0] == 403

    status, body = _urlopen_later(gw, get_url, 301)
    assert status == 403 and b"<Code>AccessDenied</Code>" in body and b"Request has expired" in body
    status, body = _urlopen(tampered.replace("X-Amz-Expires=300", "X-Amz-Expires=999999"))
    assert status == 400 and b"AuthorizationQueryParametersError" in body


def test_presigned_v2_default_and_sigv2_header(gateway: tuple[Gateway, RunningServer], s3: BaseClient) -> None:
    """boto3 1.44 presigns S3 URLs with SigV2 unless told s3v4; the AWS CLI and old SDKs sign headers with it."""
    gw, server = gateway
    v2 = boto3.client("s3", endpoint_url=f"http://127.0.0.1:{server.port}", region_name="us-east-1",
                      aws_access_key_id=ALICE.access_key, aws_secret_access_key=ALICE.secret_key,
                      config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}))
    s3.create_bucket(Bucket="sigv2")
    s3.put_object(Bucket="sigv2", Key="a b+c", Body=b"hello v2")
    url = v2.generate_presigned_url("get_object", Params={"Bucket": "sigv2", "Key": "a b+c"}, ExpiresIn=60)
    assert "AWSAccessKeyId=" in url and "X-Amz-" not in url
    assert _urlopen(url) == (200, b"hello v2")
    assert _urlopen(url.replace("a%20b", "a%20c"))[0] == 403
    status, body = _urlopen_later(gw, url, 120)
    assert status == 403 and b"Request has expired" in body

    hv2 = boto3.client("s3", endpoint_url=f"http://127.0.0.1:{server.port}", region_name="us-east-1",
                       aws_access_key_id=ALICE.access_key, aws_secret_access_key=ALICE.secret_key,
                       config=Config(signature_version="s3", s3={"addressing_style": "path"},
                                     retries={"max_attempts": 1}))
    hv2.put_object(Bucket="sigv2", Key="dir/x", Body=b"x" * 1000, Metadata={"k": "v"})
    assert hv2.get_object(Bucket="sigv2", Key="dir/x")["Metadata"] == {"k": "v"}
    assert [o["Key"] for o in hv2.list_objects_v2(Bucket="sigv2", Prefix="dir/")["Contents"]] == ["dir/x"]
    mpu = hv2.create_multipart_upload(Bucket="sigv2", Key="m")  # sub-resources are part of the v2 signature
    hv2.abort_multipart_upload(Bucket="sigv2", Key="m", UploadId=mpu["UploadId"])
    bad = boto3.client("s3", endpoint_url=f"http://127.0.0.1:{server.port}", region_name="us-east-1",
                       aws_access_key_id=ALICE.access_key, aws_secret_access_key="wrong",
                       config=Config(signature_version="s3", retries={"max_attempts": 1}))
    with pytest.raises(ClientError) as e:
        bad.list_buckets()
    assert code(e) == "SignatureDoesNotMatch"


# -- streaming aws-chunked ---------------------------------------------------------------------------


def _sign(key: bytes, msg: str) -> bytes:
    return hmac.new(key, msg.encode(), hashlib.sha256).digest()


def _signed_chunked_put(port: int, path: str, data: bytes, chunk: int, tamper: bool = False,
                        mode: str = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD") -> requests.Response:
    """A STREAMING-AWS4-HMAC-SHA256-PAYLOAD PUT built from the AWS spec (what the Java/Go SDKs and
    the AWS CLI's CRT send), independent of the gateway's code."""
    now = datetime.now(UTC)
    amz_date, day = now.strftime("%Y%m%dT%H%M%SZ"), now.strftime("%Y%m%d")
    scope = f"{day}/us-east-1/s3/aws4_request"
    chunks = [data[i:i + chunk] for i in range(0, len(data), chunk)] + [b""]
    headers = {"host": f"127.0.0.1:{port}", "x-amz-content-sha256": mode, "x-amz-date": amz_date,
               "content-encoding": "aws-chunked", "x-amz-decoded-content-length": str(len(data))}
    if mode.endswith("TRAILER"):
        headers["x-amz-trailer"] = "x-amz-checksum-sha256"
    signed = sorted(headers)
    creq = "\n".join(["PUT", path, "", *(f"{h}:{headers[h]}" for h in signed), "", ";".join(signed), mode])
    key = _sign(_sign(_sign(_sign(("AWS4" + ALICE.secret_key).encode(), day), "us-east-1"), "s3"), "aws4_request")
    sts = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope, hashlib.sha256(creq.encode()).hexdigest()])
    prev = hmac.new(key, sts.encode(), hashlib.sha256).hexdigest()
    auth = f"AWS4-HMAC-SHA256 Credential={ALICE.access_key}/{scope}, SignedHeaders={';'.join(signed)}, Signature={prev}"
    body = b""
    for c in chunks:
        csts = "\n".join(["AWS4-HMAC-SHA256-PAYLOAD", amz_date, scope, prev, hashlib.sha256(b"").hexdigest(),
                          hashlib.sha256(c).hexdigest()])
        prev = hmac.new(key, csts.encode(), hashlib.sha256).hexdigest()
        sent = (b"X" + c[1:]) if tamper and c and c is chunks[1] else c
        body += f"{len(c):x};chunk-signature={prev}\r\n".encode() + sent + b"\r\n"
    if mode.endswith("TRAILER"):
        import base64
        body = body[:-2]  # the final chunk's CRLF is followed by the trailers
        trailer = f"x-amz-checksum-sha256:{base64.b64encode(hashlib.sha256(data).digest()).decode()}\n"
        tsts = "\n".join(["AWS4-HMAC-SHA256-TRAILER", amz_date, scope, prev,
                          hashlib.sha256(trailer.encode()).hexdigest()])
        tsig = hmac.new(key, tsts.encode(), hashlib.sha256).hexdigest()
        body += trailer.replace("\n", "\r\n").encode() + f"x-amz-trailer-signature:{tsig}\r\n\r\n".encode()
    send = {k: v for k, v in headers.items() if k != "host"} | {"authorization": auth}
    return requests.put(f"http://127.0.0.1:{port}{path}", data=body, headers=send, timeout=30)


def test_streaming_signed_chunks(gateway: tuple[Gateway, RunningServer], s3: BaseClient) -> None:
    _, server = gateway
    s3.create_bucket(Bucket="stream")
    data = os.urandom(200_000)
    r = _signed_chunked_put(server.port, "/stream/signed", data, 64 << 10)
    assert r.status_code == 200, r.text
    assert r.headers["ETag"] == f'"{hashlib.md5(data).hexdigest()}"'
    got = s3.get_object(Bucket="stream", Key="signed")
    assert got["Body"].read() == data and "ContentEncoding" not in got
    r = _signed_chunked_put(server.port, "/stream/signed", os.urandom(150_000), 64 << 10, tamper=True)
    assert r.status_code == 403 and "<Code>SignatureDoesNotMatch</Code>" in r.text
    assert s3.get_object(Bucket="stream", Key="signed")["Body"].read() == data  # unchanged
    r = _signed_chunked_put(server.port, "/stream/trailer", data, 100_000,
                            mode="STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER")
    assert r.status_code == 200, r.text
    assert s3.get_object(Bucket="stream", Key="trailer")["Body"].read() == data


@pytest.fixture(scope="module")
def tls_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[RunningServer, Path]]:
    d = tmp_path_factory.mktemp("tls")
    cert, key = d / "cert.pem", d / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True)
    gw = Gateway(rgw_cluster(12), Users([ALICE]), DATA_POOL, INDEX_POOL, op_timeout=0.5)
    server = start_in_thread(gw, tls=tls_context(cert, key))
    yield server, cert
    server.stop()


def test_boto3_over_https_streams_unsigned_trailer(tls_gateway: tuple[RunningServer, Path]) -> None:
    """Over https boto3 1.44 sends put_object and upload_part as STREAMING-UNSIGNED-PAYLOAD-TRAILER with an
    x-amz-checksum-crc32 trailer (over http it signs the payload and sends the checksum as a header)."""
    server, cert = tls_gateway
    s3 = boto3.client("s3", endpoint_url=f"https://127.0.0.1:{server.port}", region_name="us-east-1",
                      aws_access_key_id=ALICE.access_key, aws_secret_access_key=ALICE.secret_key, verify=str(cert),
                      config=Config(signature_version="s3v4", s3={"addressing_style": "path"},
                                    retries={"max_attempts": 1}))
    seen: list[str] = []
    s3.meta.events.register("before-send.s3.*", lambda request, **_: seen.append(
        request.headers.get("x-amz-content-sha256", b"").decode() if isinstance(
            request.headers.get("x-amz-content-sha256"), bytes) else str(request.headers.get("x-amz-content-sha256"))))
    s3.create_bucket(Bucket="tls")
    data = os.urandom(300_000)
    put = s3.put_object(Bucket="tls", Key="t", Body=data)
    assert "STREAMING-UNSIGNED-PAYLOAD-TRAILER" in seen
    assert put["ETag"] == f'"{hashlib.md5(data).hexdigest()}"' and put["ChecksumCRC32"]
    assert s3.get_object(Bucket="tls", Key="t")["Body"].read() == data
    big = os.urandom(11 << 20)
    s3.upload_fileobj(__import__("io").BytesIO(big), "tls", "mp", Config=boto3.s3.transfer.TransferConfig(
        multipart_threshold=5 << 20, multipart_chunksize=5 << 20))
    assert s3.get_object(Bucket="tls", Key="mp")["Body"].read() == big
