"""S3 Object Lock as RGW (Squid) answers it, against the deployed twin: a bucket created with object
lock (versioned for good), its configuration and the malformed ones, retention and legal hold of a
plain and of a multipart object, the deletes they refuse and allow, and the default retention of new
versions (ceph/s3-tests test_object_lock_*). Last, the same state read back by a restarted gateway."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace

import boto3
import pytest
from botocore.client import BaseClient
from botocore.config import Config
from botocore.exceptions import ClientError

from services.ceph.cluster import Cluster
from services.ceph.rgw import lifecycle
from services.ceph.rgw.cluster_setup import DATA_POOL, INDEX_POOL, rgw_cluster
from services.ceph.rgw.gateway import Gateway
from services.ceph.rgw.http import RunningServer, start_in_thread
from services.ceph.rgw.restore import restore
from services.ceph.rgw.users import User, Users
from tests.integration.s3_conformance.s3_twin import ALICE as ALICE_KEYS
from tests.integration.s3_conformance.s3_twin import BOB, S3Twin, error

Y2030 = datetime(2030, 1, 1, tzinfo=UTC)
GOV_1D = {"ObjectLockEnabled": "Enabled", "Rule": {"DefaultRetention": {"Mode": "GOVERNANCE", "Days": 1}}}


def headers(r: dict) -> dict[str, str]:  # type: ignore[type-arg]
    return dict(r["ResponseMetadata"]["HTTPHeaders"])


def refused(call: object, *args: object, **kw: object) -> tuple[int, str]:
    with pytest.raises(ClientError) as e:
        call(*args, **kw)  # type: ignore[operator]
    return error(e)


def locked_bucket(s3: BaseClient, name: str) -> str:
    s3.create_bucket(Bucket=name, ObjectLockEnabledForBucket=True)
    return name


def retention(s3: BaseClient, bucket: str, key: str, vid: str) -> dict[str, object]:
    return dict(s3.get_object_retention(Bucket=bucket, Key=key, VersionId=vid)["Retention"])


def test_a_bucket_created_with_object_lock(twin: S3Twin, s3: BaseClient) -> None:
    b = locked_bucket(s3, "lock-create")
    assert s3.get_bucket_versioning(Bucket=b)["Status"] == "Enabled"
    assert s3.get_object_lock_configuration(Bucket=b)["ObjectLockConfiguration"] == {"ObjectLockEnabled": "Enabled"}
    for conf in (GOV_1D, {"ObjectLockEnabled": "Enabled",
                          "Rule": {"DefaultRetention": {"Mode": "COMPLIANCE", "Years": 1}}}):
        r = s3.put_object_lock_configuration(Bucket=b, ObjectLockConfiguration=conf)
        assert r["ResponseMetadata"]["HTTPStatusCode"] == 200
        assert s3.get_object_lock_configuration(Bucket=b)["ObjectLockConfiguration"] == conf
    r = twin.signed("PUT", "/lock-create-bad", headers={"x-amz-bucket-object-lock-enabled": "maybe"})
    assert r.status_code == 400 and "<Code>InvalidArgument</Code>" in r.text, r.text
    assert "lock-create-bad" not in [x["Name"] for x in s3.list_buckets()["Buckets"]]


def test_a_bucket_without_object_lock_refuses_it(s3: BaseClient) -> None:
    s3.create_bucket(Bucket="lock-plain")
    s3.put_bucket_versioning(Bucket="lock-plain", VersioningConfiguration={"Status": "Enabled"})
    assert refused(s3.put_object_lock_configuration, Bucket="lock-plain",
                   ObjectLockConfiguration=GOV_1D) == (409, "InvalidBucketState")  # never enabled later on Squid
    assert refused(s3.get_object_lock_configuration, Bucket="lock-plain") == (
        404, "ObjectLockConfigurationNotFoundError")
    vid = s3.put_object(Bucket="lock-plain", Key="k", Body=b"x")["VersionId"]
    invalid = (400, "InvalidRequest")
    assert refused(s3.get_object_retention, Bucket="lock-plain", Key="k") == invalid
    assert refused(s3.put_object_retention, Bucket="lock-plain", Key="k", VersionId=vid,
                   Retention={"Mode": "GOVERNANCE", "RetainUntilDate": Y2030}) == invalid
    assert refused(s3.get_object_legal_hold, Bucket="lock-plain", Key="k") == invalid
    assert refused(s3.put_object_legal_hold, Bucket="lock-plain", Key="k", LegalHold={"Status": "ON"}) == invalid
    assert refused(s3.put_object, Bucket="lock-plain", Key="held", Body=b"x",
                   ObjectLockLegalHoldStatus="ON") == invalid
    assert refused(s3.create_multipart_upload, Bucket="lock-plain", Key="m", ObjectLockMode="GOVERNANCE",
                   ObjectLockRetainUntilDate=Y2030) == invalid
    assert [v["Key"] for v in s3.list_object_versions(Bucket="lock-plain")["Versions"]] == ["k"]
    assert s3.delete_object(Bucket="lock-plain", Key="k", VersionId=vid)["ResponseMetadata"]["HTTPStatusCode"] == 204


@pytest.mark.parametrize(("rule", "answer"), [
    ({"Mode": "GOVERNANCE", "Days": 1, "Years": 1}, "MalformedXML"),
    ({"Mode": "GOVERNANCE"}, "MalformedXML"),
    ({"Mode": "GOVERNANCE", "Days": 0}, "InvalidRetentionPeriod"),
    ({"Mode": "COMPLIANCE", "Years": -1}, "InvalidRetentionPeriod"),
    ({"Mode": "abc", "Days": 1}, "MalformedXML"),
    ({"Mode": "governance", "Days": 1}, "MalformedXML"),
])
def test_malformed_configurations_change_nothing(s3: BaseClient, rule: dict[str, object], answer: str) -> None:
    b = "lock-bad-conf"
    if b not in [x["Name"] for x in s3.list_buckets()["Buckets"]]:
        locked_bucket(s3, b)
        s3.put_object_lock_configuration(Bucket=b, ObjectLockConfiguration=GOV_1D)
    conf = {"ObjectLockEnabled": "Enabled", "Rule": {"DefaultRetention": rule}}
    assert refused(s3.put_object_lock_configuration, Bucket=b, ObjectLockConfiguration=conf) == (400, answer)
    assert refused(s3.put_object_lock_configuration, Bucket=b, ObjectLockConfiguration={
        "ObjectLockEnabled": "Disabled"}) == (400, "MalformedXML")
    assert s3.get_object_lock_configuration(Bucket=b)["ObjectLockConfiguration"] == GOV_1D


def test_versioning_of_a_locked_bucket_cannot_be_suspended(s3: BaseClient) -> None:
    b = locked_bucket(s3, "lock-suspend")
    with pytest.raises(ClientError) as e:
        s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Suspended"})
    assert error(e) == (409, "InvalidBucketState")  # clients (terraform providers) match RGW's message too
    assert e.value.response["Error"]["Message"] == ("bucket versioning cannot be disabled on buckets with object "
                                                    "lock enabled")
    assert s3.get_bucket_versioning(Bucket=b)["Status"] == "Enabled"
    s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})  # allowed: no change


def test_retention_of_a_version(twin: S3Twin, s3: BaseClient) -> None:
    b = locked_bucket(s3, "lock-retention")
    vid = s3.put_object(Bucket=b, Key="k", Body=b"kept")["VersionId"]
    assert refused(s3.get_object_retention, Bucket=b, Key="k", VersionId=vid) == (
        404, "ObjectLockConfigurationNotFoundError")
    assert "x-amz-object-lock-mode" not in headers(s3.head_object(Bucket=b, Key="k"))

    def put(mode: str, until: datetime, bypass: bool = False) -> dict[str, object]:
        return s3.put_object_retention(Bucket=b, Key="k", VersionId=vid, BypassGovernanceRetention=bypass,
                                       Retention={"Mode": mode, "RetainUntilDate": until})

    put("GOVERNANCE", Y2030)
    assert retention(s3, b, "k", vid) == {"Mode": "GOVERNANCE", "RetainUntilDate": Y2030}
    h = headers(s3.head_object(Bucket=b, Key="k", VersionId=vid))
    assert (h["x-amz-object-lock-mode"], h["x-amz-object-lock-retain-until-date"]) == (
        "GOVERNANCE", "2030-01-01T00:00:00.000000000Z")  # ceph::to_iso_8601
    later = Y2030 + timedelta(days=2)
    put("GOVERNANCE", later)  # extending is always allowed
    assert refused(put, "GOVERNANCE", Y2030) == (403, "AccessDenied")  # shortening needs the bypass
    assert retention(s3, b, "k", vid)["RetainUntilDate"] == later
    put("GOVERNANCE", Y2030, bypass=True)
    assert refused(put, "COMPLIANCE", Y2030) == (403, "AccessDenied")  # leaving GOVERNANCE too
    put("COMPLIANCE", Y2030, bypass=True)
    assert refused(put, "GOVERNANCE", later, bypass=True) == (403, "AccessDenied")  # COMPLIANCE stays
    assert refused(put, "COMPLIANCE", Y2030 - timedelta(days=1), bypass=True) == (403, "AccessDenied")
    assert retention(s3, b, "k", vid) == {"Mode": "COMPLIANCE", "RetainUntilDate": Y2030}
    assert refused(put, "COMPLIANCE", datetime(2001, 1, 1, tzinfo=UTC)) == (400, "InvalidArgument")
    bad = b'<Retention><Mode>governance</Mode><RetainUntilDate>2030-01-01T00:00:00Z</RetainUntilDate></Retention>'
    r = twin.signed("PUT", f"/{b}/k?retention&versionId={vid}", body=bad,
                    headers={"Content-MD5": _md5(bad)})
    assert r.status_code == 400 and "<Code>MalformedXML</Code>" in r.text, r.text


def _md5(body: bytes) -> str:
    return base64.b64encode(hashlib.md5(body).digest()).decode()


def test_legal_hold_of_a_version(s3: BaseClient) -> None:
    b = locked_bucket(s3, "lock-hold")
    vid = s3.put_object(Bucket=b, Key="k", Body=b"held")["VersionId"]
    assert refused(s3.get_object_legal_hold, Bucket=b, Key="k") == (404, "ObjectLockConfigurationNotFoundError")
    s3.put_object_legal_hold(Bucket=b, Key="k", LegalHold={"Status": "ON"})  # the latest version
    assert s3.get_object_legal_hold(Bucket=b, Key="k", VersionId=vid)["LegalHold"] == {"Status": "ON"}
    assert s3.head_object(Bucket=b, Key="k")["ObjectLockLegalHoldStatus"] == "ON"
    assert refused(s3.put_object_legal_hold, Bucket=b, Key="k", LegalHold={"Status": "abc"}) == (
        400, "MalformedXML")
    # a legal hold refuses the version's deletion whatever the bypass; a delete marker is still allowed
    assert refused(s3.delete_object, Bucket=b, Key="k", VersionId=vid, BypassGovernanceRetention=True) == (
        403, "AccessDenied")
    marker = s3.delete_object(Bucket=b, Key="k")
    assert marker["DeleteMarker"] is True
    s3.delete_object(Bucket=b, Key="k", VersionId=marker["VersionId"])  # markers carry no lock
    s3.put_object_legal_hold(Bucket=b, Key="k", VersionId=vid, LegalHold={"Status": "OFF"})
    assert s3.get_object_legal_hold(Bucket=b, Key="k", VersionId=vid)["LegalHold"] == {"Status": "OFF"}
    assert s3.delete_object(Bucket=b, Key="k", VersionId=vid)["ResponseMetadata"]["HTTPStatusCode"] == 204
    assert "Versions" not in s3.list_object_versions(Bucket=b)


def _multipart(s3: BaseClient, b: str, key: str, **lock: object) -> str:
    up = s3.create_multipart_upload(Bucket=b, Key=key, **lock)["UploadId"]
    e1 = s3.upload_part(Bucket=b, Key=key, UploadId=up, PartNumber=1, Body=b"a" * (5 << 20))["ETag"]
    e2 = s3.upload_part(Bucket=b, Key=key, UploadId=up, PartNumber=2, Body=b"tail")["ETag"]
    done = s3.complete_multipart_upload(Bucket=b, Key=key, UploadId=up, MultipartUpload={
        "Parts": [{"PartNumber": 1, "ETag": e1}, {"PartNumber": 2, "ETag": e2}]})
    return str(done["VersionId"])


def test_a_multipart_object_keeps_the_lock_of_its_initiation(s3: BaseClient) -> None:
    b = locked_bucket(s3, "lock-multipart")
    vid = _multipart(s3, b, "mp", ObjectLockMode="COMPLIANCE", ObjectLockRetainUntilDate=Y2030,
                     ObjectLockLegalHoldStatus="ON")
    h = s3.head_object(Bucket=b, Key="mp", VersionId=vid)
    assert (h["ObjectLockMode"], h["ObjectLockRetainUntilDate"], h["ObjectLockLegalHoldStatus"]) == (
        "COMPLIANCE", Y2030, "ON")
    assert h["ContentLength"] == (5 << 20) + 4
    assert retention(s3, b, "mp", vid) == {"Mode": "COMPLIANCE", "RetainUntilDate": Y2030}
    assert s3.get_object_legal_hold(Bucket=b, Key="mp", VersionId=vid)["LegalHold"] == {"Status": "ON"}
    s3.put_object_legal_hold(Bucket=b, Key="mp", VersionId=vid, LegalHold={"Status": "OFF"})
    # COMPLIANCE: no bypass deletes it
    assert refused(s3.delete_object, Bucket=b, Key="mp", VersionId=vid, BypassGovernanceRetention=True) == (
        403, "AccessDenied")
    gov = _multipart(s3, b, "gov", ObjectLockMode="GOVERNANCE", ObjectLockRetainUntilDate=Y2030,
                     ObjectLockLegalHoldStatus="ON")
    assert refused(s3.delete_object, Bucket=b, Key="gov", VersionId=gov, BypassGovernanceRetention=True) == (
        403, "AccessDenied")  # the legal hold
    s3.put_object_legal_hold(Bucket=b, Key="gov", VersionId=gov, LegalHold={"Status": "OFF"})
    assert refused(s3.delete_object, Bucket=b, Key="gov", VersionId=gov) == (403, "AccessDenied")
    s3.delete_object(Bucket=b, Key="gov", VersionId=gov, BypassGovernanceRetention=True)
    assert [v["Key"] for v in s3.list_object_versions(Bucket=b)["Versions"]] == ["mp"]


def test_deletes_of_retained_versions(s3: BaseClient) -> None:
    b = locked_bucket(s3, "lock-delete")
    vid = s3.put_object(Bucket=b, Key="k", Body=b"x", ObjectLockMode="GOVERNANCE",
                        ObjectLockRetainUntilDate=Y2030)["VersionId"]
    free = s3.put_object(Bucket=b, Key="free", Body=b"y")["VersionId"]
    assert refused(s3.delete_object, Bucket=b, Key="k", VersionId=vid) == (403, "AccessDenied")
    assert s3.delete_object(Bucket=b, Key="k")["DeleteMarker"] is True  # no version named: a marker
    r = s3.delete_objects(Bucket=b, Delete={"Objects": [{"Key": "k", "VersionId": vid},
                                                        {"Key": "free", "VersionId": free}]})
    assert [(e["Key"], e["Code"]) for e in r["Errors"]] == [("k", "AccessDenied")]
    assert [d["Key"] for d in r["Deleted"]] == ["free"]
    r = s3.delete_objects(Bucket=b, BypassGovernanceRetention=True,
                          Delete={"Objects": [{"Key": "k", "VersionId": vid}]})
    assert "Errors" not in r and [d["VersionId"] for d in r["Deleted"]] == [vid]
    assert "Versions" not in s3.list_object_versions(Bucket=b)


def test_another_user_needs_the_bypass_permission(twin: S3Twin, s3: BaseClient) -> None:
    b = locked_bucket(s3, "lock-bypass")
    vid = s3.put_object(Bucket=b, Key="k", Body=b"x", ObjectLockMode="GOVERNANCE",
                        ObjectLockRetainUntilDate=Y2030)["VersionId"]
    bob = twin.client(BOB)

    def allow(*actions: str) -> None:
        s3.put_bucket_policy(Bucket=b, Policy=json.dumps({"Version": "2012-10-17", "Statement": [{
            "Effect": "Allow", "Principal": {"AWS": ["arn:aws:iam:::user/bob"]}, "Action": list(actions),
            "Resource": [f"arn:aws:s3:::{b}/*"]}]}))

    allow("s3:DeleteObjectVersion")
    assert refused(bob.delete_object, Bucket=b, Key="k", VersionId=vid, BypassGovernanceRetention=True) == (
        403, "AccessDenied")
    allow("s3:DeleteObjectVersion", "s3:BypassGovernanceRetention")
    bob.delete_object(Bucket=b, Key="k", VersionId=vid, BypassGovernanceRetention=True)
    assert "Versions" not in s3.list_object_versions(Bucket=b)


def test_get_and_head_show_the_lock_to_who_may_read_it(twin: S3Twin, s3: BaseClient) -> None:
    b = locked_bucket(s3, "lock-read")
    s3.put_object(Bucket=b, Key="k", Body=b"x", ObjectLockMode="GOVERNANCE", ObjectLockRetainUntilDate=Y2030,
                  ObjectLockLegalHoldStatus="ON")
    bob = twin.client(BOB)
    lock_headers = ("x-amz-object-lock-mode", "x-amz-object-lock-retain-until-date", "x-amz-object-lock-legal-hold")

    def allow(*actions: str) -> dict[str, str]:
        s3.put_bucket_policy(Bucket=b, Policy=json.dumps({"Version": "2012-10-17", "Statement": [{
            "Effect": "Allow", "Principal": {"AWS": ["arn:aws:iam:::user/bob"]}, "Action": list(actions),
            "Resource": [f"arn:aws:s3:::{b}/*"]}]}))
        h = headers(bob.head_object(Bucket=b, Key="k"))
        return {k: h[k] for k in lock_headers if k in h}

    assert allow("s3:GetObject") == {}
    assert allow("s3:GetObject", "s3:GetObjectLegalHold") == {"x-amz-object-lock-legal-hold": "ON"}
    assert allow("s3:GetObject", "s3:GetObjectRetention", "s3:GetObjectLegalHold") == {
        "x-amz-object-lock-mode": "GOVERNANCE", "x-amz-object-lock-retain-until-date": "2030-01-01T00:00:00.000000000Z",
        "x-amz-object-lock-legal-hold": "ON"}
    assert bob.get_object_retention(Bucket=b, Key="k")["Retention"]["Mode"] == "GOVERNANCE"
    h = s3.get_object(Bucket=b, Key="k")  # the owner sees it all
    assert (h["ObjectLockMode"], h["ObjectLockLegalHoldStatus"]) == ("GOVERNANCE", "ON")


def test_the_default_retention_applies_to_new_versions(s3: BaseClient) -> None:
    b = locked_bucket(s3, "lock-default")
    s3.put_object_lock_configuration(Bucket=b, ObjectLockConfiguration=GOV_1D)
    before = datetime.now(UTC)
    vid = s3.put_object(Bucket=b, Key="k", Body=b"x")["VersionId"]
    h = s3.head_object(Bucket=b, Key="k")
    assert h["ObjectLockMode"] == "GOVERNANCE" and "ObjectLockLegalHoldStatus" not in h
    assert timedelta(days=1) - timedelta(seconds=5) < h["ObjectLockRetainUntilDate"] - before < timedelta(
        days=1, seconds=60)
    assert retention(s3, b, "k", vid)["Mode"] == "GOVERNANCE"
    assert refused(s3.delete_object, Bucket=b, Key="k", VersionId=vid) == (403, "AccessDenied")
    own = s3.put_object(Bucket=b, Key="own", Body=b"x", ObjectLockMode="COMPLIANCE",
                        ObjectLockRetainUntilDate=Y2030)["VersionId"]
    assert retention(s3, b, "own", own) == {"Mode": "COMPLIANCE", "RetainUntilDate": Y2030}  # its own wins
    copy = s3.copy_object(Bucket=b, Key="copy", CopySource={"Bucket": b, "Key": "own"})["VersionId"]
    assert retention(s3, b, "copy", copy)["Mode"] == "GOVERNANCE"  # the copy is a new version: the default
    s3.put_object_lock_configuration(Bucket=b, ObjectLockConfiguration={
        "ObjectLockEnabled": "Enabled", "Rule": {"DefaultRetention": {"Mode": "COMPLIANCE", "Years": 1}}})
    now = datetime.now(UTC)
    mp = _multipart(s3, b, "mp")
    until = s3.head_object(Bucket=b, Key="mp", VersionId=mp)["ObjectLockRetainUntilDate"]
    year = timedelta(days=365.2425)  # std::chrono::years
    assert year - timedelta(seconds=60) < until - now < year + timedelta(seconds=60)
    s3.put_object_lock_configuration(Bucket=b, ObjectLockConfiguration={"ObjectLockEnabled": "Enabled"})
    assert s3.get_object_lock_configuration(Bucket=b)["ObjectLockConfiguration"] == {"ObjectLockEnabled": "Enabled"}
    plain = s3.put_object(Bucket=b, Key="plain", Body=b"x")["VersionId"]
    assert refused(s3.get_object_retention, Bucket=b, Key="plain", VersionId=plain)[1] == (
        "ObjectLockConfigurationNotFoundError")


def test_object_lock_headers_are_checked(s3: BaseClient) -> None:
    b = locked_bucket(s3, "lock-headers")
    bad = [{"ObjectLockMode": "GOVERNANCE"},  # a mode needs a date
           {"ObjectLockRetainUntilDate": Y2030},
           {"ObjectLockMode": "GOVERNANCE", "ObjectLockRetainUntilDate": datetime(2001, 1, 1, tzinfo=UTC)},
           {"ObjectLockMode": "governance", "ObjectLockRetainUntilDate": Y2030},
           {"ObjectLockLegalHoldStatus": "MAYBE"}]
    for lock in bad:
        assert refused(s3.put_object, Bucket=b, Key="k", Body=b"x", **lock) == (400, "InvalidArgument"), lock
    assert "Versions" not in s3.list_object_versions(Bucket=b)


AWS = Path(sys.executable).parent / "aws"


@pytest.mark.skipif(not AWS.exists(), reason=f"{AWS} missing (`make install` installs awscli)")
def test_the_aws_cli_locks_and_bypasses(twin: S3Twin, tmp_path: Path) -> None:
    config = tmp_path / "config"
    config.write_text("[default]\nregion = us-east-1\noutput = json\ns3 =\n  addressing_style = path\n")
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path), "AWS_CONFIG_FILE": str(config),
           "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "credentials"), "AWS_ACCESS_KEY_ID": ALICE_KEYS["access_key"],
           "AWS_SECRET_ACCESS_KEY": ALICE_KEYS["secret_key"], "AWS_MAX_ATTEMPTS": "1", "AWS_PAGER": ""}

    def aws(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(AWS), "--endpoint-url", twin.endpoint, "s3api", *args], env=env,
                              capture_output=True, text=True, timeout=120)

    b = "lock-cli"
    assert aws("create-bucket", "--bucket", b, "--object-lock-enabled-for-bucket").returncode == 0
    r = aws("put-object-lock-configuration", "--bucket", b, "--object-lock-configuration",
            '{"ObjectLockEnabled": "Enabled", "Rule": {"DefaultRetention": {"Mode": "GOVERNANCE", "Days": 1}}}')
    assert r.returncode == 0, r.stderr
    body = tmp_path / "body"
    body.write_bytes(b"locked by the CLI")
    r = aws("put-object", "--bucket", b, "--key", "k", "--body", str(body))
    assert r.returncode == 0, r.stderr
    vid = json.loads(r.stdout)["VersionId"]
    assert json.loads(aws("get-object-retention", "--bucket", b, "--key", "k").stdout)["Retention"]["Mode"] == (
        "GOVERNANCE")
    r = aws("delete-object", "--bucket", b, "--key", "k", f"--version-id={vid}")
    assert r.returncode != 0 and "AccessDenied" in r.stderr, (r.returncode, r.stderr)
    r = aws("delete-object", "--bucket", b, "--key", "k", f"--version-id={vid}", "--bypass-governance-retention")
    assert r.returncode == 0, r.stderr
    assert "Versions" not in json.loads(aws("list-object-versions", "--bucket", b).stdout or "{}")


# -- what a restarted gateway reads back ------------------------------------------------------

ALICE = User("alice", "Alice", "AKIAALICE000000001", "alice-secret")


class IndexPool:
    """The in-process cluster as restore.py reads it (the daemon reads it through the monitor)."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster

    def get(self, pool: str, name: str) -> bytes:
        return bytes(self.cluster.get(pool, name))

    def list_objects(self, pool: str, prefix: str) -> list[SimpleNamespace]:
        return [SimpleNamespace(name=n) for pg in self.cluster.pgs.values() if pg.pool.name == pool
                for n in sorted(pg.objects) if n.startswith(prefix)]


def _client(gw: Gateway) -> tuple[BaseClient, RunningServer]:
    server = start_in_thread(gw)
    s3 = boto3.client("s3", endpoint_url=f"http://127.0.0.1:{server.port}", region_name="us-east-1",
                      aws_access_key_id=ALICE.access_key, aws_secret_access_key=ALICE.secret_key,
                      config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 0}))
    return s3, server


def test_the_lifecycle_expires_no_locked_version() -> None:
    gw = Gateway(rgw_cluster(12), Users([ALICE]), DATA_POOL, INDEX_POOL, op_timeout=0.5)
    s3, server = _client(gw)
    try:
        b = locked_bucket(s3, "lock-lc")
        old = {"kept": s3.put_object(Bucket=b, Key="kept", Body=b"1", ObjectLockMode="COMPLIANCE",
                                     ObjectLockRetainUntilDate=Y2030)["VersionId"],
               "held": s3.put_object(Bucket=b, Key="held", Body=b"1", ObjectLockLegalHoldStatus="ON")["VersionId"],
               "free": s3.put_object(Bucket=b, Key="free", Body=b"1")["VersionId"]}
        for key in old:
            s3.put_object(Bucket=b, Key=key, Body=b"2")  # the first versions become noncurrent
        s3.put_bucket_lifecycle_configuration(Bucket=b, LifecycleConfiguration={"Rules": [{
            "ID": "nc", "Status": "Enabled", "Filter": {"Prefix": ""}, "NoncurrentVersionExpiration": {
                "NoncurrentDays": 1}}]})
        done = lifecycle.run(gw.store, datetime.now(UTC).timestamp() + 3 * 86400)
        assert done[b].noncurrent == [("free", old["free"])]
        left = {(v["Key"], v["VersionId"]) for v in s3.list_object_versions(Bucket=b)["Versions"]}
        assert {("kept", old["kept"]), ("held", old["held"])} <= left and ("free", old["free"]) not in left
    finally:
        server.stop()


def test_a_restarted_gateway_keeps_every_lock() -> None:
    cluster = rgw_cluster(12)
    gw = Gateway(cluster, Users([ALICE]), DATA_POOL, INDEX_POOL, op_timeout=0.5)
    s3, server = _client(gw)
    try:
        b = locked_bucket(s3, "lock-restart")
        s3.put_object_lock_configuration(Bucket=b, ObjectLockConfiguration=GOV_1D)
        vid = s3.put_object(Bucket=b, Key="k", Body=b"x", ObjectLockLegalHoldStatus="ON")["VersionId"]
        s3.put_object_retention(Bucket=b, Key="k", VersionId=vid, BypassGovernanceRetention=True,
                                Retention={"Mode": "GOVERNANCE", "RetainUntilDate": Y2030})
        up = s3.create_multipart_upload(Bucket=b, Key="mp", ObjectLockMode="COMPLIANCE",
                                        ObjectLockRetainUntilDate=Y2030)["UploadId"]
    finally:
        server.stop()
    again = Gateway(cluster, Users([ALICE]), DATA_POOL, INDEX_POOL, op_timeout=0.5)
    owners = SimpleNamespace(by_id=lambda uid: ALICE if uid == ALICE.id else None)
    assert restore(again.store, IndexPool(cluster), owners) == (1, 1)
    s3, server = _client(again)
    try:
        assert s3.get_object_lock_configuration(Bucket=b)["ObjectLockConfiguration"] == GOV_1D
        assert retention(s3, b, "k", vid) == {"Mode": "GOVERNANCE", "RetainUntilDate": Y2030}
        assert s3.get_object_legal_hold(Bucket=b, Key="k", VersionId=vid)["LegalHold"] == {"Status": "ON"}
        assert refused(s3.put_bucket_versioning, Bucket=b, VersioningConfiguration={"Status": "Suspended"}) == (
            409, "InvalidBucketState")
        e = s3.upload_part(Bucket=b, Key="mp", UploadId=up, PartNumber=1, Body=b"p")["ETag"]
        mp = s3.complete_multipart_upload(Bucket=b, Key="mp", UploadId=up, MultipartUpload={
            "Parts": [{"PartNumber": 1, "ETag": e}]})["VersionId"]
        assert retention(s3, b, "mp", mp) == {"Mode": "COMPLIANCE", "RetainUntilDate": Y2030}
    finally:
        server.stop()
