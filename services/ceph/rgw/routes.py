"""Which S3 requests the gateway serves, decided from the whole query string before any operation runs.

A *sub-resource* is a query parameter that names what a request acts on: `?acl`, `?tagging`,
`?publicAccessBlock`, `?uploadId=...`. S3 has one per configuration of a bucket or an object
(botocore's S3 model puts them in each operation's requestUri); the parameters that only modify
an operation (`prefix`, `versionId`, `partNumber`, `response-content-type`, the presigned-URL
signature, ...) are `MODIFIERS`. Every other query parameter is taken as a sub-resource, known or
not. A request is served when its scope (service, bucket or object), its one sub-resource (or
none) and its method are in `SERVED`; any other request answers 501 NotImplemented before anything
is read or written. So `DELETE /bucket?publicAccessBlock` is never a DeleteBucket, `PUT
/bucket?logging` never a CreateBucket, `HEAD /bucket/key?attributes` never a HeadObject. OPTIONS
(the CORS preflight, cors.py) is answered before routing, unauthenticated.

Real RGW decides the other way round: `RGWHandler_REST_Bucket_S3::op_get/op_put/op_delete/op_post`
and the `RGWHandler_REST_Obj_S3` ones (src/rgw/rgw_rest_s3.cc) test the sub-resources RGW knows one
after the other and end in the plain operation (`return new RGWDeleteBucket_ObjStore_S3;`, `new
RGWCreateBucket_ObjStore_S3`, the bucket listing, `RGWGetObj_ObjStore_S3`). On RGW a sub-resource it
has no handler for (`?analytics`, `?inventory`, `?metrics`, `?intelligent-tiering`, `?accelerate`,
`?metadataTable`, ...) is therefore the plain operation: DELETE on an empty bucket deletes it. The
twin refuses those with 501 instead (issue 13): a request never changes what it does not name.

Where RGW (Squid, 19.2) has a handler and the twin does not (`?website`, `?location`,
`?logging`, `?notification`, `?requestPayment`, `?replication`, `?torrent`, `?select`, RGW's own
`?append`), the twin's 501 differs from RGW's answer until it implements them (issue 15).
`?encryption` is served (encryption.py), as Squid answers it with no KMS configured, and so is Object
Lock (`?object-lock`, `?retention`, `?legal-hold`: object_lock.py).
GetObjectAttributes (`GET ?attributes`, object_attributes.py) is served as RGW serves it from
Tentacle (20.2) on (Squid answers it as a GetObject); a HEAD with `?attributes`, which RGW takes for a
HeadObject, answers 501 here. `?ownershipControls` too has a handler from Tentacle on, and the twin
serves it as Tentacle does (ownership.py); on Squid it would be the plain bucket operation.
tests/integration/test_ceph_rgw_not_implemented.py keeps the table, operation by operation.
"""

from __future__ import annotations

from collections.abc import Mapping

from services.ceph.rgw.s3_errors import S3Error

# scope → sub-resource ("" for none) → methods the gateway serves
SERVED: dict[str, dict[str, frozenset[str]]] = {
    "service": {"": frozenset({"GET"})},  # ListBuckets
    "bucket": {
        "": frozenset({"GET", "HEAD", "PUT", "DELETE"}),  # ListObjects(V2), HeadBucket, CreateBucket, DeleteBucket
        "acl": frozenset({"GET", "PUT"}),
        "policy": frozenset({"GET", "PUT", "DELETE"}),
        "tagging": frozenset({"GET", "PUT", "DELETE"}),
        "lifecycle": frozenset({"GET", "PUT", "DELETE"}),
        "versioning": frozenset({"GET", "PUT"}),
        "versions": frozenset({"GET"}),  # ListObjectVersions
        "uploads": frozenset({"GET"}),  # ListMultipartUploads
        "delete": frozenset({"POST"}),  # DeleteObjects
        "cors": frozenset({"GET", "PUT", "DELETE"}),
        "publicAccessBlock": frozenset({"GET", "PUT", "DELETE"}),
        "policyStatus": frozenset({"GET"}),
        "ownershipControls": frozenset({"GET", "PUT", "DELETE"}),  # from Tentacle's RGW (ownership.py)
        "encryption": frozenset({"GET", "PUT", "DELETE"}),
        "object-lock": frozenset({"GET", "PUT"}),
    },
    "object": {
        "": frozenset({"GET", "HEAD", "PUT", "DELETE"}),  # GetObject, HeadObject, PutObject/CopyObject, DeleteObject
        "acl": frozenset({"GET", "PUT"}),
        "tagging": frozenset({"GET", "PUT", "DELETE"}),
        "retention": frozenset({"GET", "PUT"}),
        "legal-hold": frozenset({"GET", "PUT"}),
        "attributes": frozenset({"GET"}),  # GetObjectAttributes (object_attributes.py)
        "uploads": frozenset({"POST"}),  # CreateMultipartUpload
        "uploadId": frozenset({"GET", "PUT", "POST", "DELETE"}),  # ListParts, UploadPart(Copy), Complete, Abort
    },
}

# Query parameters that modify an operation rather than name what it acts on.
MODIFIERS = frozenset({
    # listings
    "prefix", "delimiter", "marker", "max-keys", "encoding-type", "list-type", "start-after", "continuation-token",
    "fetch-owner", "key-marker", "version-id-marker", "upload-id-marker", "max-uploads", "max-parts",
    "part-number-marker", "max-buckets", "bucket-region", "max-directory-buckets",
    # objects and versions
    "versionId", "partNumber",
    "response-content-type", "response-content-language", "response-expires", "response-cache-control",
    "response-content-disposition", "response-content-encoding",
    # arguments of sub-resources the gateway refuses anyway (so they are not a second sub-resource)
    "id", "select-type", "annotationName", "annotation-prefix", "max-annotation-results",
    "x-id",  # newer SDKs name the operation in the query (`?x-id=GetObject`)
    # presigned URLs: SigV4 (X-Amz-*, matched case-blind below) and SigV2
    "AWSAccessKeyId", "Signature", "Expires",
})

METHODS = frozenset({"GET", "HEAD", "PUT", "POST", "DELETE", "OPTIONS"})  # what S3 defines operations for


def is_modifier(param: str) -> bool:
    return param in MODIFIERS or param.lower().startswith("x-amz-")


def route(method: str, bucket: str, key: str, query: Mapping[str, str]) -> str:
    """The sub-resource ("" for none) a request is served as; 501 NotImplemented for one the gateway does
    not serve, 405 MethodNotAllowed for a method S3 has no operation for."""
    if method not in METHODS:
        raise S3Error("MethodNotAllowed", f"{method} is not an S3 method")
    scope = "object" if key else "bucket" if bucket else "service"
    subs = sorted(p for p in query if not is_modifier(p))
    if len(subs) > 1:
        raise S3Error("NotImplemented", f"a request naming several sub-resources ({_names(subs)}) is not "
                      "implemented by this gateway")
    sub = subs[0] if subs else ""
    if method not in SERVED[scope].get(sub, ()):
        what = f"{method} on {_SCOPES[scope]}" + (f" with {_names(subs)}" if sub else "")
        raise S3Error("NotImplemented", f"{what} is not implemented by this gateway")
    return sub


_SCOPES = {"service": "the service", "bucket": "a bucket", "object": "an object"}


def _names(subs: list[str]) -> str:
    return ", ".join(f"?{s}" for s in subs)
