"""What every write that makes an object checks before a byte is written: PutObject, CopyObject's
destination and CreateMultipartUpload (RGW's `get_params` of each, rgw_rest_s3.cc), in this order:
- the ACL it asks for, as the bucket's Object Ownership allows it (ownership.py);
- a public ACL, which PublicAccessBlock may refuse (public_access.py);
- the encryption it asks for, or the bucket's default, refused with no KMS (encryption.py);
- the Object Lock its headers ask for (object_lock.py).
"""

from __future__ import annotations

from services.ceph.rgw import acl, encryption, object_lock, ownership, public_access
from services.ceph.rgw.bucket_index import Bucket


def admit(b: Bucket, headers: dict[str, str], secure: bool, now: float) -> tuple[list[list[str]], dict[str, object]]:
    """The new object's grants and lock fields (object_lock.from_headers); an S3Error refuses the write."""
    ownership.check_upload_acl(b, headers)
    grants = ownership.upload_grants(b, acl.from_headers(headers, b.owner.id) or [])
    public_access.check_acl(b, grants)
    encryption.check_write(b, headers, secure)
    return grants, object_lock.from_headers(b, headers, now)
