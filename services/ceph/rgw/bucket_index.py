"""A bucket's index as the gateway keeps it in memory: object versions and the sorted key lists that
listings page through. RGW keeps the same in the omap of `.dir.<marker>` objects in the index pool;
the gateway writes one index-pool RADOS object per entry so the index pool sees the same traffic."""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from services.ceph.rgw.policy import Policy
from services.ceph.rgw.users import User

if TYPE_CHECKING:
    from services.ceph.rgw.lifecycle import Rule


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
