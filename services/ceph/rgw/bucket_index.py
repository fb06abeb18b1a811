"""A bucket's index as the gateway keeps it in memory: object versions and the sorted key lists that
listings page through, its lifecycle rules, and the multipart uploads in progress. RGW keeps the same
in the omap of `.dir.<marker>` objects in the index pool; the gateway writes one index-pool RADOS
object per entry so the index pool sees the same traffic (store.py writes them)."""

from __future__ import annotations

import bisect
import secrets
import string
import threading
from dataclasses import dataclass, field

from services.ceph.rgw.policy import Policy
from services.ceph.rgw.users import User

# RGW's gen_rand_alphanumeric_no_underscore table: an id may start with "-", so the AWS CLI
# needs `--version-id=ID` for such ids against real RGW too.
ID_CHARS = string.ascii_letters + string.digits + "-."


def new_version_id() -> str:
    """32 characters like RGW's instance ids; sorting them means nothing, the history order does."""
    return "".join(secrets.choice(ID_CHARS) for _ in range(32))


def valid_id(version_id: str) -> bool:
    return version_id == "null" or (len(version_id) == 32 and all(c in ID_CHARS for c in version_id))


def meta_name(tenant: str, bucket: str, attr: str = "") -> str:
    """The index-pool object of a bucket's record, or of one of its attributes (versioning, acl,
    policy). "#" cannot be in a bucket name, so bucket `b.acl`'s record is not bucket `b`'s ACL."""
    return f".bucket.meta.{tenant}:{bucket}" + (f"#{attr}" if attr else "")


@dataclass
class ObjectEntry:
    """One version of an object (or a delete marker): its index entry and where its bytes live."""

    key: str
    size: int
    etag: str  # hex MD5, unquoted; `md5-of-md5s-N` for a multipart upload
    mtime: float
    owner: str
    pieces: list[tuple[str, int]]  # data-pool RADOS objects in order: (name, bytes)
    attrs: dict[str, str]  # kept standard headers and x-amz-meta-*
    version_id: str = "null"
    delete_marker: bool = False
    acl: list[list[str]] = field(default_factory=list)  # grants besides the owner's (acl.py)
    checksums: dict[str, str] = field(default_factory=dict)  # x-amz-checksum-* verified at upload
    tags: dict[str, str] = field(default_factory=dict)  # the version's tag set (tagging.py)
    parts: list[int] = field(default_factory=list)  # a multipart upload's part sizes, in order; [] otherwise
    part_checksums: list[str] = field(default_factory=list)  # the parts' checksums (base64; "" for none), in order
    lock_mode: str = ""  # its retention (object_lock.py): GOVERNANCE or COMPLIANCE, "" for none
    lock_until: float | None = None  # the retention's retain-until date, epoch seconds
    legal_hold: str = ""  # its legal hold: ON, OFF, or "" when none was ever set


@dataclass
class CorsRule:
    """A bucket CORS rule (cors.py parses it and matches requests against it)."""

    methods: list[str]
    origins: list[str]
    headers: list[str] = field(default_factory=list)  # AllowedHeader
    expose: list[str] = field(default_factory=list)  # ExposeHeader
    max_age: int | None = None
    id: str = ""


@dataclass
class Rule:
    """A bucket lifecycle rule: its filter and actions (lifecycle.py parses and applies them)."""

    id: str
    enabled: bool
    prefix: str = ""
    tags: dict[str, str] = field(default_factory=dict)
    size_gt: int | None = None
    size_lt: int | None = None
    days: int | None = None  # Expiration
    date: float | None = None  # Expiration, epoch seconds of a midnight UTC
    expired_marker: bool = False  # Expiration/ExpiredObjectDeleteMarker
    noncurrent_days: int | None = None
    abort_days: int | None = None

    def matches_version(self, e: ObjectEntry) -> bool:
        """A delete marker has no tags or size: the prefix alone decides for it."""
        return e.key.startswith(self.prefix) if e.delete_marker else self.matches(e)

    def matches(self, e: ObjectEntry) -> bool:
        return (e.key.startswith(self.prefix) and all(e.tags.get(k) == v for k, v in self.tags.items())
                and (self.size_gt is None or e.size > self.size_gt)
                and (self.size_lt is None or e.size < self.size_lt))


@dataclass
class Part:
    """One uploaded part of a multipart upload (multipart.py): its data-pool RADOS objects."""

    number: int
    etag: str  # hex MD5
    size: int
    mtime: float
    pieces: list[tuple[str, int]]
    checksum: str = ""  # base64, of the upload's checksum algorithm; "" when the upload has none


@dataclass
class Upload:
    """A multipart upload in progress; its `.meta` record in the index pool lets a restarted gateway resume it."""

    upload_id: str
    key: str
    owner: User
    initiated: float
    attrs: dict[str, str]
    parts: dict[int, Part] = field(default_factory=dict)
    acl: list[list[str]] = field(default_factory=list)  # x-amz-acl of the initiation, the object's ACL
    checksum_algorithm: str = ""  # lower-case x-amz-checksum-algorithm of the initiation, "" for none
    tags: dict[str, str] = field(default_factory=dict)  # x-amz-tagging of the initiation, the object's
    object_owner: str = ""  # who will own the object (ownership.py), decided at initiation; "" for the initiator
    lock: dict[str, object] = field(default_factory=dict)  # object-lock fields of the initiation (object_lock.py)
    saving: threading.Lock = field(default_factory=threading.Lock, repr=False)  # one .meta write at a time


@dataclass
class ObjectLock:
    """A bucket's object lock (object_lock.py): enabled at creation, for good; its default retention,
    if it has a rule: GOVERNANCE or COMPLIANCE, for `days` or `years` (the other one 0)."""

    mode: str = ""  # "" for no rule
    days: int = 0
    years: int = 0


@dataclass
class Bucket:
    """A bucket index: every version of every key (newest first) and, for listings, the current ones.

    `versioning` is "" (never enabled), "Enabled" or "Suspended". Unversioned and suspended writes
    make the "null" version, replacing the previous null version wherever it sits in the history.
    """

    name: str
    tenant: str
    owner: User
    created: float
    marker: str
    versioning: str = ""
    policy: Policy | None = None  # the bucket policy (policy.py), None when it has none
    acl: list[list[str]] = field(default_factory=list)  # grants besides the owner's (acl.py)
    tags: dict[str, str] = field(default_factory=dict)  # the bucket's tag set (tagging.py)
    lifecycle: list[Rule] = field(default_factory=list)  # its lifecycle rules (lifecycle.py)
    public_access: dict[str, bool] | None = None  # its PublicAccessBlock (public_access.py), None: none set
    cors: list[CorsRule] = field(default_factory=list)  # its CORS rules (cors.py)
    ownership: str = ""  # its ObjectOwnership (ownership.py), "" when it has no ownership controls
    encryption: dict[str, object] | None = None  # its default encryption (encryption.py), None: none set
    object_lock: ObjectLock | None = None  # None: created without object lock (object_lock.py)
    objects: dict[str, ObjectEntry] = field(default_factory=dict)  # key → current version, no delete markers
    keys: list[str] = field(default_factory=list)  # sorted keys of `objects`
    versions: dict[str, list[ObjectEntry]] = field(default_factory=dict)  # newest first
    version_keys: list[str] = field(default_factory=list)  # sorted keys of `versions`

    def install(self, e: ObjectEntry) -> list[ObjectEntry]:
        """Make `e` the newest version of its key; returns the versions it displaced (to free)."""
        history = self.versions.get(e.key)
        if history is None:
            history = self.versions[e.key] = []
            bisect.insort(self.version_keys, e.key)
        displaced = []
        if e.version_id == "null":
            displaced = [v for v in history if v.version_id == "null"]
            history[:] = [v for v in history if v.version_id != "null"]
        history.insert(0, e)
        self._refresh(e.key)
        return displaced

    def remove_version(self, key: str, version_id: str) -> ObjectEntry | None:
        history = self.versions.get(key, [])
        for i, v in enumerate(history):
            if v.version_id == version_id:
                del history[i]
                if not history:
                    del self.versions[key]
                    del self.version_keys[bisect.bisect_left(self.version_keys, key)]
                self._refresh(key)
                return v
        return None

    def version(self, key: str, version_id: str) -> ObjectEntry | None:
        return next((v for v in self.versions.get(key, []) if v.version_id == version_id), None)

    def latest(self, key: str) -> ObjectEntry | None:
        history = self.versions.get(key)
        return history[0] if history else None

    def _refresh(self, key: str) -> None:
        latest = self.latest(key)
        if latest is not None and not latest.delete_marker:
            if key not in self.objects:
                bisect.insort(self.keys, key)
            self.objects[key] = latest
        elif self.objects.pop(key, None) is not None:
            del self.keys[bisect.bisect_left(self.keys, key)]
