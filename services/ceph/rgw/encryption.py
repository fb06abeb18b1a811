"""A bucket's default encryption (`?encryption`: Put, Get, Delete) and the server-side encryption a write
asks for, answered as RGW (Squid) answers them with no KMS and no SSE-S3 backend configured: RGW's
defaults, `rgw_crypt_sse_s3_backend=vault` with no vault address or token, `rgw_crypt_s3_kms_backend=
barbican` with no barbican, `rgw_crypt_require_ssl=true`.

PutBucketEncryption stores the configuration as it comes (RGWPutBucketEncryption::execute decodes
ServerSideEncryptionConfiguration/Rule/ApplyServerSideEncryptionByDefault with SSEAlgorithm,
KMSMasterKeyID and BucketKeyEnabled, rgw_bucket_encryption.cc, and validates no value): it needs no
KMS, so it succeeds. GetBucketEncryption without one: 404 ServerSideEncryptionConfigurationNotFoundError.

Writes: PutObject, CopyObject (the destination) and CreateMultipartUpload run `rgw_s3_prepare_encrypt`
(rgw_crypt.cc) on the request's `x-amz-server-side-encryption*` headers or, when it has none, on the
bucket's default (rgw_rest_s3.cc get_encryption_defaults). Without a KMS none of them can encrypt:
- SSE-C (`...-customer-algorithm`) over plain HTTP: 400 InvalidRequest (rgw_crypt_require_ssl); a
  customer key without the algorithm: 400 InvalidArgument.
- `aws:kms` over plain HTTP: 400 InvalidRequest (rgw_crypt_require_ssl); over TLS without a key id,
  400 InvalidArgument; with one, the key cannot be fetched from barbican: 400 InvalidArgument.
- `AES256` (SSE-S3): the bucket's key must first be created in vault (get_sse_s3_bucket_key →
  create_sse_s3_bucket_key) and there is no vault: -EINVAL, 400 InvalidArgument.
- any other value: 400 InvalidArgument.
Nothing is written then: the refusal comes before the data. A bucket with default SSE-S3 therefore
refuses every upload; reading, listing and deleting work. A GET or HEAD sending
`x-amz-server-side-encryption` is 400 InvalidRequest (rgw_s3_prepare_decrypt). SSE-C over TLS, which
RGW serves with no KMS, the twin refuses with 501 NotImplemented.
"""

from __future__ import annotations

import json

from services.ceph.rgw import s3_xml
from services.ceph.rgw.bucket_index import Bucket
from services.ceph.rgw.s3_errors import S3Error
from services.ceph.rgw.s3_xml import element as el
from services.ceph.rgw.store import Store
from services.ceph.rgw.wire import Request, Response

SSE = "x-amz-server-side-encryption"
KMS_KEY = "x-amz-server-side-encryption-aws-kms-key-id"
SSE_C = "x-amz-server-side-encryption-customer-algorithm"
_SSE_C_KEYS = ("x-amz-server-side-encryption-customer-key", "x-amz-server-side-encryption-customer-key-md5")


def parse(body: bytes) -> dict[str, object]:
    doc = s3_xml.parse(body, "ServerSideEncryptionConfiguration")
    rule = doc.find("Rule")
    conf: dict[str, object] = {"rule": rule is not None, "algorithm": "", "kms_key": "", "bucket_key": False}
    if rule is None:  # RGW keeps a configuration without a rule (and applies nothing)
        return conf
    default = rule.find("ApplyServerSideEncryptionByDefault")
    if default is not None:
        conf["algorithm"] = (default.findtext("SSEAlgorithm") or "").strip()
        conf["kms_key"] = (default.findtext("KMSMasterKeyID") or "").strip()
    bucket_key = (rule.findtext("BucketKeyEnabled") or "false").strip().lower()
    if bucket_key not in ("true", "false"):
        raise S3Error("MalformedXML", f"BucketKeyEnabled must be true or false, not {bucket_key!r}")
    conf["bucket_key"] = bucket_key == "true"
    return conf


def to_xml(conf: dict[str, object]) -> bytes:
    inner = ""
    if conf["rule"]:
        default = el("SSEAlgorithm", conf["algorithm"]) + (el("KMSMasterKeyID", conf["kms_key"])
                                                            if conf["kms_key"] else "")
        inner = ("<Rule>" + (f"<ApplyServerSideEncryptionByDefault>{default}</ApplyServerSideEncryptionByDefault>"
                             if conf["algorithm"] else "")
                 + (el("BucketKeyEnabled", "true") if conf["bucket_key"] else "") + "</Rule>")
    return s3_xml.document("ServerSideEncryptionConfiguration", inner)


def bucket_encryption(store: Store, req: Request, b: Bucket) -> Response:
    if req.method == "PUT":
        conf = parse(req.body)
        store.configure(b, "encryption", conf, json.dumps(conf).encode())
        return Response(200)
    if req.method == "GET":
        if b.encryption is None:
            raise S3Error("ServerSideEncryptionConfigurationNotFoundError",
                          "The server side encryption configuration was not found", f"/{b.name}", BucketName=b.name)
        return Response(200, [("Content-Type", "application/xml")], to_xml(b.encryption))
    if req.method == "DELETE":
        store.configure(b, "encryption", None, None)
        return Response(204)
    raise S3Error("MethodNotAllowed", f"{req.method} is not allowed on ?encryption")


def _requested(b: Bucket, headers: dict[str, str]) -> dict[str, str]:
    """The encryption headers a write has: its own, or else the bucket's default (get_encryption_defaults)."""
    own = {h: v for h, v in headers.items() if h.startswith(SSE)}
    if own or b.encryption is None or not b.encryption["algorithm"]:
        return own
    default = {SSE: str(b.encryption["algorithm"])}
    if b.encryption["kms_key"]:
        default[KMS_KEY] = str(b.encryption["kms_key"])
    return default


def check_write(b: Bucket, headers: dict[str, str], secure: bool) -> None:
    """Refuse, before any byte is written, a write that RGW with no KMS cannot encrypt (rgw_s3_prepare_encrypt)."""
    asked = _requested(b, headers)
    if SSE_C in asked:
        if not secure:
            raise S3Error("InvalidRequest", "")  # rgw_crypt_require_ssl: RGW sets no message
        raise S3Error("NotImplemented", "SSE-C is not implemented by this gateway")
    if any(k in asked for k in _SSE_C_KEYS):
        raise S3Error("InvalidArgument", "Requests specifying Server Side Encryption with Customer provided keys "
                      "must provide a valid encryption algorithm.")
    sse = asked.get(SSE, "")
    if not sse:
        return
    if sse == "aws:kms":
        if not secure:
            raise S3Error("InvalidRequest", "")
        key_id = asked.get(KMS_KEY, "")
        if not key_id:
            raise S3Error("InvalidArgument", "Server Side Encryption with KMS managed key requires HTTP header "
                          "x-amz-server-side-encryption-aws-kms-key-id")
        raise S3Error("InvalidArgument", f"Failed to retrieve the actual key, kms-keyid: {key_id}")
    if sse != "AES256":
        raise S3Error("InvalidArgument", "Server Side Encryption with KMS managed key requires HTTP header "
                      "x-amz-server-side-encryption : aws:kms or AES256")
    # SSE-S3: creating the bucket's key in vault fails (no rgw_crypt_sse_s3_vault_addr); RGW sets no message
    raise S3Error("InvalidArgument", "")


def check_read(headers: dict[str, str]) -> None:
    """rgw_s3_prepare_decrypt: a GET or HEAD may not ask for server-side encryption."""
    if SSE in headers:
        raise S3Error("InvalidRequest", "")
