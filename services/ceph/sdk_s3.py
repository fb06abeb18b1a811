"""A ready boto3 S3 client against the twin's gateway (RGW): `Twin.s3(access_key, secret_key)`.

    twin.ceph().user_create("alice", "Alice", access_key=AK, secret_key=SK)
    s3 = twin.s3(AK, SK)
    s3.create_bucket(Bucket="data"); s3.put_object(Bucket="data", Key="k", Body=b"...")

The endpoint is the gateway's in the manifest. Under `--network netns` it is an address on the
storage plane, which only a host namespace of the twin reaches (`twin net exec HOST -- ...`, or a
process that entered one): from the machine's own namespace the connection fails.
"""

from __future__ import annotations

from typing import Any

import boto3
from botocore.config import Config


def s3_client(endpoint: str, access_key: str, secret_key: str, *, retries: int = 0, read_timeout: float = 60.0,
              **config: Any) -> Any:
    """boto3's S3 client for `endpoint`: path-style addressing (the gateway serves no bucket host
    names), region us-east-1 (RGW's default zonegroup answers it), no retries unless asked, so that
    a fault shows as the error it is."""
    return boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=access_key, aws_secret_access_key=secret_key,
                        region_name="us-east-1",
                        config=Config(retries={"max_attempts": retries}, s3={"addressing_style": "path"},
                                      connect_timeout=5, read_timeout=read_timeout, **config))
