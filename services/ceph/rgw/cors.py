"""Bucket CORS as RGW (Squid) serves it: the `?cors` configuration (Put, Get, Delete), the OPTIONS
preflight, and the Access-Control-* headers on every other request that carries an Origin.

A rule has AllowedMethod (GET, PUT, HEAD, POST, DELETE), AllowedOrigin (each with at most one `*`:
a prefix and a suffix), optional AllowedHeader (`*` wildcards, case-blind), ExposeHeader,
MaxAgeSeconds and ID. As RGW (`RGWCORSConfiguration::host_name_rule`), the first rule whose origins
match the request's Origin is the one used; its methods and headers then decide.

OPTIONS (RGWOptionsCORS) is never authenticated, so a presigned URL's preflight works: no Origin or no
Access-Control-Request-Method is 400, no configuration or no matching rule 403, otherwise 200 with
Access-Control-Allow-Origin (the Origin), -Allow-Methods (the method asked), -Allow-Headers (the
requested headers the rule allows), -Expose-Headers, -Max-Age and `Vary: Origin`.
Any other request with an Origin (RGWOp::generate_cors_headers), whatever its outcome: when the rule
allows its method (Access-Control-Request-Method if sent, else its own), the same headers, with
Allow-Origin `*` when the rule allows every origin and the request has no Authorization header.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from services.ceph.rgw import s3_xml
from services.ceph.rgw.bucket_index import Bucket, CorsRule
from services.ceph.rgw.s3_errors import S3Error
from services.ceph.rgw.s3_xml import element as el
from services.ceph.rgw.store import Store
from services.ceph.rgw.wire import Request, Response

METHODS = ("GET", "PUT", "HEAD", "POST", "DELETE")
MAX_RULES = 100


def parse(body: bytes) -> list[CorsRule]:
    doc = s3_xml.parse(body, "CORSConfiguration")
    rules = []
    for r in doc.findall("CORSRule"):
        methods = [(m.text or "").strip() for m in r.findall("AllowedMethod")]
        origins = [(o.text or "").strip() for o in r.findall("AllowedOrigin")]
        if not methods or not origins:
            raise S3Error("MalformedXML", "each CORSRule needs an AllowedMethod and an AllowedOrigin")
        bad = [m for m in methods if m not in METHODS]
        if bad:
            raise S3Error("MalformedXML", f"unsupported AllowedMethod {bad[0]!r}: use {', '.join(METHODS)}")
        if any(o.count("*") > 1 for o in origins):
            raise S3Error("MalformedXML", "an AllowedOrigin can contain at most one * wildcard")
        age = (r.findtext("MaxAgeSeconds") or "").strip()
        if age and not age.isdigit():
            raise S3Error("MalformedXML", f"MaxAgeSeconds must be a non-negative integer, not {age!r}")
        rules.append(CorsRule(methods, origins, [(h.text or "").strip().lower() for h in r.findall("AllowedHeader")],
                              [(h.text or "").strip() for h in r.findall("ExposeHeader")],
                              int(age) if age else None, (r.findtext("ID") or "").strip()))
    if not rules or len(rules) > MAX_RULES:
        raise S3Error("MalformedXML", f"a CORS configuration has 1 to {MAX_RULES} CORSRule elements")
    return rules


def to_json(rules: Sequence[CorsRule]) -> bytes:
    return json.dumps([r.__dict__ for r in rules]).encode()


def from_json(raw: bytes) -> list[CorsRule]:
    return [CorsRule(**r) for r in json.loads(raw)]


def bucket_cors(store: Store, req: Request, b: Bucket) -> Response:
    if req.method == "PUT":
        rules = parse(req.body)
        store.configure(b, "cors", rules, to_json(rules))
        return Response(200)
    if req.method == "GET":
        if not b.cors:
            raise S3Error("NoSuchCORSConfiguration", "The CORS configuration does not exist", f"/{b.name}",
                          BucketName=b.name)
        inner = "".join(
            "<CORSRule>" + (el("ID", r.id) if r.id else "") + "".join(el("AllowedMethod", m) for m in r.methods)
            + "".join(el("AllowedOrigin", o) for o in r.origins) + "".join(el("AllowedHeader", h) for h in r.headers)
            + (el("MaxAgeSeconds", r.max_age) if r.max_age is not None else "")
            + "".join(el("ExposeHeader", h) for h in r.expose) + "</CORSRule>" for r in b.cors)
        return Response(200, [("Content-Type", "application/xml")], s3_xml.document("CORSConfiguration", inner))
    if req.method == "DELETE":
        store.configure(b, "cors", [], None)
        return Response(204)
    raise S3Error("MethodNotAllowed", f"{req.method} is not allowed on ?cors")


def _wild(pattern: str, value: str) -> bool:
    """RGW's is_string_in_set: `*` alone matches anything; one `*` inside is a prefix and a suffix."""
    if pattern == "*" or pattern == value:
        return True
    if "*" not in pattern:
        return False
    head, _, tail = pattern.partition("*")
    return value.startswith(head) and value.endswith(tail) and len(value) >= len(head)


def _rule(b: Bucket, origin: str) -> CorsRule | None:
    return next((r for r in b.cors if any(_wild(o, origin) for o in r.origins)), None)


def _allowed_headers(rule: CorsRule, requested: str) -> list[str] | None:
    """The requested headers (Access-Control-Request-Headers) the rule allows; None if one is not."""
    out = []
    for h in (x.strip() for x in requested.split(",") if x.strip()):
        if not any(_wild(p, h.lower()) for p in rule.headers):
            return None
        out.append(h)  # as the client spelt it, as RGW echoes it
    return out


def _headers(origin: str, method: str, rule: CorsRule, allowed: Sequence[str]) -> list[tuple[str, str]]:
    out = [("Access-Control-Allow-Origin", origin)]
    if origin != "*":
        out.append(("Vary", "Origin"))
    out.append(("Access-Control-Allow-Methods", method))
    if allowed:
        out.append(("Access-Control-Allow-Headers", ",".join(allowed)))
    if rule.expose:
        out.append(("Access-Control-Expose-Headers", ",".join(rule.expose)))
    if rule.max_age is not None:
        out.append(("Access-Control-Max-Age", str(rule.max_age)))
    return out


def preflight(b: Bucket, headers: dict[str, str]) -> Response:
    origin, method = headers.get("origin"), headers.get("access-control-request-method")
    if not origin:
        raise S3Error("InvalidArgument", "Missing mandatory Origin header", ArgumentName="Origin")
    if not method:
        raise S3Error("InvalidArgument", "Missing mandatory Access-Control-Request-Method header",
                      ArgumentName="Access-Control-Request-Method")
    rule = _rule(b, origin) if b.cors else None
    allowed = _allowed_headers(rule, headers.get("access-control-request-headers", "")) if rule else None
    if rule is None or method not in rule.methods or allowed is None:
        raise S3Error("AccessDenied", "CORSResponse: this CORS request is not allowed")
    return Response(200, _headers(origin, method, rule, allowed))


def response_headers(b: Bucket, method: str, headers: dict[str, str]) -> list[tuple[str, str]]:
    """The Access-Control-* headers of a (non-OPTIONS) request to bucket `b`; [] when none apply."""
    origin = headers.get("origin")
    rule = _rule(b, origin) if origin and b.cors else None
    if rule is None:
        return []
    method = headers.get("access-control-request-method") or method
    allowed = _allowed_headers(rule, headers.get("access-control-request-headers", ""))
    if method not in rule.methods:
        return []
    if "authorization" not in headers and "*" in rule.origins:
        origin = "*"
    return _headers(origin, method, rule, allowed or [])
