"""S3 error responses: the code, HTTP status and XML body RGW sends (rgw_common.cc's error table)."""

from __future__ import annotations

from xml.sax.saxutils import escape

# code → HTTP status, as RGW maps them
STATUS: dict[str, int] = {
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
    "InvalidBucketName": 400,
    "InvalidDigest": 400,
    "InvalidPart": 400,
    "InvalidPartOrder": 400,
    "InvalidRange": 416,
    "KeyTooLongError": 400,
    "InvalidRequest": 400,
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
    "NoSuchKey": 404,
    "NoSuchLifecycleConfiguration": 404,
    "NoSuchTagSet": 404,
    "NoSuchUpload": 404,
    "NoSuchVersion": 404,
    "NotImplemented": 501,
    "PreconditionFailed": 412,
    "RequestTimeTooSkewed": 403,
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

    @property
    def status(self) -> int:
        return STATUS.get(self.code, 500)

    def xml(self, request_id: str) -> bytes:
        # element names with a hyphen (X-Amz-Expires) come in as keyword arguments with an underscore
        extra = "".join(f"<{k.replace('_', '-')}>{escape(v)}</{k.replace('_', '-')}>" for k, v in self.extra.items())
        return (
            '<?xml version="1.0" encoding="UTF-8"?>'
            f"<Error><Code>{self.code}</Code><Message>{escape(self.message)}</Message>"
            f"<Resource>{escape(self.resource)}</Resource><RequestId>{request_id}</RequestId>{extra}</Error>"
        ).encode()
