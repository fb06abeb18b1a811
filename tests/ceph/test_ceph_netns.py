"""The S3 gateway on the storage segment: `twin up mini --ceph --network netns`. RGW serves S3 on its
host's storage address (its gRPC health on OOB); the operator port, which reaches every management
API, does not reach S3; boto3 run inside a GPU server's namespace (`twin net exec`) does, and a
bucket policy's `aws:SourceIp` sees each host's own storage address: gpu001 is let in, gpu002 is not."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from emulator import lifecycle
from emulator.manifest import Manifest
from emulator.rundir import RunDir
from services.ceph.manifest import RgwEntry, gateway
from tests.conftest import assert_nothing_left, netns_skip_reason, twin_pids

ROOT = Path(__file__).resolve().parents[2]
TWIN = str(ROOT / ".venv" / "bin" / "twin")
AK, SK = "NETNSS3KEY0000000001", "netnss3secret0000000000000000000000000001"
STORAGE = "10.101."

# Run inside a host's namespace: one S3 call from argv, its outcome as JSON on stdout.
CLIENT = """
import json, sys, hashlib, boto3
from botocore.config import Config
from botocore.exceptions import ClientError, EndpointConnectionError
url, ak, sk, op, bucket, key = sys.argv[1:7]
s3 = boto3.client("s3", endpoint_url=url, aws_access_key_id=ak, aws_secret_access_key=sk, region_name="us-east-1",
                  config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 0}, connect_timeout=5))
try:
    if op == "mb":
        s3.create_bucket(Bucket=bucket); out = {}
    elif op == "put":
        body = bytes(range(256)) * (int(sys.argv[7]) // 256)
        etag = s3.put_object(Bucket=bucket, Key=key, Body=body)["ETag"]
        out = {"etag": etag, "sha": hashlib.sha256(body).hexdigest()}
    elif op == "get":
        out = {"sha": hashlib.sha256(s3.get_object(Bucket=bucket, Key=key)["Body"].read()).hexdigest()}
    elif op == "policy":
        s3.put_bucket_policy(Bucket=bucket, Policy=sys.argv[7]); out = {}
    print(json.dumps({"ok": True, **out}))
except ClientError as e:
    print(json.dumps({"ok": False, "code": e.response["Error"]["Code"]}))
"""


def _why_skip() -> str:
    return netns_skip_reason("Ceph on --network netns")


@pytest.fixture(scope="module")
def twin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[RunDir, Manifest]]:
    if reason := _why_skip():
        pytest.skip(reason)
    run = RunDir(tmp_path_factory.mktemp("ceph-netns"))
    manifest = lifecycle.up("mini", run, network="netns", ceph=True, clock_scale=5.0, timeout=120)
    pids = twin_pids(run)
    try:
        r = subprocess.run([TWIN, "ceph", "user", "create", "--uid", "netns", "--display-name", "Netns",
                            "--access-key", AK, "--secret", SK, "--run-dir", str(run.path)],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        yield run, manifest
    finally:
        pids = sorted(set(pids + twin_pids(run)))
        lifecycle.down(run)
        assert_nothing_left(run, pids)


def rgw(manifest: Manifest) -> RgwEntry:
    found = gateway(manifest)
    assert found is not None, "the twin runs no gateway"
    return found


def endpoint(manifest: Manifest) -> str:
    return rgw(manifest).s3


def s3_from(run: RunDir, host: str, url: str, op: str, *args: str) -> dict[str, Any]:
    """One S3 call by boto3 inside `host`'s network namespace."""
    r = subprocess.run([TWIN, "net", "exec", host, "--run-dir", str(run.path), "--",
                        sys.executable, "-c", CLIENT, url, AK, SK, op, *args],
                       capture_output=True, text=True, timeout=120, cwd=ROOT,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert r.returncode == 0, r.stderr[-2000:]
    return dict(json.loads(r.stdout.strip().splitlines()[-1]))


def storage_address(manifest: Manifest, host: str) -> str:
    return next(d.addresses["storage"] for d in manifest.daemons if d.host == host and "storage" in d.addresses)


def test_s3_listens_on_the_storage_address_and_not_on_the_operator_port(
        twin: tuple[RunDir, Manifest]) -> None:
    run, manifest = twin
    gw = rgw(manifest)
    host, _, port = gw.s3.removeprefix("http://").rpartition(":")
    assert host == gw.addresses["storage"] and host.startswith(STORAGE), gw
    assert port == "7480"
    assert gw.grpc.startswith(gw.addresses["oob"] + ":")
    # The machine's namespace has no route onto the storage segment: not through the operator port
    # (only OOB), so whatever answers there (a default route may lead to a proxy) is not RGW.
    route = subprocess.run(["ip", "-4", "route", "get", host], capture_output=True, text=True).stdout
    assert "10.103." not in route.split(" src ")[0] and "ct" not in route, route
    assert rgw_answers(endpoint(manifest)) is False
    probe = f"from tests.ceph.test_ceph_netns import rgw_answers; print(rgw_answers({endpoint(manifest)!r}))"
    with_ns = subprocess.run([TWIN, "net", "exec", "gpu001", "--run-dir", str(run.path), "--",
                              sys.executable, "-c", probe],
                             capture_output=True, text=True, timeout=60, cwd=ROOT,
                             env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert with_ns.stdout.strip() == "True", with_ns.stderr[-2000:]


def rgw_answers(url: str) -> bool:
    """Whether an S3 gateway answers at `url` (RGW puts x-amz-request-id on every response)."""
    try:
        with urllib.request.urlopen(url + "/", timeout=3) as r:
            return "x-amz-request-id" in {k.lower() for k in r.headers}
    except urllib.error.HTTPError as e:  # 403 for an anonymous ListBuckets: still an answer
        return "x-amz-request-id" in {k.lower() for k in e.headers}
    except OSError:
        return False

def test_boto3_in_a_gpu_server_round_trips_and_source_ip_is_per_host(twin: tuple[RunDir, Manifest]) -> None:
    run, manifest = twin
    url = endpoint(manifest)
    assert s3_from(run, "gpu001", url, "mb", "lake", "") == {"ok": True}
    put = s3_from(run, "gpu001", url, "put", "lake", "shard-0000.tar", str(5 << 20))
    assert put["ok"], put
    assert s3_from(run, "gpu002", url, "get", "lake", "shard-0000.tar") == {"ok": True, "sha": put["sha"]}
    gpu001 = storage_address(manifest, "gpu001")
    assert gpu001.startswith(STORAGE) and gpu001 != storage_address(manifest, "gpu002")
    policy = {"Version": "2012-10-17", "Statement": [{
        "Effect": "Deny", "Principal": "*", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::lake/*",
        "Condition": {"NotIpAddress": {"aws:SourceIp": f"{gpu001}/32"}}}]}
    assert s3_from(run, "gpu001", url, "policy", "lake", "", json.dumps(policy)) == {"ok": True}
    assert s3_from(run, "gpu001", url, "get", "lake", "shard-0000.tar") == {"ok": True, "sha": put["sha"]}
    assert s3_from(run, "gpu002", url, "get", "lake", "shard-0000.tar") == {"ok": False, "code": "AccessDenied"}
