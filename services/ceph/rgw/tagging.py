"""S3 object and bucket tagging as RGW keeps it: a tag set of at most 10 tags on an object version
(keys of 1–128 characters, values of at most 256, each key once, no `aws:` keys), set at upload with
`x-amz-tagging: k=v&k2=v2` or later with `PUT ?tagging`; a GET/HEAD reports how many with
`x-amz-tagging-count`. A bucket's tag set (up to 50 tags) is a bucket attribute. A refused tag set
changes nothing.
"""

from __future__ import annotations

import json
from urllib.parse import parse_qsl

from services.ceph.rgw import s3_xml
from services.ceph.rgw.bucket_index import Bucket
from services.ceph.rgw.s3_errors import S3Error
from services.ceph.rgw.s3_xml import element as el
from services.ceph.rgw.store import Store
from services.ceph.rgw.wire import Request, Response

MAX_OBJECT_TAGS = 10
MAX_BUCKET_TAGS = 50
MAX_KEY = 128
MAX_VALUE = 256


def _check(pairs: list[tuple[str, str]], limit: int) -> dict[str, str]:
    if len(pairs) > limit:
        raise S3Error("InvalidTag", f"a tag set holds at most {limit} tags, got {len(pairs)}")
    tags: dict[str, str] = {}
    for k, v in pairs:
        if not 1 <= len(k) <= MAX_KEY:
            raise S3Error("InvalidTag", f"a tag key is 1 to {MAX_KEY} characters long, got {len(k)}")
        if len(v) > MAX_VALUE:
            raise S3Error("InvalidTag", f"a tag value is at most {MAX_VALUE} characters long, got {len(v)}")
        if k.lower().startswith("aws:"):
            raise S3Error("InvalidTag", "System tags cannot be added/updated by requester")
        if k in tags:
            raise S3Error("InvalidTag", "Cannot provide multiple Tags with the same key")
        tags[k] = v
    return tags


def from_header(value: str) -> dict[str, str]:
    """`x-amz-tagging`: URL query form, `k=v&k2=v2`."""
    return _check(parse_qsl(value, keep_blank_values=True), MAX_OBJECT_TAGS) if value else {}


def from_xml(body: bytes, for_bucket: bool = False) -> dict[str, str]:
    doc = s3_xml.parse(body, "Tagging")
    tag_set = doc.find("TagSet")
    if tag_set is None:
        raise S3Error("MalformedXML", "a Tagging document needs a TagSet")
    pairs = []
    for t in tag_set.findall("Tag"):
        k, v = t.findtext("Key"), t.findtext("Value")
        if k is None or v is None:
            raise S3Error("MalformedXML", "each Tag needs a Key and a Value")
        pairs.append((k, v))
    return _check(pairs, MAX_BUCKET_TAGS if for_bucket else MAX_OBJECT_TAGS)


def to_xml(tags: dict[str, str]) -> bytes:
    inner = "".join(f"<Tag>{el('Key', k)}{el('Value', v)}</Tag>" for k, v in tags.items())
    return s3_xml.document("Tagging", f"<TagSet>{inner}</TagSet>")


def count_header(tags: dict[str, str]) -> list[tuple[str, str]]:
    return [("x-amz-tagging-count", str(len(tags)))] if tags else []


def object_tagging(store: Store, req: Request, b: Bucket, key: str, version_id: str | None) -> Response:
    """`?tagging` on an object version: PUT replaces its tag set, DELETE empties it, GET returns it."""
    e = store.lookup(b, key, version_id)
    vh = [("x-amz-version-id", e.version_id)] if b.versioning else []
    if req.method in ("PUT", "DELETE"):
        tags = from_xml(req.body) if req.method == "PUT" else {}
        store.update(b, e, tags=tags)  # the index entry first: a refused write changes nothing
        return Response(200 if req.method == "PUT" else 204, vh)
    if req.method == "GET":
        return Response(200, [("Content-Type", "application/xml"), *vh], to_xml(e.tags))
    raise S3Error("MethodNotAllowed", f"{req.method} is not allowed on ?tagging")


def bucket_tagging(store: Store, req: Request, b: Bucket) -> Response:
    if req.method == "PUT":
        tags = from_xml(req.body, for_bucket=True)
        store.configure(b, "tagging", tags, json.dumps(tags).encode())
        return Response(200)
    if req.method == "GET":
        if not b.tags:
            raise S3Error("NoSuchTagSet", "There is no tag set", f"/{b.name}", BucketName=b.name)
        return Response(200, [("Content-Type", "application/xml")], to_xml(b.tags))
    if req.method == "DELETE":
        store.configure(b, "tagging", {}, None)
        return Response(204)
    raise S3Error("MethodNotAllowed", f"{req.method} is not allowed on ?tagging")
