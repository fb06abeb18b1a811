"""What the S3 conformance tests (tests/integration/s3_conformance/) share: the deployed twin
as `twin up mini --ceph --ceph-users FILE` starts it (the RGW daemon in front of the OSD daemons), two
users, boto3 clients for them, and unsigned raw requests for what boto3 hides (headers it never sends,
XML it parses away). The expectations follow ceph/s3-tests (s3tests_boto3/functional/test_s3.py) and
RGW Squid's answers."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from dataclasses import dataclass

import boto3
import pytest
import requests
from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.client import BaseClient
from botocore.config import Config
from botocore.credentials import Credentials
from botocore.exceptions import ClientError

from tests.ceph import helpers

ALICE = {"uid": "alice", "display_name": "Alice", "access_key": "AKIAALICE0000000001", "secret_key": "alice-secret"}
BOB = {"uid": "bob", "display_name": "Bob", "access_key": "AKIABOB00000000001", "secret_key": "bob-secret"}


@dataclass
class S3Twin:
    endpoint: str

    def client(self, user: dict[str, str] = ALICE, **s3: object) -> BaseClient:
        return boto3.client("s3", endpoint_url=self.endpoint, aws_access_key_id=user["access_key"],
                            aws_secret_access_key=user["secret_key"], region_name="us-east-1",
                            config=Config(retries={"max_attempts": 0}, s3={"addressing_style": "path", **s3},
                                          connect_timeout=5, read_timeout=60))

    def signed(self, method: str, path: str, user: dict[str, str] = ALICE, headers: dict[str, str] | None = None,
               body: bytes = b"") -> requests.Response:
        """A SigV4-signed request with exactly this path and query (`path` already url-encoded):
        what boto3 would add, drop or parse away is not in the way."""
        req = AWSRequest(method, f"{self.endpoint}{path}", headers=dict(headers or {}), data=body)
        S3SigV4Auth(Credentials(user["access_key"], user["secret_key"]), "s3", "us-east-1").add_auth(req)
        return requests.request(method, req.url, headers=dict(req.headers), data=body, timeout=60)


@contextlib.contextmanager
def deployed(tmp_path_factory: pytest.TempPathFactory, name: str) -> Iterator[S3Twin]:
    users = tmp_path_factory.mktemp(f"{name}-users") / "users.json"
    users.write_text(json.dumps([ALICE, BOB]))
    with helpers.ceph_twin(tmp_path_factory, name, clean=False, ceph_users=str(users)) as admin:
        yield S3Twin(admin.s3_endpoint())


def error(e: pytest.ExceptionInfo[ClientError]) -> tuple[int, str]:
    """(HTTP status, S3 error code) of a refused request."""
    r = e.value.response
    return r["ResponseMetadata"]["HTTPStatusCode"], str(r["Error"]["Code"])
