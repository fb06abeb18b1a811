"""ListObjects and ListObjectsV2 edge cases as RGW (Squid) answers them, against the deployed twin:
max-keys=0, FetchOwner's default, an empty continuation-token echoed, encoding-type=url with a prefix.
(ceph/s3-tests: test_bucket_list{,v2}_maxkeys_zero, test_bucket_listv2_fetchowner_*,
test_bucket_listv2_continuationtoken_empty, test_bucket_list{,v2}_encoding_basic,
test_bucket_list{,v2}_prefix_unreadable.)"""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest
from botocore.client import BaseClient

from tests.integration.s3_conformance.s3_twin import S3Twin

NS = "{http://s3.amazonaws.com/doc/2006-03-01/}"
KEYS = ["bar", "baz", "foo", "quxx"]
ODD = ["foo+1/bar", "foo/bar/xyzzy", "quux ab/thud", "asdf+b", "\n"]


@pytest.fixture(scope="module", autouse=True)
def listed(twin: S3Twin) -> None:
    s3 = twin.client()
    s3.create_bucket(Bucket="plain")
    for k in KEYS:
        s3.put_object(Bucket="plain", Key=k, Body=b"x")
    s3.create_bucket(Bucket="odd")
    for k in ODD:
        s3.put_object(Bucket="odd", Key=k, Body=b"x")



def raw_list(twin: S3Twin, bucket: str, query: str) -> ET.Element:
    """The listing with exactly `query` (botocore adds encoding-type=url to every listing and drops
    empty parameters), parsed."""
    r = twin.signed("GET", f"/{bucket}?{query}")
    assert r.status_code == 200, r.text
    return ET.fromstring(r.content)


def text(doc: ET.Element, path: str) -> list[str]:
    return [e.text or "" for e in doc.iterfind("/".join(NS + p for p in path.split("/")))]


def test_max_keys_zero_is_empty_and_not_truncated(s3: BaseClient) -> None:
    v1 = s3.list_objects(Bucket="plain", MaxKeys=0)
    assert (v1["IsTruncated"], v1.get("Contents"), v1["MaxKeys"]) == (False, None, 0)
    assert "NextMarker" not in v1
    v2 = s3.list_objects_v2(Bucket="plain", MaxKeys=0)
    assert (v2["IsTruncated"], v2.get("Contents"), v2["KeyCount"]) == (False, None, 0)
    assert "NextContinuationToken" not in v2


def test_fetch_owner_only_when_asked_in_v2(s3: BaseClient) -> None:
    assert "Owner" not in s3.list_objects_v2(Bucket="plain")["Contents"][0]
    assert "Owner" not in s3.list_objects_v2(Bucket="plain", FetchOwner=False)["Contents"][0]
    assert s3.list_objects_v2(Bucket="plain", FetchOwner=True)["Contents"][0]["Owner"] == {"ID": "alice",
                                                                                          "DisplayName": "Alice"}
    assert s3.list_objects(Bucket="plain")["Contents"][0]["Owner"]["ID"] == "alice"  # V1 always has it


def test_empty_continuation_token_is_echoed(twin: S3Twin, s3: BaseClient) -> None:
    r = s3.list_objects_v2(Bucket="plain", ContinuationToken="")
    assert (r["ContinuationToken"], r["IsTruncated"]) == ("", False)
    assert [o["Key"] for o in r["Contents"]] == KEYS
    doc = raw_list(twin, "plain", "list-type=2&continuation-token=")
    assert text(doc, "ContinuationToken") == [""]
    assert text(doc, "StartAfter") == []  # not asked: not echoed
    assert text(raw_list(twin, "plain", "list-type=2&start-after="), "StartAfter") == [""]
    assert text(raw_list(twin, "plain", "list-type=2"), "ContinuationToken") == []


def test_url_encoding_basic(s3: BaseClient) -> None:
    for listing in (s3.list_objects, s3.list_objects_v2):
        r = listing(Bucket="odd", Delimiter="/", EncodingType="url")
        assert r["Delimiter"] == "/"
        assert [o["Key"] for o in r["Contents"]] == ["%0A", "asdf%2Bb"]
        assert [p["Prefix"] for p in r["CommonPrefixes"]] == ["foo%2B1/", "foo/", "quux%20ab/"]


def test_url_encoding_with_a_prefix_v2(twin: S3Twin, s3: BaseClient) -> None:
    doc = raw_list(twin, "odd", "list-type=2&encoding-type=url&prefix=quux%20ab%2F&delimiter=%2F")
    assert text(doc, "Prefix") == ["quux%20ab/"]
    assert text(doc, "Delimiter") == ["/"]
    assert text(doc, "EncodingType") == ["url"]
    assert text(doc, "Contents/Key") == ["quux%20ab/thud"]
    doc = raw_list(twin, "odd", "list-type=2&encoding-type=url&prefix=foo%2B&delimiter=%2F")
    assert text(doc, "CommonPrefixes/Prefix") == ["foo%2B1/"]
    # boto3 asks for encoding-type=url by itself and decodes what V2 encodes
    r = s3.list_objects_v2(Bucket="odd", Prefix="quux ab/")
    assert (r["Prefix"], [o["Key"] for o in r["Contents"]]) == ("quux ab/", ["quux ab/thud"])
    assert s3.list_objects_v2(Bucket="odd", Prefix="\n")["Prefix"] == "\n"


def test_url_encoding_with_a_prefix_v1(twin: S3Twin, s3: BaseClient) -> None:
    doc = raw_list(twin, "odd", "encoding-type=url&prefix=quux%20ab%2F&delimiter=%2F&marker=quux%20ab%2Fa")
    assert text(doc, "Prefix") == ["quux ab/"]  # ListObjects leaves Prefix as it is (so botocore reads it)
    assert text(doc, "Marker") == ["quux%20ab/a"]
    assert text(doc, "Contents/Key") == ["quux%20ab/thud"]
    r = s3.list_objects(Bucket="odd", Prefix="\n")
    assert (r["Prefix"], [o["Key"] for o in r["Contents"]]) == ("\n", ["\n"])
    r = s3.list_objects(Bucket="odd", Prefix="foo+", Delimiter="/")
    assert (r["Prefix"], [p["Prefix"] for p in r["CommonPrefixes"]]) == ("foo+", ["foo+1/"])
