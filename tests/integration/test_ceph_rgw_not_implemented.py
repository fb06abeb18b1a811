"""Every operation of botocore's S3 model against the twin's gateway daemon (`twin up mini --ceph`).

Each operation is called with minimal valid parameters, generated from its input shape (required
members only; a fresh bucket holding one object, small bodies, valid XML configurations for the
operations the gateway serves), and must answer as `CASES` says: succeed (the gateway implements
it), refuse as RGW does (NoSuchBucketPolicy for a bucket without a policy, ...), or answer 501
NotImplemented with S3's error XML. None answers 500, and none changes what it does not name: the
bucket's objects, versions, versioning, policy, ACL, tags, lifecycle and uploads, the object's body,
ACL and tags, and the list of buckets are compared before and after every call. Operations on a
bucket run a second time on an empty bucket, where a request wrongly taken for DeleteBucket would
delete it (issue 13: DELETE ?publicAccessBlock did).

`CASES` is the table of what the gateway implements: a change in it is a change in what clients see.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from itertools import count
from typing import Any

import boto3
import botocore.session
import pytest
from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.config import Config
from botocore.credentials import Credentials
from botocore.exceptions import ClientError
from botocore.model import OperationModel, Shape

from clustertwin.v1 import ceph_pb2 as pb
from emulator import lifecycle
from emulator.client import Twin
from emulator.rundir import RunDir
from services.ceph.rgw import routes
from services.ceph.sdk import CephAdmin
from tests.conftest import stopped_at_exit

AK, SK = "NOTIMPLTESTKEY000001", "notimpltestsecret0000000000000000000000001"
UID = "notimpl"
MODEL = botocore.session.get_session().get_service_model("s3")
OK, NI = "ok", "NotImplemented"

# What a snapshot holds (see `snapshot`); an operation may change only the parts it names.
BUCKET_PARTS = ("objects", "versioning", "policy", "acl", "tags", "lifecycle", "uploads")
OBJECT_PARTS = ("object", "object-acl", "object-tags")
ALL = frozenset(("buckets", *BUCKET_PARTS, *OBJECT_PARTS))
WRITES_OBJECT = frozenset(("objects", *OBJECT_PARTS))


@dataclass(frozen=True)
class Case:
    answer: str  # OK, an S3 error code, or NI
    changes: frozenset[str] = frozenset()  # the snapshot parts the operation names
    empty: str | None = None  # the answer on an empty bucket, where it differs
    why: str = ""


def ni(why: str) -> Case:
    return Case(NI, why=why)


# RGW (Squid) serves these; the twin answers 501 until it implements them (issue 15).
RGW_HAS = "RGW serves it; the twin does not yet"
# RGW has no handler for these and would run the plain bucket or object operation instead
# (services/ceph/rgw/routes.py): DELETE on an empty bucket would delete it. The twin refuses them.
RGW_LACKS = "RGW has no handler: it would run the plain operation; the twin refuses"
EXPRESS = "S3 Express (directory buckets) only"

CASES: dict[str, Case] = {
    # -- implemented ------------------------------------------------------------------------
    "AbortMultipartUpload": Case(OK, frozenset({"uploads"})),
    "CompleteMultipartUpload": Case(OK, frozenset({"uploads", "objects"})),
    "CopyObject": Case(OK, frozenset({"objects"})),  # to a new key
    "CreateBucket": Case(OK, frozenset({"buckets"})),  # a fresh name
    "CreateMultipartUpload": Case(OK, frozenset({"uploads"})),
    "DeleteBucket": Case("BucketNotEmpty", ALL, empty=OK),
    "DeleteBucketCors": Case(OK),
    "DeleteBucketEncryption": Case(OK),
    "DeleteBucketOwnershipControls": Case(OK, why="RGW from Tentacle (20.2) on: ownership.py"),
    "DeleteBucketLifecycle": Case(OK, frozenset({"lifecycle"})),
    "DeleteBucketPolicy": Case(OK, frozenset({"policy"})),
    "DeleteBucketTagging": Case(OK, frozenset({"tags"})),
    "DeleteObject": Case(OK, WRITES_OBJECT),
    "DeleteObjectTagging": Case(OK, frozenset({"object-tags"})),
    "DeleteObjects": Case(OK, WRITES_OBJECT),
    "DeletePublicAccessBlock": Case(OK),
    "GetBucketAcl": Case(OK),
    "GetBucketCors": Case("NoSuchCORSConfiguration"),
    "GetBucketEncryption": Case("ServerSideEncryptionConfigurationNotFoundError"),
    "GetBucketLifecycle": Case("NoSuchLifecycleConfiguration"),
    "GetBucketLifecycleConfiguration": Case("NoSuchLifecycleConfiguration"),
    "GetBucketOwnershipControls": Case("OwnershipControlsNotFoundError", why="a new bucket has none, as on RGW"),
    "GetBucketPolicy": Case("NoSuchBucketPolicy"),
    "GetBucketPolicyStatus": Case(OK),
    "GetBucketTagging": Case("NoSuchTagSet"),
    "GetBucketVersioning": Case(OK),
    "GetObject": Case(OK),
    "GetObjectAcl": Case(OK),
    "GetObjectAttributes": Case(OK),  # as RGW serves it from Tentacle (20.2); Squid answers a GetObject
    # Object Lock on a bucket created without it, as RGW answers (object_lock.py)
    "GetObjectLegalHold": Case("InvalidRequest"),
    "GetObjectLockConfiguration": Case("ObjectLockConfigurationNotFoundError"),
    "GetObjectRetention": Case("InvalidRequest"),
    "GetObjectTagging": Case(OK),
    "GetPublicAccessBlock": Case(OK),  # all four false when none is set, as RGW answers
    "HeadBucket": Case(OK),
    "HeadObject": Case(OK),
    "ListBuckets": Case(OK),
    "ListDirectoryBuckets": Case(OK, why="GET / with no directory-bucket parameter: RGW and the twin list buckets"),
    "ListMultipartUploads": Case(OK),
    "ListObjectVersions": Case(OK),
    "ListObjects": Case(OK),
    "ListObjectsV2": Case(OK),
    "ListParts": Case(OK),
    "PutBucketAcl": Case(OK, frozenset({"acl"})),
    "PutBucketCors": Case(OK),
    "PutBucketEncryption": Case(OK, why="stored with no KMS; the uploads it asks to encrypt are refused"),
    "PutBucketLifecycle": Case(OK, frozenset({"lifecycle"})),
    "PutBucketLifecycleConfiguration": Case(OK, frozenset({"lifecycle"})),
    "PutBucketOwnershipControls": Case(OK, why="RGW from Tentacle (20.2) on: ownership.py"),
    "PutBucketPolicy": Case(OK, frozenset({"policy"})),
    "PutBucketTagging": Case(OK, frozenset({"tags"})),
    "PutBucketVersioning": Case(OK, frozenset({"versioning"})),
    "PutObject": Case(OK, WRITES_OBJECT),
    "PutObjectAcl": Case(OK, frozenset({"object-acl"})),
    "PutObjectLegalHold": Case("InvalidRequest"),
    "PutObjectLockConfiguration": Case("InvalidBucketState"),
    "PutObjectRetention": Case("InvalidRequest"),
    "PutObjectTagging": Case(OK, frozenset({"object-tags"})),
    "PutPublicAccessBlock": Case(OK),
    "UploadPart": Case(OK, frozenset({"uploads"})),
    "UploadPartCopy": Case(OK, frozenset({"uploads"})),
    # -- served by RGW, not yet by the twin -------------------------------------------------
    **{op: ni(RGW_HAS) for op in (
        "DeleteBucketReplication", "DeleteBucketWebsite",
        "GetBucketLocation", "GetBucketLogging",
        "GetBucketNotification", "GetBucketNotificationConfiguration",
        "GetBucketReplication", "GetBucketRequestPayment", "GetBucketWebsite", "GetObjectTorrent",
        "PutBucketLogging", "PutBucketNotification",
        "PutBucketNotificationConfiguration", "PutBucketReplication", "PutBucketRequestPayment", "PutBucketWebsite",
        "SelectObjectContent")},
    # -- no handler in RGW either -----------------------------------------------------------
    **{op: ni(RGW_LACKS) for op in (
        "DeleteBucketAnalyticsConfiguration", "DeleteBucketIntelligentTieringConfiguration",
        "DeleteBucketInventoryConfiguration", "DeleteBucketMetadataConfiguration",
        "DeleteBucketMetadataTableConfiguration", "DeleteBucketMetricsConfiguration",
        "DeleteObjectAnnotation", "GetBucketAbac", "GetBucketAccelerateConfiguration",
        "GetBucketAnalyticsConfiguration", "GetBucketIntelligentTieringConfiguration",
        "GetBucketInventoryConfiguration", "GetBucketMetadataConfiguration", "GetBucketMetadataTableConfiguration",
        "GetBucketMetricsConfiguration", "GetObjectAnnotation",
        "ListBucketAnalyticsConfigurations", "ListBucketIntelligentTieringConfigurations",
        "ListBucketInventoryConfigurations", "ListBucketMetricsConfigurations", "ListObjectAnnotations",
        "PutBucketAbac", "PutBucketAccelerateConfiguration", "PutBucketAnalyticsConfiguration",
        "PutBucketIntelligentTieringConfiguration", "PutBucketInventoryConfiguration", "PutBucketMetricsConfiguration",
        "PutObjectAnnotation", "RenameObject", "RestoreObject",
        "UpdateBucketMetadataAnnotationTableConfiguration", "UpdateBucketMetadataInventoryTableConfiguration",
        "UpdateBucketMetadataJournalTableConfiguration", "UpdateObjectEncryption",
        "CreateBucketMetadataConfiguration", "CreateBucketMetadataTableConfiguration")},
    "CreateSession": ni(EXPRESS),
    # An Object Lambda endpoint's call; sent here (no host prefix) it is a POST on a bucket path.
    "WriteGetObjectResponse": ni("S3 Object Lambda only"),
}


# -- the twin ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def twin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CephAdmin]:
    run = RunDir(tmp_path_factory.mktemp("notimpl"))
    lifecycle.up("mini", run, ceph=True, telemetry_interval=1.0, timeout=60)
    with stopped_at_exit(run, lambda: lifecycle.down(run)):
        yield Twin.connect(run.path).ceph()


@pytest.fixture(scope="module")
def s3(twin: CephAdmin) -> Any:
    twin.call("UserCreate", pb.CephMonUserCreateRequest(user=pb.CephRgwUser(uid=UID, display_name="Not Implemented",
                                                                 access_key=AK, secret_key=SK)))
    # No host prefix: WriteGetObjectResponse would otherwise go to `{RequestRoute}.127.0.0.1`.
    return boto3.client("s3", endpoint_url=twin.s3_endpoint(), aws_access_key_id=AK, aws_secret_access_key=SK,
                        region_name="us-east-1",
                        config=Config(retries={"max_attempts": 0}, s3={"addressing_style": "path"},
                                      inject_host_prefix=False, connect_timeout=5, read_timeout=60))


# -- minimal parameters -----------------------------------------------------------------------


@dataclass
class Ctx:
    bucket: str
    key: str = "obj"
    upload: str = ""
    part_etag: str = ""
    fresh: str = ""  # a bucket name not taken yet


def _string(name: str, ctx: Ctx) -> str:
    return {
        "Bucket": ctx.bucket, "Key": ctx.key, "UploadId": ctx.upload, "CopySource": f"{ctx.bucket}/obj",
        "RenameSource": f"{ctx.bucket}/obj", "Id": "cfg1", "Expression": "SELECT * FROM S3Object",
        "RequestRoute": "route", "RequestToken": "token", "AnnotationName": "note",
    }.get(name, "x")


def minimal(shape: Shape, name: str, ctx: Ctx, depth: int = 0) -> Any:
    """A value of `shape` with its required members only."""
    t = shape.type_name
    if t == "structure":
        assert depth < 8, f"{name}: recursive required members"
        members = shape.members
        names = list(members)[:1] if shape.is_tagged_union else shape.required_members
        return {m: minimal(members[m], m, ctx, depth + 1) for m in names}
    if t == "list":
        return [minimal(shape.member, name, ctx, depth + 1)]
    if t == "map":
        return {}
    if t == "string":
        if shape.enum:
            return shape.enum[0]
        return _string(name, ctx).ljust(shape.metadata.get("min", 0), "x")
    if t in ("integer", "long"):
        return 1
    if t == "boolean":
        return False
    if t == "timestamp":
        return datetime(2030, 1, 1, tzinfo=UTC)
    if t == "blob":
        return b"x"
    raise AssertionError(f"{name}: shape type {t}")


LIFECYCLE_RULE = {"ID": "r1", "Status": "Enabled", "Expiration": {"Days": 30}}
# Operations the gateway serves get what it needs to succeed; the generated values do for the others.
OVERRIDES: dict[str, Callable[[Ctx], dict[str, Any]]] = {
    "CreateBucket": lambda c: {"Bucket": c.fresh},
    "CopyObject": lambda c: {"Key": "copy"},
    "PutObject": lambda c: {"Body": b"new body"},
    "UploadPart": lambda c: {"Body": b"part two", "PartNumber": 2},
    "UploadPartCopy": lambda c: {"PartNumber": 2},
    "CompleteMultipartUpload": lambda c: {"MultipartUpload": {"Parts": [{"PartNumber": 1, "ETag": c.part_etag}]}},
    "PutBucketAcl": lambda c: {"ACL": "public-read"},
    "PutObjectAcl": lambda c: {"ACL": "public-read"},
    "PutBucketVersioning": lambda c: {"VersioningConfiguration": {"Status": "Enabled"}},
    "PutBucketEncryption": lambda c: {"ServerSideEncryptionConfiguration": {"Rules": [{
        "ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}]}},
    "PutBucketCors": lambda c: {"CORSConfiguration": {"CORSRules": [{"AllowedMethods": ["GET"],
                                                                     "AllowedOrigins": ["*"]}]}},
    "PutBucketLifecycleConfiguration": lambda c: {
        "LifecycleConfiguration": {"Rules": [{**LIFECYCLE_RULE, "Filter": {"Prefix": "expire/"}}]}},
    "PutBucketLifecycle": lambda c: {"LifecycleConfiguration": {"Rules": [{**LIFECYCLE_RULE, "Prefix": "expire/"}]}},
    "PutBucketPolicy": lambda c: {"Policy": json.dumps({"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow", "Principal": {"AWS": [f"arn:aws:iam:::user/{UID}"]}, "Action": "s3:GetObject",
        "Resource": f"arn:aws:s3:::{c.bucket}/*"}]})},
}
MULTIPART = {"AbortMultipartUpload", "CompleteMultipartUpload", "ListParts", "UploadPart", "UploadPartCopy"}


def params(op: OperationModel, ctx: Ctx) -> dict[str, Any]:
    p = minimal(op.input_shape, op.name, ctx) if op.input_shape is not None else {}
    return {**p, **OVERRIDES.get(op.name, lambda _: {})(ctx)}


# -- what a request may change ----------------------------------------------------------------


def _get(call: Callable[[], Any], missing: tuple[str, ...] = ()) -> Any:
    try:
        return call()
    except ClientError as e:
        if e.response["Error"]["Code"] in missing:
            return None
        raise


def snapshot(s3: Any, bucket: str, key: str) -> dict[str, Any]:
    """The state of the user's buckets, of `bucket` and of its object `key`, part by part."""
    snap: dict[str, Any] = {"buckets": sorted(b["Name"] for b in s3.list_buckets()["Buckets"])}
    if bucket not in snap["buckets"]:
        return snap
    lv = s3.list_object_versions(Bucket=bucket)
    snap["objects"] = sorted((v["Key"], v["VersionId"], v.get("ETag", "marker"), v["IsLatest"])
                             for v in lv.get("Versions", []) + lv.get("DeleteMarkers", []))
    snap["versioning"] = s3.get_bucket_versioning(Bucket=bucket).get("Status")
    snap["policy"] = _get(lambda: s3.get_bucket_policy(Bucket=bucket)["Policy"], ("NoSuchBucketPolicy",))
    snap["acl"] = s3.get_bucket_acl(Bucket=bucket)["Grants"]
    snap["tags"] = _get(lambda: s3.get_bucket_tagging(Bucket=bucket)["TagSet"], ("NoSuchTagSet",))
    snap["lifecycle"] = _get(lambda: s3.get_bucket_lifecycle_configuration(Bucket=bucket)["Rules"],
                             ("NoSuchLifecycleConfiguration",))
    snap["uploads"] = sorted((u["Key"], u["UploadId"]) for u in s3.list_multipart_uploads(Bucket=bucket).get(
        "Uploads", []))
    obj = _get(lambda: s3.get_object(Bucket=bucket, Key=key), ("NoSuchKey",))
    snap["object"] = None if obj is None else (obj["Body"].read(), obj["ETag"], obj.get("Metadata"))
    snap["object-acl"] = _get(lambda: s3.get_object_acl(Bucket=bucket, Key=key)["Grants"], ("NoSuchKey",))
    snap["object-tags"] = _get(lambda: s3.get_object_tagging(Bucket=bucket, Key=key)["TagSet"], ("NoSuchKey",))
    return snap


# -- the operations ---------------------------------------------------------------------------

_names = count()


def _fresh(prefix: str) -> str:
    return f"{prefix}-{next(_names):03d}"


def _setup(s3: Any, op: OperationModel, with_object: bool) -> Ctx:
    ctx = Ctx(_fresh("ni"), fresh=_fresh("ni-new"))
    s3.create_bucket(Bucket=ctx.bucket)
    if with_object:
        s3.put_object(Bucket=ctx.bucket, Key=ctx.key, Body=b"the object", Metadata={"kind": "test"})
    if op.name in MULTIPART:
        up = s3.create_multipart_upload(Bucket=ctx.bucket, Key="mp")["UploadId"]
        part = s3.upload_part(Bucket=ctx.bucket, Key="mp", UploadId=up, PartNumber=1, Body=b"part one")
        ctx.key, ctx.upload, ctx.part_etag = "mp", up, part["ETag"]
    return ctx


def call(s3: Any, op: OperationModel, ctx: Ctx) -> tuple[str, dict[str, Any]]:
    """(OK or the error code, the response) of one call of `op`."""
    method = getattr(s3, botocore.xform_name(op.name))
    try:
        resp = method(**params(op, ctx))
    except ClientError as e:
        return str(e.response["Error"]["Code"]), e.response
    for v in resp.values():
        if hasattr(v, "read"):
            v.read()  # a streamed body, read to the end
    return OK, resp


def check(s3: Any, op: OperationModel, with_object: bool) -> None:
    case = CASES[op.name]
    expected = case.answer if with_object or case.empty is None else case.empty
    ctx = _setup(s3, op, with_object)
    before = snapshot(s3, ctx.bucket, "obj")  # multipart operations name another key, "mp"
    got, resp = call(s3, op, ctx)
    after = snapshot(s3, ctx.bucket, "obj")
    status = resp["ResponseMetadata"]["HTTPStatusCode"]
    assert status < 500 or status == 501, f"{op.name}: {status} {resp.get('Error')}"
    for part in sorted((set(before) | set(after)) - case.changes, key=lambda p: (p != "buckets", p)):
        assert before.get(part) == after.get(part), f"{op.name} changed {part}: {before.get(part)} → {after.get(part)}"
    assert got == expected, f"{op.name}: answered {got} ({status} {resp.get('Error')}), expected {expected}"
    if got == NI:
        err = resp["Error"]
        assert status == 501 and err["Message"], err
        path = op.http["requestUri"].partition("?")[0].replace("{Bucket}", ctx.bucket).replace("{Key+}", ctx.key)
        assert err["Resource"] == path, (op.name, err)
        assert resp["ResponseMetadata"]["RequestId"].startswith("tx"), resp["ResponseMetadata"]


def test_the_table_covers_the_model() -> None:
    """Every operation botocore knows is in CASES, so that a new one is a decision, not a surprise."""
    assert sorted(set(MODEL.operation_names) - set(CASES)) == []
    assert sorted(set(CASES) - set(MODEL.operation_names)) == []


def test_every_query_parameter_botocore_sends_is_known() -> None:
    """Each query parameter of the model is a sub-resource (in a requestUri, or served) or a modifier the gateway
    knows: an optional parameter of an implemented operation (`fetch-owner`) must not make it a 501."""
    subs = {p for name in MODEL.operation_names  # bare names: `list-type=2` modifies ListObjects
            for p in MODEL.operation_model(name).http["requestUri"].partition("?")[2].split("&") if p and "=" not in p}
    subs |= {sub for scope in routes.SERVED.values() for sub in scope if sub}  # and ?uploadId=
    unknown = set()
    for name in MODEL.operation_names:
        shape = MODEL.operation_model(name).input_shape
        for m in shape.members.values() if shape is not None else ():
            q = m.serialization.get("name", "") if m.serialization.get("location") == "querystring" else ""
            if q and q not in subs and not routes.is_modifier(q):
                unknown.add(f"{name}: {q}")
    assert sorted(unknown) == []
    assert not subs & routes.MODIFIERS


def _runs() -> list[Any]:
    """Each operation on a bucket holding the object; an operation on a bucket also on an empty bucket,
    where a request taken for DeleteBucket would delete it."""
    runs = []
    for name in MODEL.operation_names:
        op = MODEL.operation_model(name)
        runs.append(pytest.param(name, True, id=name))
        if op.input_shape is not None and "Bucket" in op.input_shape.required_members \
                and "{Key+}" not in op.http["requestUri"]:
            runs.append(pytest.param(name, False, id=f"{name}-empty"))
    return runs


@pytest.fixture(scope="module")
def neighbour(s3: Any) -> tuple[str, dict[str, Any]]:
    """A bucket no operation names, with something in every part of its snapshot, and that snapshot."""
    b = "ni-neighbour"
    s3.create_bucket(Bucket=b)
    s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
    s3.put_object(Bucket=b, Key="obj", Body=b"next door", Tagging="k=v")
    s3.put_bucket_tagging(Bucket=b, Tagging={"TagSet": [{"Key": "k", "Value": "v"}]})
    s3.put_bucket_lifecycle_configuration(Bucket=b, LifecycleConfiguration={"Rules": [
        {**LIFECYCLE_RULE, "Filter": {"Prefix": "expire/"}}]})
    s3.put_bucket_policy(**OVERRIDES["PutBucketPolicy"](Ctx(b)), Bucket=b)
    s3.create_multipart_upload(Bucket=b, Key="mp")
    snap = snapshot(s3, b, "obj")
    assert all(v not in (None, []) for v in snap.values()), snap
    return b, snap


@pytest.mark.parametrize(("name", "with_object"), _runs())
def test_operation(s3: Any, neighbour: tuple[str, dict[str, Any]], name: str, with_object: bool) -> None:
    if name not in CASES:
        pytest.fail(f"{name} is not in CASES: decide what the gateway answers")
    check(s3, MODEL.operation_model(name), with_object)
    b, before = neighbour
    after = snapshot(s3, b, "obj")
    assert {k: v for k, v in after.items() if k != "buckets"} == {k: v for k, v in before.items() if k != "buckets"}


def _signed_request(s3: Any, method: str, bucket: str, key: str = "", query: str = "") -> tuple[int, bytes]:
    """A SigV4-signed request with a query botocore would not send."""
    url = f"{s3.meta.endpoint_url}/{bucket}" + (f"/{key}" if key else "") + (f"?{query}" if query else "")
    req = AWSRequest(method=method, url=url, data=b"")
    S3SigV4Auth(Credentials(AK, SK), "s3", "us-east-1").add_auth(req)
    prepared = req.prepare()
    r = urllib.request.Request(prepared.url, data=None, method=method, headers=dict(prepared.headers))
    try:
        with urllib.request.urlopen(r, timeout=30) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def test_an_unknown_sub_resource_is_refused_and_changes_nothing(s3: Any) -> None:
    """A sub-resource no SDK sends yet (`?futureThing`) is refused with S3's error XML; DELETE on an empty
    bucket keeps it, PUT creates nothing, GET of an object does not serve it."""
    bucket = _fresh("ni-unknown")
    s3.create_bucket(Bucket=bucket)

    def refused(method: str, key: str, query: str) -> None:
        status, body = _signed_request(s3, method, bucket, key, query)
        assert status == 501, (method, key, query, status, body)
        doc = ET.fromstring(body)
        assert doc.tag == "Error" and [c.tag for c in doc][:4] == ["Code", "Message", "Resource", "RequestId"], body
        assert doc.findtext("Code") == "NotImplemented" and doc.findtext("Resource") == f"/{bucket}" + (
            f"/{key}" if key else "")

    for method in ("DELETE", "PUT", "GET", "POST"):  # on the empty bucket
        refused(method, "", "futureThing")
    refused("DELETE", "", "futureThing&prefix=a")  # an argument beside it changes nothing
    assert bucket in [b["Name"] for b in s3.list_buckets()["Buckets"]]
    s3.put_object(Bucket=bucket, Key="obj", Body=b"kept")
    refused("GET", "obj", "futureThing=1")
    refused("PUT", "obj", "futureThing")
    refused("DELETE", "obj", "futureThing")
    refused("PUT", "obj", "tagging&acl")  # two sub-resources: which one would be a guess
    assert [o["Key"] for o in s3.list_objects_v2(Bucket=bucket)["Contents"]] == ["obj"]
    assert s3.get_object(Bucket=bucket, Key="obj")["Body"].read() == b"kept"
    assert s3.get_object_tagging(Bucket=bucket, Key="obj")["TagSet"] == []
