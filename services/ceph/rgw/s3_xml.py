"""S3 XML bodies: ListAllMyBucketsResult and ListBucketResult (ListObjects v1 and v2), and parsing of
the XML documents clients send (CompleteMultipartUpload, Delete, VersioningConfiguration)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from urllib.parse import quote
from xml.sax.saxutils import escape

from services.ceph.rgw.s3_errors import S3Error

S3_NS = "http://s3.amazonaws.com/doc/2006-03-01/"
_DECL = '<?xml version="1.0" encoding="UTF-8"?>'


def iso8601(ts: float) -> str:
    """S3's timestamp in listings: 2025-01-01T00:00:00.000Z."""
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{int(ts * 1000) % 1000:03d}Z"


def http_date(ts: float) -> str:
    return _http_date(int(ts))


@lru_cache(maxsize=4096)  # every response carries Date, every GET Last-Modified: format each second once
def _http_date(seconds: int) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%a, %d %b %Y %H:%M:%S GMT")


@dataclass(frozen=True)
class Owner:
    id: str
    display_name: str

    def xml(self) -> str:
        return f"<Owner><ID>{escape(self.id)}</ID><DisplayName>{escape(self.display_name)}</DisplayName></Owner>"


@dataclass(frozen=True)
class BucketItem:
    name: str
    created: float


@dataclass(frozen=True)
class ObjectItem:
    key: str
    mtime: float
    etag: str  # with its quotes
    size: int
    owner: Owner


@dataclass(frozen=True)
class Listing:
    contents: Sequence[ObjectItem]
    prefixes: Sequence[str]
    truncated: bool
    last: str  # the last key or common prefix returned (the next marker)


def list_buckets(owner: Owner, buckets: Sequence[BucketItem]) -> bytes:
    items = "".join(f"<Bucket><Name>{escape(b.name)}</Name><CreationDate>{iso8601(b.created)}</CreationDate></Bucket>"
                    for b in buckets)
    return (f'{_DECL}<ListAllMyBucketsResult xmlns="{S3_NS}">{owner.xml()}<Buckets>{items}</Buckets>'
            "</ListAllMyBucketsResult>").encode()


def _enc(text: str, url: bool) -> str:
    return escape(quote(text, safe="/") if url else text)


def _body(listing: Listing, url: bool, owners: bool = True) -> str:
    out = []
    for o in listing.contents:
        out.append(f"<Contents><Key>{_enc(o.key, url)}</Key><LastModified>{iso8601(o.mtime)}</LastModified>"
                   f"<ETag>{escape(o.etag)}</ETag><Size>{o.size}</Size><StorageClass>STANDARD</StorageClass>"
                   f"{o.owner.xml() if owners else ''}</Contents>")
    out.extend(f"<CommonPrefixes><Prefix>{_enc(p, url)}</Prefix></CommonPrefixes>" for p in listing.prefixes)
    return "".join(out)


def _common(bucket: str, prefix: str, delimiter: str, max_keys: int, url: bool, listing: Listing,
            url_prefix: bool) -> str:
    # RGW answers IsTruncated false for max-keys=0 (`max && is_truncated`), whatever the bucket holds
    s = (f"<Name>{escape(bucket)}</Name><Prefix>{_enc(prefix, url and url_prefix)}</Prefix>"
         f"<MaxKeys>{max_keys}</MaxKeys>")
    if delimiter:
        s += f"<Delimiter>{_enc(delimiter, url)}</Delimiter>"
    if url:
        s += "<EncodingType>url</EncodingType>"
    return s + f"<IsTruncated>{'true' if max_keys and listing.truncated else 'false'}</IsTruncated>"


def list_objects_v2(
    bucket: str, prefix: str, delimiter: str, max_keys: int, url: bool, listing: Listing,
    continuation: str | None, next_token: str, start_after: str | None, fetch_owner: bool,
) -> bytes:
    """ListObjectsV2: ContinuationToken and StartAfter are echoed whenever the request has them, even
    empty (RGW's continuation_token_exist, start_after_exist); Owner only with fetch-owner=true."""
    s = _common(bucket, prefix, delimiter, max_keys, url, listing, url_prefix=True)
    s += f"<KeyCount>{len(listing.contents) + len(listing.prefixes)}</KeyCount>"
    if continuation is not None:
        s += f"<ContinuationToken>{escape(continuation)}</ContinuationToken>"
    if next_token:
        s += f"<NextContinuationToken>{escape(next_token)}</NextContinuationToken>"
    if start_after is not None:
        s += f"<StartAfter>{_enc(start_after, url)}</StartAfter>"
    return (f'{_DECL}<ListBucketResult xmlns="{S3_NS}">{s}{_body(listing, url, fetch_owner)}'
            "</ListBucketResult>").encode()


def list_objects_v1(
    bucket: str, prefix: str, delimiter: str, max_keys: int, url: bool, listing: Listing, marker: str,
) -> bytes:
    """ListObjects: RGW (and AWS, as botocore reads it) leaves Prefix unencoded here; Marker, NextMarker,
    Delimiter, Key and CommonPrefixes are url-encoded with encoding-type=url."""
    s = _common(bucket, prefix, delimiter, max_keys, url, listing, url_prefix=False)
    s += f"<Marker>{_enc(marker, url)}</Marker>"
    if max_keys and listing.truncated and delimiter:
        s += f"<NextMarker>{_enc(listing.last, url)}</NextMarker>"
    return f'{_DECL}<ListBucketResult xmlns="{S3_NS}">{s}{_body(listing, url)}</ListBucketResult>'.encode()


# -- request bodies and the small result documents of object operations ------------------------


def parse(body: bytes, root: str) -> ET.Element:
    """A client's XML request body with namespaces stripped; MalformedXML unless its root is `root`."""
    try:
        doc = ET.fromstring(body)
    except ET.ParseError:
        raise S3Error("MalformedXML", "the XML you provided was not well-formed or did not validate against "
                      "our published schema") from None
    for el in doc.iter():
        el.tag = el.tag.rpartition("}")[2]
    if doc.tag != root:
        raise S3Error("MalformedXML", f"expected a <{root}> document, got <{doc.tag}>")
    return doc


def document(root: str, inner: str) -> bytes:
    return f'{_DECL}<{root} xmlns="{S3_NS}">{inner}</{root}>'.encode()


def element(name: str, value: object) -> str:
    return f"<{name}>{escape(str(value))}</{name}>"
