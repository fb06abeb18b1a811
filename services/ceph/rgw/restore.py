"""A restarted gateway's state, read back from the index pool: buckets with their configurations
(versioning, ACL, policy, ownership controls, encryption, ...), every object version, and the multipart
uploads still in progress. RGW keeps all of it in RADOS and holds none of it across a restart; so does
the twin's gateway.
"""

from __future__ import annotations

import json
from typing import Any, Protocol

from services.ceph.rgw import cors, lifecycle, multipart, object_lock, policy
from services.ceph.rgw.bucket_index import Bucket, ObjectEntry
from services.ceph.rgw.store import Store
from services.ceph.rgw.users import User


class IndexReader(Protocol):
    def get(self, pool: str, name: str) -> bytes: ...
    def list_objects(self, pool: str, prefix: str) -> list[Any]: ...  # each with a .name


class _Owners(Protocol):
    def by_id(self, user_id: str) -> User | None: ...


def _owner(users: _Owners, user_id: str) -> User:
    """The user, or a stand-in with the id alone (a user removed since keeps owning what it made)."""
    found = users.by_id(user_id)
    if found is not None:
        return found
    tenant, _, uid = user_id.rpartition("$")
    return User(uid, uid, "", "", tenant)


def restore(store: Store, cluster: IndexReader, users: _Owners) -> tuple[int, int]:
    """Fill `store` from the index pool; returns (object versions, multipart uploads) restored."""
    pool = store.index_pool
    uploading = multipart.Multipart(store)
    records: list[str] = []
    attrs: dict[str, dict[str, bytes]] = {}  # bucket record name → attribute → value
    for m in cluster.list_objects(pool, ".bucket.meta."):
        record, _, attr = m.name.partition("#")
        if attr:
            attrs.setdefault(record, {})[attr] = cluster.get(pool, m.name)
        else:
            records.append(m.name)
    versions = uploads = 0
    for name in records:
        rec = json.loads(cluster.get(pool, name))
        b = Bucket(rec["name"], rec["tenant"], _owner(users, rec["owner"]), rec["created"], rec["marker"])
        have = attrs.get(name, {})
        b.versioning = have.get("versioning", b"").decode()
        b.acl = json.loads(have["acl"]) if "acl" in have else []
        b.policy = policy.parse(have["policy"], b.name, b.tenant) if "policy" in have else None
        b.tags = json.loads(have["tagging"]) if "tagging" in have else {}
        b.lifecycle = lifecycle.parse(have["lifecycle"]) if "lifecycle" in have else []
        b.cors = cors.from_json(have["cors"]) if "cors" in have else []
        b.public_access = json.loads(have["public_access"]) if "public_access" in have else None
        b.ownership = have.get("ownership", b"").decode()
        b.encryption = json.loads(have["encryption"]) if "encryption" in have else None
        b.object_lock = object_lock.from_json(have["object_lock"]) if "object_lock" in have else None
        entries = []
        for row in cluster.list_objects(pool, f".dir.{b.marker}."):
            d = json.loads(cluster.get(pool, row.name))
            d["pieces"] = [tuple(p) for p in d["pieces"]]
            entries.append(ObjectEntry(**d))
        for e in sorted(entries, key=lambda e: e.mtime):
            b.install(e)
        store.buckets[(b.tenant, b.name)] = b
        versions += len(entries)
        listed = {piece for e in entries for piece, _ in e.pieces}
        for row in cluster.list_objects(pool, f"{b.marker}__multipart_"):
            if row.name.endswith(".meta"):
                up = json.loads(cluster.get(pool, row.name))
                uploads += uploading.restore(b, up, _owner(users, up["owner"]), listed, row.name)
    return versions, uploads
