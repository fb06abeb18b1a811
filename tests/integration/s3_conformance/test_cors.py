"""Bucket CORS and presigned URLs as RGW (Squid) answers them, against the deployed twin: the ?cors
configuration, the OPTIONS preflight (never authenticated, so a presigned URL's preflight works:
ceph/s3-tests test_cors_presigned_get_object, test_cors_presigned_put_object), and the
Access-Control-* headers on presigned and signed GET and PUT with an Origin (test_cors_origin_response,
test_cors_origin_wildcard, test_cors_header_option)."""

from __future__ import annotations

import pytest
import requests
from botocore.client import BaseClient
from botocore.exceptions import ClientError

from tests.integration.s3_conformance.s3_twin import BOB, S3Twin, error

ALLOW_ORIGIN, ALLOW_METHODS = "Access-Control-Allow-Origin", "Access-Control-Allow-Methods"




def rules(*rs: dict[str, object]) -> dict[str, object]:
    return {"CORSRules": list(rs)}


def cors_of(r: requests.Response) -> tuple[int, str | None, str | None]:
    return r.status_code, r.headers.get(ALLOW_ORIGIN), r.headers.get(ALLOW_METHODS)


def test_cors_configuration_put_get_delete(twin: S3Twin, s3: BaseClient) -> None:
    bob = twin.client(BOB)
    s3.create_bucket(Bucket="cors-cfg")
    with pytest.raises(ClientError) as e:
        s3.get_bucket_cors(Bucket="cors-cfg")
    assert error(e) == (404, "NoSuchCORSConfiguration")
    rule = {"ID": "r1", "AllowedMethods": ["GET", "PUT"], "AllowedOrigins": ["origin1", "origin2"],
            "AllowedHeaders": ["x-amz-*"], "ExposeHeaders": ["x-amz-meta-a"], "MaxAgeSeconds": 60}
    s3.put_bucket_cors(Bucket="cors-cfg", CORSConfiguration=rules(rule))
    assert s3.get_bucket_cors(Bucket="cors-cfg")["CORSRules"] == [rule]
    with pytest.raises(ClientError) as e:  # a method CORS has no rule for: refused, the rule stays
        s3.put_bucket_cors(Bucket="cors-cfg", CORSConfiguration=rules({"AllowedMethods": ["PATCH"],
                                                                       "AllowedOrigins": ["*"]}))
    assert error(e) == (400, "MalformedXML")
    assert s3.get_bucket_cors(Bucket="cors-cfg")["CORSRules"] == [rule]
    with pytest.raises(ClientError) as e:  # the owner's to change
        bob.delete_bucket_cors(Bucket="cors-cfg")
    assert error(e) == (403, "AccessDenied")
    assert s3.delete_bucket_cors(Bucket="cors-cfg")["ResponseMetadata"]["HTTPStatusCode"] == 204
    with pytest.raises(ClientError) as e:
        s3.get_bucket_cors(Bucket="cors-cfg")
    assert error(e) == (404, "NoSuchCORSConfiguration")


@pytest.mark.parametrize("method", ["get_object", "put_object"])
def test_preflight_of_a_presigned_url(s3: BaseClient, method: str) -> None:
    bucket = f"cors-presigned-{method.split('_')[0]}"
    s3.create_bucket(Bucket=bucket, ACL="public-read")
    s3.put_object(Bucket=bucket, Key="foo", Body=b"bar", ACL="public-read")
    http = "GET" if method == "get_object" else "PUT"
    url = s3.generate_presigned_url(ClientMethod=method, Params={"Bucket": bucket, "Key": "foo"},
                                    ExpiresIn=100000, HttpMethod=http)
    assert requests.options(url, timeout=30).status_code == 400  # no Origin
    preflight = {"Origin": "example", "Access-Control-Request-Method": http}
    assert requests.options(url, headers=preflight, timeout=30).status_code == 403  # no CORS configuration
    s3.put_bucket_cors(Bucket=bucket, CORSConfiguration=rules({"AllowedMethods": [http],
                                                               "AllowedOrigins": ["example"]}))
    r = requests.options(url, headers=preflight, timeout=30)
    assert cors_of(r) == (200, "example", http)
    assert r.headers["Vary"] == "Origin"
    other = {"Origin": "example", "Access-Control-Request-Method": "DELETE"}
    assert requests.options(url, headers=other, timeout=30).status_code == 403
    # the presigned request itself, from a browser on that origin
    if http == "GET":
        r = requests.get(url, headers={"Origin": "example"}, timeout=30)
        assert (r.content, *cors_of(r)) == (b"bar", 200, "example", "GET")
    else:
        r = requests.put(url, data=b"new", headers={"Origin": "example"}, timeout=30)
        assert cors_of(r) == (200, "example", "PUT")
        assert s3.get_object(Bucket=bucket, Key="foo")["Body"].read() == b"new"
    r = requests.get(url, headers={"Origin": "elsewhere"}, timeout=30)
    assert r.headers.get(ALLOW_ORIGIN) is None


def test_origin_rules_and_wildcards(twin: S3Twin, s3: BaseClient) -> None:
    s3.create_bucket(Bucket="cors-origins", ACL="public-read")
    s3.put_bucket_cors(Bucket="cors-origins", CORSConfiguration=rules(
        {"AllowedMethods": ["GET"], "AllowedOrigins": ["*suffix"]},
        {"AllowedMethods": ["GET"], "AllowedOrigins": ["start*end"]},
        {"AllowedMethods": ["GET"], "AllowedOrigins": ["prefix*"]},
        {"AllowedMethods": ["PUT"], "AllowedOrigins": ["*.put"]}))
    url = f"{twin.endpoint}/cors-origins"
    obj = f"{url}/bar"
    assert cors_of(requests.get(url, timeout=30)) == (200, None, None)
    for origin, allowed in (("foo.suffix", True), ("foo.bar", False), ("foo.suffix.get", False), ("startend", True),
                            ("start1end", True), ("0start12end", False), ("prefix", True), ("prefix.suffix", True),
                            ("bla.prefix", False)):
        expect = (200, origin, "GET") if allowed else (200, None, None)
        assert cors_of(requests.get(url, headers={"Origin": origin}, timeout=30)) == expect, origin
    # errors carry the headers too; the method that counts is Access-Control-Request-Method, else the request's
    assert cors_of(requests.get(obj, headers={"Origin": "foo.suffix"}, timeout=30)) == (404, "foo.suffix", "GET")
    put = {"Origin": "foo.suffix", "content-length": "0"}
    assert cors_of(requests.put(obj, headers={**put, "Access-Control-Request-Method": "GET"}, timeout=30)) == (
        403, "foo.suffix", "GET")
    assert cors_of(requests.put(obj, headers={**put, "Access-Control-Request-Method": "PUT"}, timeout=30)) == (
        403, None, None)
    assert cors_of(requests.put(obj, headers=put, timeout=30)) == (403, None, None)
    assert cors_of(requests.put(obj, headers={"Origin": "foo.put", "content-length": "0"}, timeout=30)) == (
        403, "foo.put", "PUT")
    # preflights
    assert requests.options(url, timeout=30).status_code == 400
    assert requests.options(url, headers={"Origin": "foo.suffix"}, timeout=30).status_code == 400
    for origin, method, expect in (("foo.suffix", "GET", (200, "foo.suffix", "GET")),
                                   ("foo.bar", "GET", (403, None, None)),
                                   ("foo.suffix.get", "GET", (403, None, None)),
                                   ("startend", "GET", (200, "startend", "GET")),
                                   ("foo.put", "GET", (403, None, None)),
                                   ("foo.put", "PUT", (200, "foo.put", "PUT"))):
        r = requests.options(obj, headers={"Origin": origin, "Access-Control-Request-Method": method}, timeout=30)
        assert cors_of(r) == expect, (origin, method)


def test_wildcard_origin_and_headers(twin: S3Twin, s3: BaseClient) -> None:
    s3.create_bucket(Bucket="cors-star", ACL="public-read")
    s3.put_object(Bucket="cors-star", Key="bar", Body=b"x", ACL="public-read")
    s3.put_bucket_cors(Bucket="cors-star", CORSConfiguration=rules(
        {"AllowedMethods": ["GET"], "AllowedOrigins": ["*"], "ExposeHeaders": ["x-amz-meta-header1"],
         "AllowedHeaders": ["x-amz-meta-*"], "MaxAgeSeconds": 30}))
    obj = f"{twin.endpoint}/cors-star/bar"
    r = requests.get(obj, headers={"Origin": "example.origin"}, timeout=30)
    assert cors_of(r) == (200, "*", "GET") and "Vary" not in r.headers  # unsigned: any origin is "*"
    assert r.headers["Access-Control-Expose-Headers"] == "x-amz-meta-header1"
    signed = twin.signed("GET", "/cors-star/bar", headers={"Origin": "example.origin"})
    assert cors_of(signed) == (200, "example.origin", "GET")  # signed: the origin itself
    pre = {"Origin": "example.origin", "Access-Control-Request-Method": "GET"}
    asked = {"Access-Control-Request-Headers": "x-amz-meta-header2, X-Amz-Meta-Other"}
    r = requests.options(obj, headers={**pre, **asked}, timeout=30)
    assert cors_of(r) == (200, "example.origin", "GET")
    assert (r.headers["Access-Control-Allow-Headers"], r.headers["Access-Control-Max-Age"]) == (
        "x-amz-meta-header2,X-Amz-Meta-Other", "30")
    r = requests.options(obj, headers={**pre, "Access-Control-Request-Headers": "content-md5"}, timeout=30)
    assert cors_of(r) == (403, None, None)  # a header the rule does not allow
    s3.delete_bucket_cors(Bucket="cors-star")
    assert requests.get(obj, headers={"Origin": "example.origin"}, timeout=30).headers.get(ALLOW_ORIGIN) is None
