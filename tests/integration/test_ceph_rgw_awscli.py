"""The real AWS CLI (`aws`, awscli v1 from the venv) against the RGW S3 gateway over an in-process Ceph
cluster (12 hosts, EC 8+3): the high-level `aws s3` commands (mb, cp up and down with multipart, ls,
sync, rm --recursive, presign, rb) and `aws s3api` (versioning, bucket policy, object ACL, head-object),
plus a wrong secret key refused with SignatureDoesNotMatch.

Each call is a separate `aws` process with its credentials in the environment and its own config file
(AWS_CONFIG_FILE, AWS_SHARED_CREDENTIALS_FILE in a temporary directory): nothing of ~/.aws is read."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from services.ceph.rgw.gateway import Gateway
from services.ceph.rgw.http import RunningServer
from tests.integration import test_ceph_rgw_s3 as base
from tests.integration.test_ceph_rgw_s3 import ALICE

gateway = base.gateway  # the shared fixture: one in-process gateway per test module

AWS = Path(sys.executable).parent / "aws"
MIB = 1 << 20
LS_LINE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d +(\d+) (.+)$")

pytestmark = pytest.mark.skipif(not AWS.exists(), reason=f"{AWS} missing (`make install` installs awscli)")


class Aws:
    """Runs the `aws` binary against the gateway as one user."""

    def __init__(self, port: int, home: Path, key: str = ALICE.access_key, secret: str = ALICE.secret_key) -> None:
        self.endpoint = f"http://127.0.0.1:{port}"
        self.cwd = home.parent
        config = home / "config"
        config.write_text("[default]\nregion = us-east-1\noutput = json\n"
                          "s3 =\n  addressing_style = path\n  signature_version = s3v4\n")
        self.env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "LANG": "C.UTF-8",
            "AWS_ACCESS_KEY_ID": key, "AWS_SECRET_ACCESS_KEY": secret, "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_CONFIG_FILE": str(config), "AWS_SHARED_CREDENTIALS_FILE": str(home / "credentials"),
            "AWS_MAX_ATTEMPTS": "1", "AWS_RETRY_MODE": "standard", "AWS_PAGER": "",
        }

    def run(self, *args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
        if args[:2] in (("s3", "cp"), ("s3", "sync"), ("s3", "mv")):
            args = (*args, "--no-progress")
        # Run from the files' directory: the CLI prints local paths relative to its working directory.
        r = subprocess.run([str(AWS), "--endpoint-url", self.endpoint, *args], env=self.env, cwd=self.cwd,
                           capture_output=True, text=True, timeout=120)
        if ok:
            assert r.returncode == 0, f"aws {' '.join(args)} -> {r.returncode}\n{r.stdout}\n{r.stderr}"
        return r

    def json(self, *args: str) -> dict:  # type: ignore[type-arg]
        return json.loads(self.run(*args).stdout)

    def fails(self, *args: str) -> str:
        """stderr of a call that must fail."""
        r = self.run(*args, ok=False)
        assert r.returncode != 0, f"aws {' '.join(args)} should have failed:\n{r.stdout}"
        return r.stderr


@pytest.fixture(scope="module")
def port(gateway: tuple[Gateway, RunningServer]) -> int:
    return gateway[1].port


@pytest.fixture()
def aws(port: int, tmp_path: Path) -> Iterator[Aws]:
    home = tmp_path / "home"
    home.mkdir()
    yield Aws(port, home)
    assert not (home / ".aws").exists()  # nothing was read from or written to ~/.aws


def ls(aws: Aws, url: str, *extra: str) -> dict[str, int]:
    """`aws s3 ls URL`: key (or PRE prefix/) → size."""
    out: dict[str, int] = {}
    for line in aws.run("s3", "ls", url, *extra).stdout.splitlines():
        if line.strip().startswith("PRE "):
            out[line.strip()[4:]] = -1
            continue
        m = LS_LINE.match(line)
        assert m, f"unexpected `aws s3 ls` line: {line!r}"
        out[m.group(2)] = int(m.group(1))
    return out


def multipart_etag(data: bytes, part: int) -> str:
    digests = [hashlib.md5(data[i:i + part]).digest() for i in range(0, len(data), part)]
    return f'"{hashlib.md5(b"".join(digests)).hexdigest()}-{len(digests)}"'


def test_mb_cp_multipart_ls_head_rb(aws: Aws, tmp_path: Path) -> None:
    assert aws.run("s3", "mb", "s3://cli-b").stdout.strip() == "make_bucket: cli-b"
    # RGW: its owner re-creating a bucket succeeds
    assert aws.run("s3", "mb", "s3://cli-b").stdout.strip() == "make_bucket: cli-b"
    buckets = aws.run("s3", "ls").stdout.splitlines()
    assert any(line.endswith(" cli-b") for line in buckets), buckets

    small, big = tmp_path / "small.txt", tmp_path / "big.bin"
    small.write_bytes(b"hello from the aws cli\n")
    big_data = os.urandom(9 * MIB + 12345)  # > the CLI's 8 MiB multipart threshold: 2 parts of 8 MiB + rest
    big.write_bytes(big_data)
    r = aws.run("s3", "cp", "small.txt", "s3://cli-b/docs/small.txt", "--content-type", "text/plain",
                "--metadata", "team=ml,run=7")
    assert r.stdout.strip() == "upload: ./small.txt to s3://cli-b/docs/small.txt"
    r = aws.run("s3", "cp", "big.bin", "s3://cli-b/big.bin")
    assert r.stdout.strip() == "upload: ./big.bin to s3://cli-b/big.bin"

    head = aws.json("s3api", "head-object", "--bucket", "cli-b", "--key", "big.bin")
    assert head["ContentLength"] == len(big_data)
    assert head["ETag"] == multipart_etag(big_data, 8 * MIB)  # the CLI did a 2-part multipart upload
    head = aws.json("s3api", "head-object", "--bucket", "cli-b", "--key", "docs/small.txt")
    assert head["ContentLength"] == len(small.read_bytes())
    assert head["ETag"] == f'"{hashlib.md5(small.read_bytes()).hexdigest()}"'
    assert head["ContentType"] == "text/plain"
    assert head["Metadata"] == {"team": "ml", "run": "7"}
    assert "404" in aws.fails("s3api", "head-object", "--bucket", "cli-b", "--key", "nope")

    assert ls(aws, "s3://cli-b/") == {"docs/": -1, "big.bin": len(big_data)}
    assert ls(aws, "s3://cli-b/", "--recursive") == {"big.bin": len(big_data), "docs/small.txt": 23}
    assert ls(aws, "s3://cli-b/docs/") == {"small.txt": 23}

    down = tmp_path / "down.bin"
    r = aws.run("s3", "cp", "s3://cli-b/big.bin", "down.bin")
    assert r.stdout.strip() == "download: s3://cli-b/big.bin to ./down.bin"
    assert hashlib.sha256(down.read_bytes()).digest() == hashlib.sha256(big_data).digest()
    assert aws.run("s3", "cp", "s3://cli-b/docs/small.txt", "-").stdout == "hello from the aws cli\n"

    assert "BucketNotEmpty" in aws.fails("s3", "rb", "s3://cli-b")
    r = aws.run("s3", "rb", "s3://cli-b", "--force")
    out = r.stdout.splitlines()
    assert sorted(line for line in out if line.startswith("delete:")) == [
        "delete: s3://cli-b/big.bin", "delete: s3://cli-b/docs/small.txt"]
    assert out[-1] == "remove_bucket: cli-b"
    assert "NoSuchBucket" in aws.fails("s3", "ls", "s3://cli-b")


def test_sync_and_rm_recursive(aws: Aws, tmp_path: Path) -> None:
    aws.run("s3", "mb", "s3://cli-sync")
    src = tmp_path / "src"
    files = {"a.txt": b"a" * 10, "sub/b.bin": os.urandom(300_000), "sub/deep/c.bin": os.urandom(5 * MIB + 1)}
    for name, data in files.items():
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        (src / name).write_bytes(data)
    r = aws.run("s3", "sync", "src", "s3://cli-sync/tree/")
    uploads = sorted(line.split(" to ")[1] for line in r.stdout.splitlines() if line.startswith("upload:"))
    assert uploads == [f"s3://cli-sync/tree/{n}" for n in sorted(files)]
    assert ls(aws, "s3://cli-sync/tree/", "--recursive") == {f"tree/{n}": len(d) for n, d in files.items()}

    assert aws.run("s3", "sync", "src", "s3://cli-sync/tree/").stdout.strip() == ""  # nothing changed
    files["a.txt"] = b"changed, and longer"
    (src / "a.txt").write_bytes(files["a.txt"])
    r = aws.run("s3", "sync", "src", "s3://cli-sync/tree/")
    assert [line for line in r.stdout.splitlines() if line.startswith("upload:")] == [
        "upload: src/a.txt to s3://cli-sync/tree/a.txt"]

    dst = tmp_path / "dst"
    r = aws.run("s3", "sync", "s3://cli-sync/tree/", "dst")
    assert len([line for line in r.stdout.splitlines() if line.startswith("download:")]) == len(files)
    for name, data in files.items():
        assert (dst / name).read_bytes() == data, name

    r = aws.run("s3", "rm", "s3://cli-sync/tree/sub/", "--recursive")
    assert sorted(r.stdout.splitlines()) == ["delete: s3://cli-sync/tree/sub/b.bin",
                                             "delete: s3://cli-sync/tree/sub/deep/c.bin"]
    assert ls(aws, "s3://cli-sync/", "--recursive") == {"tree/a.txt": len(files["a.txt"])}
    aws.run("s3", "rm", "s3://cli-sync/", "--recursive")
    assert aws.run("s3", "ls", "s3://cli-sync/", "--recursive", ok=False).stdout == ""
    assert aws.run("s3", "rb", "s3://cli-sync").stdout.strip() == "remove_bucket: cli-sync"


def test_presign_fetched_with_urllib(aws: Aws, port: int, tmp_path: Path) -> None:
    aws.run("s3", "mb", "s3://cli-presign")
    body = os.urandom(70_000)
    (tmp_path / "p.bin").write_bytes(body)
    aws.run("s3", "cp", str(tmp_path / "p.bin"), "s3://cli-presign/dir/p.bin")
    url = aws.run("s3", "presign", "s3://cli-presign/dir/p.bin", "--expires-in", "300").stdout.strip()
    assert url.startswith(f"http://127.0.0.1:{port}/cli-presign/dir/p.bin?")
    assert "X-Amz-Signature=" in url and "X-Amz-Expires=300" in url
    with urllib.request.urlopen(url, timeout=10) as r:
        assert r.status == 200
        assert r.read() == body
    # Tampering with the signature is refused.
    bad = re.sub(r"X-Amz-Signature=([0-9a-f])", lambda m: "X-Amz-Signature=" + ("1" if m.group(1) != "1" else "2"),
                 url)
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(bad, timeout=10)
    assert e.value.code == 403 and b"<Code>SignatureDoesNotMatch</Code>" in e.value.read()
    # Unsigned, the object is private.
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(url.split("?")[0].replace("/cli-presign/", "/lab:cli-presign/"), timeout=10)
    assert e.value.code == 403 and b"<Code>AccessDenied</Code>" in e.value.read()


def test_versioning_with_s3api(aws: Aws, tmp_path: Path) -> None:
    aws.run("s3api", "create-bucket", "--bucket", "cli-ver")
    aws.run("s3api", "put-bucket-versioning", "--bucket", "cli-ver",
            "--versioning-configuration", "Status=Enabled")
    assert aws.json("s3api", "get-bucket-versioning", "--bucket", "cli-ver") == {"Status": "Enabled"}
    ids = []
    for i, text in enumerate([b"first", b"second!"]):
        f = tmp_path / f"v{i}"
        f.write_bytes(text)
        put = aws.json("s3api", "put-object", "--bucket", "cli-ver", "--key", "k", "--body", str(f))
        assert put["ETag"] == f'"{hashlib.md5(text).hexdigest()}"'
        ids.append(put["VersionId"])
    assert ids[0] != ids[1]
    versions = aws.json("s3api", "list-object-versions", "--bucket", "cli-ver")
    got = [(v["Key"], v["VersionId"], v["IsLatest"], v["Size"]) for v in versions["Versions"]]
    assert got == [("k", ids[1], True, 7), ("k", ids[0], False, 5)]
    assert "DeleteMarkers" not in versions

    out = tmp_path / "old"
    meta = aws.json("s3api", "get-object", "--bucket", "cli-ver", "--key", "k", f"--version-id={ids[0]}", str(out))
    assert meta["VersionId"] == ids[0] and out.read_bytes() == b"first"

    deleted = aws.json("s3api", "delete-object", "--bucket", "cli-ver", "--key", "k")
    assert deleted["DeleteMarker"] is True
    versions = aws.json("s3api", "list-object-versions", "--bucket", "cli-ver")
    assert [m["VersionId"] for m in versions["DeleteMarkers"]] == [deleted["VersionId"]]
    assert versions["DeleteMarkers"][0]["IsLatest"] is True
    assert [v["VersionId"] for v in versions["Versions"]] == [ids[1], ids[0]]
    assert "404" in aws.fails("s3api", "head-object", "--bucket", "cli-ver", "--key", "k")
    aws.run("s3api", "delete-object", "--bucket", "cli-ver", "--key", "k", f"--version-id={deleted['VersionId']}")
    assert aws.run("s3", "cp", "s3://cli-ver/k", "-").stdout == "second!"


def test_bucket_policy_deny_and_object_acl(aws: Aws, port: int, tmp_path: Path) -> None:
    aws.run("s3", "mb", "s3://cli-pol")
    for key in ("open/x.txt", "secret/y.txt"):
        f = tmp_path / "f"
        f.write_text(key)
        aws.run("s3", "cp", str(f), f"s3://cli-pol/{key}")
    assert "NoSuchBucketPolicy" in aws.fails("s3api", "get-bucket-policy", "--bucket", "cli-pol")
    assert "MalformedPolicy" in aws.fails("s3api", "put-bucket-policy", "--bucket", "cli-pol", "--policy", "{nope")
    policy = {"Version": "2012-10-17", "Statement": [
        {"Sid": "no-secrets", "Effect": "Deny", "Principal": "*", "Action": ["s3:GetObject", "s3:PutObject"],
         "Resource": "arn:aws:s3:::cli-pol/secret/*"}]}
    aws.run("s3api", "put-bucket-policy", "--bucket", "cli-pol", "--policy", json.dumps(policy))
    assert json.loads(aws.json("s3api", "get-bucket-policy", "--bucket", "cli-pol")["Policy"]) == policy

    # An explicit Deny wins over the owner's own rights.
    err = aws.fails("s3api", "get-object", "--bucket", "cli-pol", "--key", "secret/y.txt", str(tmp_path / "o"))
    assert "An error occurred (AccessDenied) when calling the GetObject operation" in err
    err = aws.fails("s3", "cp", str(tmp_path / "f"), "s3://cli-pol/secret/new.txt")
    assert "AccessDenied" in err
    assert aws.run("s3", "cp", "s3://cli-pol/open/x.txt", "-").stdout == "open/x.txt"  # not covered by the Deny
    assert "secret/new.txt" not in ls(aws, "s3://cli-pol/", "--recursive")

    # put-object-acl: public-read makes one object readable anonymously, its neighbour stays private.
    url = f"http://127.0.0.1:{port}/lab:cli-pol/open/x.txt"  # alice's tenant: anonymous callers name it, as in RGW
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(url, timeout=10)
    assert e.value.code == 403
    aws.run("s3api", "put-object-acl", "--bucket", "cli-pol", "--key", "open/x.txt", "--acl", "public-read")
    acl = aws.json("s3api", "get-object-acl", "--bucket", "cli-pol", "--key", "open/x.txt")
    grants = {(g["Grantee"].get("URI") or g["Grantee"].get("ID"), g["Permission"]) for g in acl["Grants"]}
    assert grants == {("lab$alice", "FULL_CONTROL"), ("http://acs.amazonaws.com/groups/global/AllUsers", "READ")}
    with urllib.request.urlopen(url, timeout=10) as r:
        assert r.read() == b"open/x.txt"
    aws.run("s3api", "put-object-acl", "--bucket", "cli-pol", "--key", "open/x.txt", "--acl", "private")
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(url, timeout=10)
    assert e.value.code == 403

    aws.run("s3api", "delete-bucket-policy", "--bucket", "cli-pol")
    assert aws.run("s3", "cp", "s3://cli-pol/secret/y.txt", "-").stdout == "secret/y.txt"
    aws.run("s3", "rb", "s3://cli-pol", "--force")


def test_wrong_secret_is_signature_does_not_match(port: int, tmp_path: Path) -> None:
    home = tmp_path / "h"
    home.mkdir()
    good = Aws(port, home)
    good.run("s3", "mb", "s3://cli-auth")
    bad = Aws(port, home, secret="not-" + ALICE.secret_key)
    err = bad.fails("s3api", "list-objects-v2", "--bucket", "cli-auth")
    assert "An error occurred (SignatureDoesNotMatch) when calling the ListObjectsV2 operation" in err
    f = tmp_path / "f"
    f.write_bytes(b"x")
    assert "SignatureDoesNotMatch" in bad.fails("s3", "cp", str(f), "s3://cli-auth/f")
    assert "SignatureDoesNotMatch" in bad.fails("s3", "ls")
    unknown = Aws(port, home, key="AKIANOSUCHUSER00000")
    assert "InvalidAccessKeyId" in unknown.fails("s3", "ls", "s3://cli-auth")
    assert good.run("s3", "ls", "s3://cli-auth").stdout == ""  # the failed cp stored nothing
    assert good.run("s3", "rb", "s3://cli-auth").stdout.strip() == "remove_bucket: cli-auth"
