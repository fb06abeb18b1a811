"""RBD images as librbd lays them out in RADOS, over any object store (`ObjectIo`).

Layout (format 2), all objects in the image's pool:
- `rbd_directory`: name → image id (JSON here; an omap in Ceph);
- `rbd_header.<id>`: size, order, features, snapshots, parent link (JSON);
- `rbd_data.<id>.<objno as 16 hex digits>`: the image's bytes, `2**order` (4 MiB) per object, sparse:
  an object that was never written does not exist and reads as zeros (or from the parent, for a clone).

Snapshots are copy-on-write at object granularity, as RADOS self-managed snapshots are: the first
write to an object after a snapshot first preserves the object's old contents (or its absence) as a
clone object `rbd_data.<id>.<objno>.snap.<seq>`, which serves every snapshot taken since the object's
previous clone. A snapshot read of an object takes the oldest clone at or after the snapshot, else
the head. Removing a snapshot drops the clones no remaining snapshot needs.

Clones (layering): `clone` of a *protected* snapshot makes a child whose header names the parent
image and snapshot and an overlap (the parent snapshot's size). A child object that does not exist
reads the parent snapshot's object (within the overlap); the first write to it copies the parent's
object up, then applies the write. A protected snapshot with children cannot be unprotected; an
image with snapshots cannot be removed (rbd's `snap purge` first), nor one whose snapshots have
children.

Refusals are `CephError`s raised before any change, with rbd's wording.
"""

from __future__ import annotations

import json
import re
import secrets
from dataclasses import dataclass
from typing import Any, Protocol

from services.ceph.errors import CephError

DEFAULT_ORDER = 22  # 4 MiB objects
FEATURES = ["layering", "exclusive-lock", "object-map", "fast-diff", "deep-flatten"]
DIRECTORY = "rbd_directory"
_NAME_RE = re.compile(r"^[^/@\s]{1,255}$")


class ObjectIo(Protocol):
    """Whole-object RADOS I/O on a pool (what librbd asks of librados here)."""

    def check_pool(self, pool: str) -> None: ...          # NOT_FOUND / INVALID_ARGUMENT if it cannot hold RBD
    def put(self, pool: str, name: str, data: bytes) -> None: ...
    def get(self, pool: str, name: str) -> bytes | None: ...   # None: no such object
    def remove(self, pool: str, name: str) -> None: ...
    def list(self, pool: str, prefix: str) -> list[str]: ...
    # Optional batch forms (librbd issues an extent's object I/O in parallel): put_many(pool, [(name,
    # data)]) and get_many(pool, [name]) -> {name: bytes | None}; without them, one object at a time.


def data_name(image_id: str, objno: int) -> str:
    return f"rbd_data.{image_id}.{objno:016x}"


def clone_name(image_id: str, objno: int, seq: int) -> str:
    return f"rbd_data.{image_id}.{objno:016x}.snap.{seq:x}"


def header_name(image_id: str) -> str:
    return f"rbd_header.{image_id}"


@dataclass
class Image:
    pool: str
    h: dict[str, Any]     # the header document

    @property
    def name(self) -> str:
        return str(self.h["name"])

    @property
    def id(self) -> str:
        return str(self.h["id"])

    @property
    def size(self) -> int:
        return int(self.h["size"])

    @property
    def obj_size(self) -> int:
        return 1 << int(self.h["order"])

    def objects(self, size: int | None = None) -> int:
        n = self.size if size is None else size
        return -(-n // self.obj_size)

    @property
    def snaps(self) -> list[dict[str, Any]]:
        return self.h["snaps"]

    def snap(self, name: str) -> dict[str, Any]:
        for s in self.snaps:
            if s["name"] == name:
                return s
        raise CephError("NOT_FOUND", f"snapshot '{name}' does not exist in image '{self.name}'")

    def snap_by_id(self, snap_id: int) -> dict[str, Any]:
        for s in self.snaps:
            if s["id"] == snap_id:
                return s
        raise CephError("NOT_FOUND", f"snapshot id {snap_id} does not exist in image '{self.name}'")

    @property
    def parent(self) -> dict[str, Any] | None:
        return self.h.get("parent")


def parse_spec(spec: str, default_pool: str = "rbd") -> tuple[str, str, str]:
    """`[pool/]image[@snap]` → (pool, image, snap)."""
    pool, _, rest = spec.rpartition("/")
    image, _, snap = rest.partition("@")
    if not image:
        raise CephError("INVALID_ARGUMENT", f"image name was not specified in {spec!r}")
    return pool or default_pool, image, snap


class Rbd:
    """librbd's image operations over `io`; `now()` gives timestamps (the twin's clock)."""

    def __init__(self, io: ObjectIo, now: Any = None) -> None:
        import time
        self.io = io
        self.now = now or time.time

    # -- metadata -------------------------------------------------------------------------------

    def _directory(self, pool: str) -> dict[str, str]:
        raw = self.io.get(pool, DIRECTORY)
        return json.loads(raw) if raw else {}

    def _save_directory(self, pool: str, d: dict[str, str]) -> None:
        self.io.put(pool, DIRECTORY, json.dumps(d, sort_keys=True).encode())

    def open(self, pool: str, name: str) -> Image:
        self.io.check_pool(pool)
        image_id = self._directory(pool).get(name)
        if image_id is None:
            raise CephError("NOT_FOUND", f"error opening image {name}: (2) No such file or directory")
        return self._open_id(pool, image_id)

    def _open_id(self, pool: str, image_id: str) -> Image:
        raw = self.io.get(pool, header_name(image_id))
        if raw is None:
            raise CephError("NOT_FOUND", f"image id {image_id} has no header in pool {pool}")
        return Image(pool, json.loads(raw))

    def _save(self, img: Image) -> None:
        self.io.put(img.pool, header_name(img.id), json.dumps(img.h, sort_keys=True).encode())

    def list(self, pool: str) -> list[str]:
        self.io.check_pool(pool)
        return sorted(self._directory(pool))

    # -- image lifecycle ------------------------------------------------------------------------

    def create(self, pool: str, name: str, size: int, order: int = DEFAULT_ORDER,
               parent: dict[str, Any] | None = None) -> Image:
        self.io.check_pool(pool)
        if not _NAME_RE.match(name):
            raise CephError("INVALID_ARGUMENT", f"invalid image name {name!r}")
        if size < 0:
            raise CephError("INVALID_ARGUMENT", f"size must be >= 0, got {size}")
        if not 12 <= order <= 25:
            raise CephError("INVALID_ARGUMENT", f"order must be in 12..25, got {order}")
        d = self._directory(pool)
        if name in d:
            raise CephError("ALREADY_EXISTS", f"create error: (17) File exists: image {name} already exists")
        now = self.now()
        image_id = secrets.token_hex(6)
        h = {"name": name, "id": image_id, "size": size, "order": order, "features": FEATURES,
             "created": now, "modified": now, "snap_seq": 0, "snaps": [], "parent": parent, "cow": {}, "clones": {}}
        img = Image(pool, h)
        self._save(img)
        d[name] = image_id
        self._save_directory(pool, d)
        return img

    def remove(self, pool: str, name: str) -> None:
        img = self.open(pool, name)
        if any(s["children"] for s in img.snaps):
            raise CephError("FAILED_PRECONDITION", "image has snapshots with linked clones - these must be "
                                                   "deleted or flattened before the image can be removed.")
        if img.snaps:
            raise CephError("FAILED_PRECONDITION", "image has snapshots - these must be deleted with 'rbd snap "
                                                   "purge' before the image can be removed.")
        for obj in self.io.list(pool, f"rbd_data.{img.id}."):
            self.io.remove(pool, obj)
        if img.parent:
            self._unlink_child(img)
        self.io.remove(pool, header_name(img.id))
        d = self._directory(pool)
        d.pop(name, None)
        self._save_directory(pool, d)

    def resize(self, pool: str, name: str, size: int, allow_shrink: bool = False) -> Image:
        img = self.open(pool, name)
        if size < 0:
            raise CephError("INVALID_ARGUMENT", f"size must be >= 0, got {size}")
        if size < img.size and not allow_shrink:
            raise CephError("INVALID_ARGUMENT", "shrinking an image is only allowed with the --allow-shrink flag")
        if size < img.size:
            first_gone = img.objects(size)
            for objno in range(first_gone, img.objects()):
                if self.io.get(pool, data_name(img.id, objno)) is not None or self._needs_cow(img, objno):
                    self._cow(img, objno)
                    self.io.remove(pool, data_name(img.id, objno))
            if size % img.obj_size:
                objno = size // img.obj_size
                cur = self.io.get(pool, data_name(img.id, objno))
                keep = size - objno * img.obj_size
                if cur is not None and len(cur) > keep:
                    self._cow(img, objno)
                    self.io.put(pool, data_name(img.id, objno), cur[:keep])
            if img.parent:
                img.h["parent"]["overlap"] = min(int(img.parent["overlap"]), size)
        img.h["size"] = size
        img.h["modified"] = self.now()
        self._save(img)
        return img

    # -- snapshots ------------------------------------------------------------------------------

    def snap_create(self, pool: str, name: str, snap: str) -> dict[str, Any]:
        img = self.open(pool, name)
        if not snap or not _NAME_RE.match(snap):
            raise CephError("INVALID_ARGUMENT", f"invalid snapshot name {snap!r}")
        if any(s["name"] == snap for s in img.snaps):
            raise CephError("ALREADY_EXISTS", f"failed to create snapshot: (17) File exists: {snap}")
        img.h["snap_seq"] += 1
        s = {"id": img.h["snap_seq"], "name": snap, "size": img.size, "protected": False, "timestamp": self.now(),
             "children": [], "overlap": int(img.parent["overlap"]) if img.parent else 0}
        img.snaps.append(s)
        self._save(img)
        return s

    def snap_list(self, pool: str, name: str) -> list[dict[str, Any]]:
        return list(self.open(pool, name).snaps)

    def snap_protect(self, pool: str, name: str, snap: str) -> dict[str, Any]:
        img = self.open(pool, name)
        s = img.snap(snap)
        if s["protected"]:
            raise CephError("FAILED_PRECONDITION", "protecting snap failed: (16) Device or resource busy: "
                                                   f"snap {snap} is already protected")
        s["protected"] = True
        self._save(img)
        return s

    def snap_unprotect(self, pool: str, name: str, snap: str) -> dict[str, Any]:
        img = self.open(pool, name)
        s = img.snap(snap)
        if not s["protected"]:
            raise CephError("INVALID_ARGUMENT", f"unprotecting snap failed: (22) Invalid argument: snap {snap} "
                                                "is already unprotected")
        if s["children"]:
            kids = ", ".join(f"{p}/{i}" for p, i in s["children"])
            raise CephError("FAILED_PRECONDITION", f"unprotecting snap failed: (16) Device or resource busy: "
                                                   f"cannot unprotect: at least {len(s['children'])} child(ren) "
                                                   f"[{kids}]")
        s["protected"] = False
        self._save(img)
        return s

    def snap_remove(self, pool: str, name: str, snap: str) -> None:
        img = self.open(pool, name)
        s = img.snap(snap)
        if s["protected"]:
            raise CephError("FAILED_PRECONDITION", f"snapshot '{snap}' is protected from removal.")
        img.h["snaps"] = [x for x in img.snaps if x["id"] != s["id"]]
        live = [x["id"] for x in img.snaps]
        for key, clones in list(img.h["clones"].items()):
            objno, prev, keep = int(key), 0, []
            for seq, exists in clones:
                if any(prev < i <= seq for i in live):
                    keep.append([seq, exists])
                elif exists:
                    self.io.remove(pool, clone_name(img.id, objno, seq))
                prev = seq
            if keep:
                img.h["clones"][key] = keep
            else:
                del img.h["clones"][key]
        self._save(img)

    def snap_rollback(self, pool: str, name: str, snap: str) -> Image:
        img = self.open(pool, name)
        s = img.snap(snap)
        objnos = {int(k) for k in img.h["clones"]}
        objnos |= {_objno(n) for n in self.io.list(pool, f"rbd_data.{img.id}.") if ".snap." not in n}
        for objno in sorted(objnos):
            want = self._snap_object(img, objno, s["id"])
            cur = self.io.get(pool, data_name(img.id, objno))
            if want == cur:
                continue
            self._cow(img, objno)
            if want is None:
                self.io.remove(pool, data_name(img.id, objno))
            else:
                self.io.put(pool, data_name(img.id, objno), want)
        img.h["size"] = s["size"]
        if img.parent:
            img.h["parent"]["overlap"] = s["overlap"]
        img.h["modified"] = self.now()
        self._save(img)
        return img

    # -- clones ---------------------------------------------------------------------------------

    def clone(self, parent_pool: str, parent: str, snap: str, pool: str, name: str) -> Image:
        p = self.open(parent_pool, parent)
        s = p.snap(snap)
        if not s["protected"]:
            raise CephError("INVALID_ARGUMENT", f"clone error: (22) Invalid argument: parent snapshot "
                                                f"{parent}@{snap} must be protected")
        self.io.check_pool(pool)
        if name in self._directory(pool):
            raise CephError("ALREADY_EXISTS", f"clone error: (17) File exists: image {name} already exists")
        child = self.create(pool, name, s["size"], int(p.h["order"]),
                            parent={"pool": parent_pool, "image_id": p.id, "image": p.name, "snap_id": s["id"],
                                    "snap": s["name"], "overlap": s["size"]})
        s["children"].append([pool, child.id])
        self._save(p)
        return child

    def _unlink_child(self, child: Image) -> None:
        par = child.parent
        assert par is not None
        try:
            p = self._open_id(par["pool"], par["image_id"])
        except CephError:
            return
        for s in p.snaps:
            if s["id"] == par["snap_id"]:
                s["children"] = [c for c in s["children"] if c != [child.pool, child.id]]
        self._save(p)

    # -- block I/O ------------------------------------------------------------------------------

    def write(self, pool: str, name: str, offset: int, data: bytes) -> int:
        img = self.open(pool, name)
        end = offset + len(data)
        if offset < 0 or end > img.size:
            raise CephError("INVALID_ARGUMENT", f"write of {len(data)} bytes at {offset} is beyond the end of "
                                                f"image {name} ({img.size} bytes)")
        osz = img.obj_size
        mv = memoryview(data)
        # Preserve what the snapshots need and record it before any head object changes (crash-safe).
        cowed = [self._cow(img, objno, save=False) for objno in range(offset // osz, -(-end // osz))]
        if any(cowed):
            self._save(img)
        extents = []
        pos = offset
        while pos < end:
            objno, off = divmod(pos, osz)
            n = min(osz - off, end - pos)
            extents.append((objno, off, n, pos - offset, min(osz, img.size - objno * osz)))
            pos += n
        partial = [data_name(img.id, o) for o, off, n, _, obj_len in extents if not (off == 0 and n == obj_len)]
        bases = self._get_many(pool, partial)
        writes = []
        for objno, off, n, at, obj_len in extents:
            piece = mv[at: at + n]
            if off == 0 and n == obj_len:
                new = bytes(piece)
            else:
                base = bases[data_name(img.id, objno)]
                if base is None:
                    base = self._parent_object(img, objno, obj_len) or b""
                buf = bytearray(base)
                if len(buf) < off + n:
                    buf.extend(bytes(off + n - len(buf)))
                buf[off: off + n] = piece
                new = bytes(buf)
            writes.append((data_name(img.id, objno), new))
        put_many = getattr(self.io, "put_many", None)
        if put_many is not None:
            put_many(pool, writes)
        else:
            for obj, new in writes:
                self.io.put(pool, obj, new)
        return len(data)

    def _get_many(self, pool: str, names: list[str]) -> dict[str, bytes | None]:
        get_many = getattr(self.io, "get_many", None)
        if get_many is not None and names:
            return get_many(pool, names)
        return {n: self.io.get(pool, n) for n in names}

    def read(self, pool: str, name: str, offset: int, length: int, snap: str = "") -> bytes:
        img = self.open(pool, name)
        snap_id = img.snap(snap)["id"] if snap else None
        size = img.snap_by_id(snap_id)["size"] if snap_id else img.size
        if offset < 0 or offset > size:
            raise CephError("INVALID_ARGUMENT", f"read at {offset} is beyond the end of image {name} ({size} bytes)")
        end = min(size, offset + length)
        osz = img.obj_size
        out = bytearray()
        heads = {} if snap_id is not None or end <= offset else \
            self._get_many(pool, [data_name(img.id, o) for o in range(offset // osz, -(-end // osz))])
        pos = offset
        while pos < end:
            objno, off = divmod(pos, osz)
            n = min(osz - off, end - pos)
            obj = self._view(img, objno, snap_id, min(osz, size - objno * osz), heads)
            out += obj[off: off + n]
            pos += n
        return bytes(out)

    def info(self, pool: str, name: str) -> dict[str, Any]:
        img = self.open(pool, name)
        return {"name": img.name, "id": img.id, "pool": pool, "size": img.size, "order": int(img.h["order"]),
                "objects": img.objects(), "snapshot_count": len(img.snaps), "features": list(img.h["features"]),
                "created": img.h["created"], "modified": img.h["modified"], "parent": img.parent}

    # -- object views ---------------------------------------------------------------------------

    def _view(self, img: Image, objno: int, snap_id: int | None, obj_len: int,
              heads: dict[str, bytes | None] | None = None) -> bytes:
        """The object's bytes as the image (or its snapshot) shows them, `obj_len` long."""
        name = data_name(img.id, objno)
        if snap_id is not None:
            data = self._snap_object(img, objno, snap_id)
        elif heads is not None and name in heads:
            data = heads[name]
        else:
            data = self.io.get(img.pool, name)
        if data is None:
            overlap = None if snap_id is None else img.snap_by_id(snap_id)["overlap"]
            data = self._parent_object(img, objno, obj_len, overlap) or b""
        if len(data) < obj_len:
            data = data + bytes(obj_len - len(data))
        return data[:obj_len]

    def _parent_object(self, img: Image, objno: int, obj_len: int, overlap: int | None = None) -> bytes | None:
        par = img.parent
        if not par:
            return None
        limit = int(par["overlap"]) if overlap is None else overlap
        start = objno * img.obj_size
        if start >= limit:
            return None
        p = self._open_id(par["pool"], par["image_id"])
        data = self._view(p, objno, int(par["snap_id"]), min(obj_len, limit - start))
        return data

    def _snap_object(self, img: Image, objno: int, snap_id: int) -> bytes | None:
        for seq, exists in img.h["clones"].get(str(objno), []):
            if seq >= snap_id:
                return self.io.get(img.pool, clone_name(img.id, objno, seq)) if exists else None
        return self.io.get(img.pool, data_name(img.id, objno))

    def _needs_cow(self, img: Image, objno: int) -> bool:
        last = int(img.h["cow"].get(str(objno), 0))
        return any(s["id"] > last for s in img.snaps)

    def _cow(self, img: Image, objno: int, save: bool = True) -> bool:
        """Before changing the head object: preserve it for the snapshots taken since its last clone."""
        if not self._needs_cow(img, objno):
            return False
        seq = int(img.h["snap_seq"])
        cur = self.io.get(img.pool, data_name(img.id, objno))
        if cur is not None:
            self.io.put(img.pool, clone_name(img.id, objno, seq), cur)
        img.h["clones"].setdefault(str(objno), []).append([seq, cur is not None])
        img.h["cow"][str(objno)] = seq
        if save:
            self._save(img)
        return True


def _objno(name: str) -> int:
    return int(name.split(".")[2], 16)
