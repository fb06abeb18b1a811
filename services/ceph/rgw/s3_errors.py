"""S3 error responses: the code, HTTP status and XML body RGW sends (rgw_common.cc's error table).
Every refusal in the gateway is an `S3Error`, and `S3Error.response` is the one place it becomes HTTP."""

from __future__ import annotations

from xml.sax.saxutils import escape

from services.ceph.rgw.wire import Response

# code → HTTP status, as RGW maps them
STATUS: dict[str, int] = {
    "AccessControlListNotSupported": 400,
    "AccessDenied": 403,
    "AuthorizationHeaderMalformed": 400,
    "AuthorizationQueryParametersError": 400,
    "BadDigest": 400,
    "BucketAlreadyExists": 409,
    "BucketAlreadyOwnedByYou": 409,
    "BucketNotEmpty": 409,
    "EntityTooLarge": 400,
    "EntityTooSmall": 400,
    "IllegalVersioningConfigurationException": 400,
    "IncompleteBody": 400,
    "InternalError": 500,
    "InvalidAccessKeyId": 403,
    "InvalidArgument": 400,
    "InvalidBucketAclWithObjectOwnership": 400,
    "InvalidBucketState": 409,
    "InvalidBucketName": 400,
    "InvalidDigest": 400,
    "InvalidPart": 400,
    "InvalidPartOrder": 400,
    "InvalidRange": 416,
    "KeyTooLongError": 400,
    "InvalidRequest": 400,
    "InvalidRetentionPeriod": 400,
    "InvalidStorageClass": 400,
    "InvalidTag": 400,
    "MalformedACLError": 400,
    "MalformedPolicy": 400,
    "MalformedXML": 400,
    "MetadataTooLarge": 400,
    "MethodNotAllowed": 405,
    "MissingContentLength": 411,
    "MissingSecurityHeader": 400,
    "NoSuchBucket": 404,
    "NoSuchBucketPolicy": 404,
    "NoSuchCORSConfiguration": 404,
    "NoSuchKey": 404,
    "NoSuchLifecycleConfiguration": 404,
    "NoSuchTagSet": 404,
    "NoSuchUpload": 404,
    "NoSuchVersion": 404,
    "NotImplemented": 501,
    "ObjectLockConfigurationNotFoundError": 404,
    "OwnershipControlsNotFoundError": 404,
    "PreconditionFailed": 412,
    "RequestTimeTooSkewed": 403,
    "ServerSideEncryptionConfigurationNotFoundError": 404,
    "ServiceUnavailable": 503,
    "SignatureDoesNotMatch": 403,
    "SlowDown": 503,
    "UnexpectedContent": 400,
    "XAmzContentSHA256Mismatch": 400,
}


class S3Error(Exception):
    """A refused S3 request; `resource` is the path it named."""

    def __init__(self, code: str, message: str, resource: str = "", **extra: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code, self.message, self.resource = code, message, resource
        self.extra = extra
        self.headers: list[tuple[str, str]] = []  # sent with the error (x-amz-delete-marker, ...)

    @classmethod
    def of(cls, exc: Exception) -> S3Error:
        """`exc` as the S3 error the client gets: a bug is an InternalError, never a dropped connection."""
        return exc if isinstance(exc, S3Error) else cls("InternalError", f"{type(exc).__name__}: {exc}")

    @property
    def status(self) -> int:
        return STATUS.get(self.code, 500)

    def response(self, request_id: str, path: str, head: bool = False) -> Response:
        """The HTTP response: status, the error's headers, the XML body (none for a HEAD, whose
        Content-Length is still the body's); `path` is the resource when the error names none."""
        self.resource = self.resource or path
        size = self.extra.pop("size", None)  # InvalidRange: the object's size, sent as Content-Range
        body = self.xml(request_id)
        resp = Response(self.status, [("Content-Type", "application/xml"), *self.headers], b"" if head else body,
                        len(body))
        if size is not None:
            resp.headers.append(("Content-Range", f"bytes */{size}"))
        return resp

    def xml(self, request_id: str) -> bytes:
        # element names with a hyphen (X-Amz-Expires) come in as keyword arguments with an underscore
        message = f"<Message>{escape(self.message)}</Message>" if self.message else ""  # RGW omits an unset one
        extra = "".join(f"<{k.replace('_', '-')}>{escape(v)}</{k.replace('_', '-')}>" for k, v in self.extra.items())
        return (
            '<?xml version="1.0" encoding="UTF-8"?>'
            f"<Error><Code>{self.code}</Code>{message}"
            f"<Resource>{escape(self.resource)}</Resource><RequestId>{request_id}</RequestId>{extra}</Error>"
        ).encode()
