"""S3 multipart uploads as RGW stores them: each part striped into the EC data pool on its own
(`<marker>__multipart_<key>.<upload>.<n>` then `__shadow_` stripes), and completion writes only a
manifest — an empty head object and the index entry naming the parts' RADOS objects in order. No
byte is copied at completion, so completing a 10 GiB upload is as cheap as RGW makes it.

S3's rules, checked before anything changes (a refused completion leaves the upload as it was):
part numbers 1..10,000; the completion list ascending (InvalidPartOrder), each part uploaded with
that ETag (InvalidPart), every part but the last at least 5 MiB (EntityTooSmall). The ETag is
the MD5 of the parts' binary MD5s, then `-N`. Parts uploaded but not named are freed.

Additional checksums (boto3's default since 1.36): an upload initiated with `x-amz-checksum-algorithm`
keeps each part's checksum of that algorithm (the client's, verified, or the gateway's own), the
completion must name every part's, and the object gets S3's COMPOSITE checksum: the algorithm over
the parts' binary checksums, then `-N`. The object keeps each part's size and checksum
(GetObjectAttributes' ObjectParts, object_attributes.py).

A completion may be conditional (If-Match / If-None-Match, conditional_write.py), checked against
the key's current object as a PutObject is.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets

from services.ceph.rgw import (
    checksums,
    conditional_write,
    copy_object,
    new_object,
    object_lock,
    ownership,
    s3_xml,
    tagging,
)
from services.ceph.rgw.bucket_index import Bucket, ObjectEntry, Part, Upload
from services.ceph.rgw.entity import check_key, object_attrs
from services.ceph.rgw.s3_errors import S3Error
from services.ceph.rgw.s3_xml import element as el
from services.ceph.rgw.store import Store
from services.ceph.rgw.users import User
from services.ceph.rgw.wire import Request, Response

MIN_PART = 5 << 20
MAX_PART = 5 << 30
MAX_PARTS = 10_000
MAX_LIST = 1000


def _no_such_upload(upload_id: str) -> S3Error:
    return S3Error("NoSuchUpload", "the specified upload does not exist; the upload ID may be invalid, or the upload "
                   "may have been aborted or completed", UploadId=upload_id)


def _checksum_element(algorithm: str) -> str:
    return "Checksum" + algorithm.upper()  # crc32 → ChecksumCRC32, as S3's XML names them


def _checksum_algorithm(headers: dict[str, str]) -> str:
    algorithm = headers.get("x-amz-checksum-algorithm", "").lower()
    kind = headers.get("x-amz-checksum-type", "").upper()
    if algorithm and algorithm not in checksums.ALGORITHMS:
        raise S3Error("InvalidRequest", f"checksum algorithm {algorithm.upper()!r} is not supported; use one of "
                      + ", ".join(a.upper() for a in checksums.ALGORITHMS))
    if kind and not algorithm:
        raise S3Error("InvalidRequest", "x-amz-checksum-type requires x-amz-checksum-algorithm")
    if kind not in ("", "COMPOSITE"):
        raise S3Error("InvalidRequest", f"x-amz-checksum-type {kind} is not supported: multipart uploads get "
                      "COMPOSITE checksums here, as on Ceph Squid")
    return algorithm


def part_number(value: str) -> int:
    """A `partNumber` query argument: 1 to 10,000."""
    if not value.isdigit() or not 1 <= int(value) <= MAX_PARTS:
        raise S3Error("InvalidArgument", "Part number must be an integer between 1 and 10000, inclusive",
                      ArgumentName="partNumber", ArgumentValue=value)
    return int(value)


def _int_arg(q: dict[str, str], name: str, default: int) -> int:
    try:
        return int(q.get(name, default))
    except ValueError:
        raise S3Error("InvalidArgument", f"{name} must be an integer", ArgumentName=name) from None


class Multipart:
    def __init__(self, store: Store) -> None:
        self.store = store

    def _of(self, b: Bucket) -> dict[str, Upload]:
        return self.store.uploads_of(b)

    def _upload(self, b: Bucket, key: str, upload_id: str) -> Upload:
        up = self._of(b).get(upload_id)
        if up is None or up.key != key:
            raise _no_such_upload(upload_id)
        return up

    def dispatch(self, req: Request, user: User, name: str, key: str, q: dict[str, str]) -> Response:
        b = self.store.bucket(user, name)
        m = req.method
        if m == "POST" and "uploads" in q:
            return self.create(b, user, key, req.headers, req.secure)
        upload_id = q.get("uploadId", "")
        if m == "PUT" and "partNumber" in q:
            n = part_number(q["partNumber"])
            up = self._upload(b, key, upload_id)
            if "x-amz-copy-source" in req.headers:
                data, src_etag = copy_object.read_source(self.store, user, req.headers, ranged=True)
                part = self._put_part(b, up, n, data, {}, {})
                cks = el(_checksum_element(up.checksum_algorithm), part.checksum) if part.checksum else ""
                body = s3_xml.document("CopyPartResult", el("LastModified", s3_xml.iso8601(part.mtime))
                                       + el("ETag", f'"{part.etag}"') + cks)
                return _resp(200, body)
            part = self._put_part(b, up, n, req.body, req.headers, req.checksums)
            name = f"x-amz-checksum-{up.checksum_algorithm}"
            computed = [(name, part.checksum)] if part.checksum and name not in req.checksums else []
            return _resp(200, b"", [("ETag", f'"{part.etag}"'), *computed])
        if m == "POST":
            return self.complete(b, key, upload_id, req.body, req.headers)
        if m == "GET":
            return self.list_parts(b, key, upload_id, q)
        if m == "DELETE":
            return self.abort(b, key, upload_id)
        raise S3Error("MethodNotAllowed", f"{m} is not allowed on a multipart upload")

    def create(self, b: Bucket, user: User, key: str, headers: dict[str, str], secure: bool = False) -> Response:
        check_key(key)
        algorithm = _checksum_algorithm(headers)
        # RGW prepares the upload's encryption at initiation; the lock is the object's, once completed
        grants, lock = new_object.admit(b, headers, secure, self.store.wall())
        upload_id = f"2~{secrets.token_urlsafe(24)[:32]}"  # RGW's upload ids look like this
        up = Upload(upload_id, key, user, self.store.wall(), object_attrs(headers),
                    acl=grants, checksum_algorithm=algorithm,
                    tags=tagging.from_header(headers.get("x-amz-tagging", "")),
                    object_owner=ownership.object_owner(b, user, headers), lock=lock)
        self._save(b, up)
        with self.store.lock:
            self._of(b)[upload_id] = up
        body = s3_xml.document("InitiateMultipartUploadResult",
                               el("Bucket", b.name) + el("Key", key) + el("UploadId", upload_id))
        kind = [("x-amz-checksum-algorithm", algorithm.upper()), ("x-amz-checksum-type", "COMPOSITE")]
        return _resp(200, body, kind if algorithm else [])

    def _save(self, b: Bucket, up: Upload) -> None:
        """The upload's `.meta` record (RGW keeps it next to the parts; here in the index pool), from
        which a restarted gateway restores the upload. Written in turn, so the last one has every part."""
        with up.saving:
            with self.store.lock:
                record = {"upload_id": up.upload_id, "key": up.key, "owner": up.owner.id, "initiated": up.initiated,
                          "attrs": up.attrs, "acl": up.acl, "checksum_algorithm": up.checksum_algorithm,
                          "tags": up.tags, "object_owner": up.object_owner, "lock": up.lock,
                          "parts": {n: [p.etag, p.size, p.mtime, p.pieces, p.checksum] for n, p in up.parts.items()}}
            self.store.put(self.store.index_pool, _meta_name(b, up), json.dumps(record).encode())

    def restore(self, b: Bucket, record: dict, owner: User, listed: set[str], name: str) -> bool:
        """Take back an upload from its `.meta` record (restore.py). One whose parts an object
        already lists was completed just before a crash: its record goes, its parts are the object's."""
        parts = {int(n): Part(int(n), etag, size, mtime, [tuple(p) for p in pieces], checksum)
                 for n, (etag, size, mtime, pieces, checksum) in record["parts"].items()}
        if any(piece in listed for p in parts.values() for piece, _ in p.pieces):
            self.store.remove_later([(self.store.index_pool, name)])
            return False
        up = Upload(record["upload_id"], record["key"], owner, record["initiated"], record["attrs"], parts,
                    record["acl"], record["checksum_algorithm"], record["tags"], record.get("object_owner", ""),
                    record.get("lock", {}))
        with self.store.lock:
            self._of(b)[up.upload_id] = up
        return True

    def _put_part(self, b: Bucket, up: Upload, n: int, data: bytes, headers: dict[str, str],
                  sent: dict[str, str]) -> Part:
        """`sent`: the part's x-amz-checksum-* the gateway verified against `data`."""
        if len(data) > MAX_PART:
            raise S3Error("EntityTooLarge", "a part is limited to 5 GiB")
        checksum = _part_checksum(up, data, sent)
        tag = f"{up.upload_id}.{secrets.token_hex(4)}"  # a re-sent part never overwrites the one it replaces
        etag, pieces = self.store.write_data_md5(f"{b.marker}__multipart_{up.key}.{tag}.{n}",
                                              f"{b.marker}__shadow_{up.key}.{tag}.{n}", data, headers)
        part = Part(n, etag, len(data), self.store.wall(), pieces, checksum)
        with self.store.lock:
            if self._of(b).get(up.upload_id) is not up:  # aborted or completed meanwhile
                self.store.free([_as_entry(part)])
                raise _no_such_upload(up.upload_id)
            old = up.parts.get(n)
            up.parts[n] = part
        self._save(b, up)
        if old is not None:
            self.store.free([_as_entry(old)])
        return part

    def complete(self, b: Bucket, key: str, upload_id: str, body: bytes,
                 headers: dict[str, str] | None = None) -> Response:
        """`headers`' If-Match / If-None-Match make it conditional (conditional_write.py): refused, the
        upload stays as it was, to be completed or aborted later."""
        up = self._upload(b, key, upload_id)
        check = conditional_write.precondition(headers or {}, b.name, key)
        doc = s3_xml.parse(body, "CompleteMultipartUpload")
        wanted: list[tuple[int, str, str | None]] = []  # number, ETag, checksum of the upload's algorithm
        algorithm = up.checksum_algorithm
        for p in doc.findall("Part"):
            num, etag = p.findtext("PartNumber"), p.findtext("ETag")
            if num is None or etag is None or not num.strip().isdigit():
                raise S3Error("MalformedXML", "each Part needs a PartNumber and an ETag")
            checksum = p.findtext(_checksum_element(algorithm)) if algorithm else None
            if algorithm and checksum is None:
                raise S3Error("InvalidRequest", f"The upload was created using a {algorithm} checksum. The complete "
                              "request must include the checksum for each part. It was missing for part "
                              f"{num.strip()} in the request.")
            wanted.append((int(num), etag.strip().strip('"'), checksum and checksum.strip()))
        if not wanted:
            raise S3Error("MalformedXML", "the XML you provided was not well-formed or did not validate against "
                          "our published schema: no parts")
        with self.store.lock:
            nums = [n for n, _, _ in wanted]
            if any(a >= c for a, c in zip(nums, nums[1:], strict=False)):
                raise S3Error("InvalidPartOrder", "the list of parts was not in ascending order; parts must be "
                              "ordered by part number", UploadId=upload_id)
            parts = []
            for n, etag, checksum in wanted:
                part = up.parts.get(n)
                if part is None or part.etag != etag or (checksum is not None and part.checksum != checksum):
                    raise S3Error("InvalidPart", "one or more of the specified parts could not be found; the part "
                                  "may not have been uploaded, or the specified entity tag may not match the part's "
                                  "entity tag", UploadId=upload_id, PartNumber=str(n), ETag=etag)
                parts.append(part)
            for part in parts[:-1]:
                if part.size < MIN_PART:
                    raise S3Error("EntityTooSmall", "your proposed upload is smaller than the minimum allowed "
                                  "object size", UploadId=upload_id, PartNumber=str(part.number),
                                  ProposedSize=str(part.size), MinSizeAllowed=str(MIN_PART))
            if check is not None:  # refused before the manifest head is written; again atomically at commit
                check(b.latest(key))
            del self._of(b)[upload_id]  # from here on, no second completion or abort can race this one
        digest = hashlib.md5(b"".join(bytes.fromhex(p.etag) for p in parts)).hexdigest()
        etag = f"{digest}-{len(parts)}"
        composite = _composite(algorithm, parts)
        head = f"{b.marker}__:{self.store.new_tag()}_{key}"
        try:
            self.store.put(self.store.data_pool, head, b"")  # the manifest head: RGW keeps no data in it
            pieces = [(head, 0)] + [piece for p in parts for piece in p.pieces]
            owner = up.object_owner or up.owner.id  # ownership.py decided it at initiation
            entry = ObjectEntry(key, sum(p.size for p in parts), etag, self.store.wall(), owner, pieces,
                                dict(up.attrs), acl=list(up.acl), checksums=composite, tags=dict(up.tags),
                                parts=[p.size for p in parts], part_checksums=[p.checksum for p in parts])
            for k, v in object_lock.with_default(b, up.lock, entry.mtime).items():
                setattr(entry, k, v)
            # the parts stay the upload's until it commits
            vh = self.store.commit(b, entry, owns_data=False, check=check)
        except S3Error as e:
            with self.store.lock:
                self._of(b)[upload_id] = up  # still complete-able or abortable
            if e.code in ("PreconditionFailed", "NoSuchKey"):  # refused before the index write: the head goes
                self.store.remove_later([(self.store.data_pool, head)])
            raise
        named = {p.number for p in parts}
        self.store.free([_as_entry(p) for n, p in up.parts.items() if n not in named])
        self._drop_meta(b, up)
        body = s3_xml.document("CompleteMultipartUploadResult",
                               el("Location", f"/{b.name}/{key}") + el("Bucket", b.name) + el("Key", key)
                               + el("ETag", f'"{etag}"')
                               + "".join(el(_checksum_element(algorithm), v) for k, v in composite.items()
                                         if k != "x-amz-checksum-type")
                               + (el("ChecksumType", "COMPOSITE") if composite else ""))
        return _resp(200, body, vh)

    def _drop_meta(self, b: Bucket, up: Upload) -> None:
        self.store.remove_later([(self.store.index_pool, _meta_name(b, up))])

    def abort(self, b: Bucket, key: str, upload_id: str) -> Response:
        with self.store.lock:
            up = self._upload(b, key, upload_id)
            del self._of(b)[upload_id]
        self.store.free([_as_entry(p) for p in up.parts.values()])
        self._drop_meta(b, up)
        return _resp(204, b"")

    def list_parts(self, b: Bucket, key: str, upload_id: str, q: dict[str, str]) -> Response:
        up = self._upload(b, key, upload_id)
        marker = _int_arg(q, "part-number-marker", 0)
        max_parts = min(_int_arg(q, "max-parts", MAX_LIST), MAX_LIST)
        nums = sorted(n for n in up.parts if n > marker)
        page, truncated = nums[:max_parts], len(nums) > max_parts
        owner = s3_xml.Owner(up.owner.id, up.owner.display_name)
        s = (el("Bucket", b.name) + el("Key", key) + el("UploadId", upload_id)
             + f"<Initiator>{owner.xml()[7:-8]}</Initiator>" + owner.xml() + el("StorageClass", "STANDARD")
             + el("PartNumberMarker", marker) + el("NextPartNumberMarker", page[-1] if page else 0)
             + el("MaxParts", max_parts) + el("IsTruncated", "true" if truncated else "false"))
        for n in page:
            p = up.parts[n]
            s += (f"<Part>{el('PartNumber', n)}{el('LastModified', s3_xml.iso8601(p.mtime))}"
                  f"{el('ETag', chr(34) + p.etag + chr(34))}{el('Size', p.size)}"
                  f"{el(_checksum_element(up.checksum_algorithm), p.checksum) if p.checksum else ''}</Part>")
        if up.checksum_algorithm:
            s += el("ChecksumAlgorithm", up.checksum_algorithm.upper()) + el("ChecksumType", "COMPOSITE")
        return _resp(200, s3_xml.document("ListPartsResult", s))

    def list_uploads(self, b: Bucket, q: dict[str, str]) -> Response:
        prefix, delimiter = q.get("prefix", ""), q.get("delimiter", "")
        key_marker, id_marker = q.get("key-marker", ""), q.get("upload-id-marker", "")
        max_uploads = min(_int_arg(q, "max-uploads", MAX_LIST), MAX_LIST)
        with self.store.lock:
            ups = sorted(self._of(b).values(), key=lambda u: (u.key, u.initiated, u.upload_id))
        items: list[Upload | str] = []
        truncated = False
        for u in ups:
            if not u.key.startswith(prefix):
                continue
            if key_marker and (u.key < key_marker or (u.key == key_marker and (not id_marker
                                                                              or u.upload_id <= id_marker))):
                continue
            if delimiter:
                i = u.key.find(delimiter, len(prefix))
                if i >= 0:
                    cp = u.key[: i + len(delimiter)]
                    if cp not in items:
                        if len(items) >= max_uploads:
                            truncated = True
                            break
                        items.append(cp)
                    continue
            if len(items) >= max_uploads:
                truncated = True
                break
            items.append(u)
        s = (el("Bucket", b.name) + el("KeyMarker", key_marker) + el("UploadIdMarker", id_marker)
             + el("Prefix", prefix) + (el("Delimiter", delimiter) if delimiter else "") + el("MaxUploads", max_uploads)
             + el("IsTruncated", "true" if truncated else "false"))
        last = next((i for i in reversed(items) if isinstance(i, Upload)), None)
        if truncated and last is not None:
            s += el("NextKeyMarker", last.key) + el("NextUploadIdMarker", last.upload_id)
        for i in items:
            if isinstance(i, Upload):
                owner = s3_xml.Owner(i.owner.id, i.owner.display_name)
                s += (f"<Upload>{el('Key', i.key)}{el('UploadId', i.upload_id)}"
                      f"<Initiator>{owner.xml()[7:-8]}</Initiator>{owner.xml()}{el('StorageClass', 'STANDARD')}"
                      f"{el('Initiated', s3_xml.iso8601(i.initiated))}"
                      + (el("ChecksumAlgorithm", i.checksum_algorithm.upper()) if i.checksum_algorithm else "")
                      + "</Upload>")
        s += "".join(f"<CommonPrefixes>{el('Prefix', i)}</CommonPrefixes>" for i in items if isinstance(i, str))
        return _resp(200, s3_xml.document("ListMultipartUploadsResult", s))


def _part_checksum(up: Upload, data: bytes, sent: dict[str, str]) -> str:
    """The part's checksum of the upload's algorithm: the client's (already verified) or computed."""
    algorithm = up.checksum_algorithm
    if not algorithm:
        return ""
    other = [k.removeprefix("x-amz-checksum-") for k in sent if k != f"x-amz-checksum-{algorithm}"]
    if other:
        raise S3Error("InvalidRequest", f"Checksum Type mismatch occurred, expected checksum Type: {algorithm}, "
                      f"actual checksum Type: {other[0]}")
    return sent.get(f"x-amz-checksum-{algorithm}") or checksums.compute(algorithm, data)


def _composite(algorithm: str, parts: list[Part]) -> dict[str, str]:
    """S3's COMPOSITE checksum of a completed upload, as the object's stored checksum headers."""
    if not algorithm:
        return {}
    whole = checksums.ALGORITHMS[algorithm](b"".join(base64.b64decode(p.checksum) for p in parts))
    return {f"x-amz-checksum-{algorithm}": f"{base64.b64encode(whole).decode()}-{len(parts)}",
            "x-amz-checksum-type": "COMPOSITE"}


def _meta_name(b: Bucket, up: Upload) -> str:
    return f"{b.marker}__multipart_{up.key}.{up.upload_id}.meta"


def _as_entry(p: Part) -> ObjectEntry:
    return ObjectEntry("", p.size, p.etag, p.mtime, "", p.pieces, {})


def _resp(status: int, body: bytes, headers: list[tuple[str, str]] | None = None) -> Response:
    hdrs = [("Content-Type", "application/xml")] if body else []
    return Response(status, hdrs + (headers or []), body)
