"""The MDS's durable namespace: the pure model (services.lustre.namespace) plus its SQLAlchemy store.

Every mutation is applied to the model (which validates it whole first) and then the inodes it
touched are written in one transaction before the caller is answered, so a restarted MDS (or the
standby of an HA pair, which shares the MDT's store as Lustre failover pairs share the MDT's
disk) comes back with every acknowledged change. Rows: one per inode (its parent and name, its
attributes, layout, directory default and user xattrs), one per further name of a hard-linked file
(`lustre_links`), one per inode that is not a regular file or directory (`lustre_node_types`: its
type, a symlink's body, a device's number), and one `meta` row per filesystem with the counters
(FIDs, inode numbers, per-OST object ids, the allocator's round-robin state).
"""

from __future__ import annotations

import base64
import stat as st
import threading
from dataclasses import dataclass
from typing import Any

from sqlalchemy import JSON, BigInteger, Boolean, Engine, Integer, String, bindparam, delete, insert, select, update
from sqlalchemy.orm import Mapped, Session, mapped_column

from emulator.store import Base, Prepared, Writer, create_tables, make_engine, upserts
from services.lustre import xattrs
from services.lustre.errors import LustreError
from services.lustre.fid import SEQ_WIDTH, Fid
from services.lustre.layout import Layout, StripeObject, StripeSpec
from services.lustre.namespace import FID_DIR, Cred, Inode, Namespace, R, split
from services.lustre.ost import MdtState, OstState

RESERVE = 1024   # FIDs, inode numbers and OST object ids stored ahead of use (DurableNamespace._reserved)


def reserve(counter: int) -> int:
    """`counter` (the next value to hand out) rounded up to a multiple of RESERVE."""
    return -(-counter // RESERVE) * RESERVE


class InodeRow(Base):
    __tablename__ = "lustre_inodes"
    fsname: Mapped[str] = mapped_column(String(16), primary_key=True)
    ino: Mapped[int] = mapped_column(Integer, primary_key=True)
    parent: Mapped[int] = mapped_column(Integer)        # 0 for the root
    name: Mapped[str] = mapped_column(String(255))
    fid: Mapped[str] = mapped_column(String(64))
    is_dir: Mapped[bool] = mapped_column(Boolean)
    mode: Mapped[int] = mapped_column(Integer)
    uid: Mapped[int] = mapped_column(Integer)
    gid: Mapped[int] = mapped_column(Integer)
    atime_ns: Mapped[int] = mapped_column(BigInteger)   # nanoseconds, kept whole (a double holds ~240 ns)
    mtime_ns: Mapped[int] = mapped_column(BigInteger)
    ctime_ns: Mapped[int] = mapped_column(BigInteger)
    size: Mapped[int] = mapped_column(Integer)
    nlink: Mapped[int] = mapped_column(Integer)
    layout: Mapped[Any] = mapped_column(JSON, nullable=True)
    default_spec: Mapped[Any] = mapped_column(JSON, nullable=True)
    xattrs: Mapped[Any] = mapped_column(JSON, nullable=True)


class LinkRow(Base):
    """A hard-linked file's names after its first (which its InodeRow holds)."""

    __tablename__ = "lustre_links"
    fsname: Mapped[str] = mapped_column(String(16), primary_key=True)
    ino: Mapped[int] = mapped_column(Integer, primary_key=True)
    parent: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(255), primary_key=True)


class NodeTypeRow(Base):
    """The type of an inode that is neither a regular file nor a directory (symlink, FIFO, socket, device)."""

    __tablename__ = "lustre_node_types"
    fsname: Mapped[str] = mapped_column(String(16), primary_key=True)
    ino: Mapped[int] = mapped_column(Integer, primary_key=True)
    kind: Mapped[int] = mapped_column(Integer)   # S_IFLNK, S_IFIFO, S_IFSOCK, S_IFCHR, S_IFBLK
    target: Mapped[str] = mapped_column(String(4096))
    rdev: Mapped[int] = mapped_column(Integer)


class MetaRow(Base):
    __tablename__ = "lustre_meta"
    fsname: Mapped[str] = mapped_column(String(16), primary_key=True)
    doc: Mapped[Any] = mapped_column(JSON)


class Statements:
    """The store's writes, built once for the store's dialect: a statement's construction and cache-key
    walk cost more than running it (DurableNamespace._save)."""

    def __init__(self, engine: Engine) -> None:
        def by_ino(table: Any) -> Prepared:
            return Prepared(engine, delete(table).where(table.c.fsname == bindparam("fs"),
                                                        table.c.ino == bindparam("i")))
        it, lt, tt, mt = InodeRow.__table__, LinkRow.__table__, NodeTypeRow.__table__, MetaRow.__table__
        self.delete_inode, self.delete_links, self.delete_type = by_ino(it), by_ino(lt), by_ino(tt)
        # a changed inode's row in one statement
        self.upsert_inode = Prepared(engine, upserts(engine.dialect.name, [InodeRow])[InodeRow])
        self.insert_link, self.insert_type, self.insert_meta = insert(lt), insert(tt), insert(mt)
        self.delete_meta = delete(mt).where(mt.c.fsname == bindparam("fs"))
        self.update_meta = update(mt).where(mt.c.fsname == bindparam("fs")).values(doc=bindparam("d"))


def layout_doc(layout: Layout | None) -> Any:
    if layout is None:
        return None
    return {"stripe_size": layout.stripe_size, "gen": layout.gen, "pattern": layout.pattern,
            "objects": [[o.ost, o.objid, o.seq] for o in layout.objects]}


def layout_from_doc(doc: Any) -> Layout | None:
    if not doc:
        return None
    return Layout(doc["stripe_size"], tuple(StripeObject(*o) for o in doc["objects"]), doc["gen"], doc["pattern"])


@dataclass
class Entry:
    parent: int
    name: str


class DurableNamespace:
    """The namespace of one filesystem, every change committed to the store before it returns.

    Thread-safe: one lock serialises requests (the MDT's transactions), as the daemon's gRPC threads
    call it concurrently."""

    def __init__(self, url: str, fsname: str, osts: list[OstState], mdt: MdtState, now: int) -> None:
        self.engine = make_engine(url)
        create_tables(self.engine, [InodeRow, LinkRow, NodeTypeRow, MetaRow])
        self.sql = Statements(self.engine)
        self.writer = Writer(self.engine)
        self.fsname = fsname
        self.lock = threading.RLock()
        self.ns = Namespace(fsname, osts, now, mdt=mdt)
        self.where: dict[int, list[Entry]] = {1: [Entry(0, "")]}   # every name of each inode, first: its row's
        self._linked: set[int] = set()   # inodes with LinkRows stored
        self._typed: set[int] = set()    # inodes with a NodeTypeRow stored
        self.xattrs: dict[int, dict[str, bytes]] = {}
        self._saved_key: tuple | None = None   # the reserved counters in the stored row (None: no row yet)
        self.versions: dict[int, int] = {}   # ino -> changes saved (a directory's: its entries changed)
        if not self._load():
            self._save([self.ns.root], [])

    # ---- persistence -------------------------------------------------------------------------
    def _reserved(self) -> tuple:
        """The counters as stored: each reserved up to the next multiple of RESERVE, as Lustre's MDT takes
        FIDs and precreated OST objects in ranges, so this moves (and the row is written) once per RESERVE
        creates; the row itself (`_meta`) is built only then. A restart or failover goes on from the
        reservations, leaving a gap, and takes the round-robin allocator's position as it was last stored."""
        ns = self.ns
        return (ns.fids.seq, min(reserve(ns.fids.next_oid), SEQ_WIDTH + 1), reserve(ns._next_ino),
                tuple((k, reserve(v)) for k, v in ns.next_objid.items()))

    def _meta(self, reserved: tuple) -> dict[str, Any]:
        """The counters' row for `reserved` (`_reserved`), with the allocator's position."""
        seq, fid_next, next_ino, objids = reserved
        alloc = self.ns.allocator
        return {"fid_seq": seq, "fid_next": fid_next, "next_ino": next_ino,
                "next_objid": {str(k): v for k, v in objids}, "rr_cursor": alloc.rr_cursor,
                "credits": {str(k): v for k, v in alloc.credits.items()}}

    def _row(self, n: Inode) -> dict[str, Any]:
        e = self.where[n.ino][0]
        spec = n.default_spec
        xs = self.xattrs.get(n.ino)
        return dict(fsname=self.fsname, ino=n.ino, parent=e.parent, name=e.name, fid=str(n.fid), is_dir=n.is_dir,
                    mode=n.mode, uid=n.uid, gid=n.gid, atime_ns=n.atime, mtime_ns=n.mtime, ctime_ns=n.ctime,
                    size=n.size,
                    nlink=n.nlink, layout=layout_doc(n.layout),
                    default_spec=[spec.count, spec.size, spec.index] if spec else None,
                    xattrs={k: base64.b64encode(v).decode() for k, v in xs.items()} if xs else None)

    def _save(self, upsert: list[Inode], removed: list[int]) -> None:
        """One transaction: the touched inodes' rows replaced (upserted), removed ones deleted, the
        counters written when they changed. SQLAlchemy Core statements built once (Statements) and run
        with parameter lists: building them per call cost more than the transaction itself."""
        fs = self.fsname
        rows = {n.ino: self._row(n) for n in upsert if n.ino in self.where}   # not orphans: they have no row
        for ino in rows:
            self.versions[ino] = self.versions.get(ino, 0) + 1
        key = self._reserved()
        gone = set(removed) - set(rows)
        relink = {i for i in gone | set(rows) if i in self._linked or len(self.where.get(i, ())) > 1}
        links = [dict(fsname=fs, ino=i, parent=e.parent, name=e.name)
                 for i in relink for e in self.where.get(i, [])[1:]]
        untyped = set(removed) & self._typed
        typed = [dict(fsname=fs, ino=n.ino, kind=n.kind, target=n.target, rdev=n.rdev) for n in upsert
                 if not n.is_dir and n.kind != st.S_IFREG and n.ino not in self._typed]
        sql = self.sql
        with self.writer.transaction() as conn:
            for prepared, inos in ((sql.delete_inode, gone), (sql.delete_links, relink), (sql.delete_type, untyped)):
                if inos:
                    prepared.execute(conn, [{"fs": fs, "i": i} for i in inos])
            if rows:
                sql.upsert_inode.execute(conn, list(rows.values()))
            for stmt, new in ((sql.insert_link, links), (sql.insert_type, typed)):
                if new:
                    conn.execute(stmt, new)
            if key != self._saved_key:
                if self._saved_key is None:
                    conn.execute(sql.delete_meta, {"fs": fs})
                    conn.execute(sql.insert_meta, [{"fsname": fs, "doc": self._meta(key)}])
                else:
                    conn.execute(sql.update_meta, {"fs": fs, "d": self._meta(key)})
        self._saved_key = key
        self._linked = (self._linked - relink) | {r["ino"] for r in links}
        self._typed = (self._typed - untyped) | {r["ino"] for r in typed}

    def _load(self) -> bool:
        with Session(self.engine) as s:
            meta = s.get(MetaRow, self.fsname)
            if meta is None:
                return False
            rows = s.scalars(select(InodeRow).where(InodeRow.fsname == self.fsname)).all()
            links = s.scalars(select(LinkRow).where(LinkRow.fsname == self.fsname)).all()
            types = s.scalars(select(NodeTypeRow).where(NodeTypeRow.fsname == self.fsname)).all()
        ns = self.ns
        m = meta.doc
        ns.fids.seq, ns.fids.next_oid, ns._next_ino = m["fid_seq"], m["fid_next"], m["next_ino"]
        for k, v in m["next_objid"].items():
            if int(k) in ns.next_objid:
                ns.next_objid[int(k)] = v
        ns.allocator.rr_cursor = m["rr_cursor"]
        ns.allocator.credits = {int(k): v for k, v in m["credits"].items()}
        self._saved_key = self._reserved()   # the row's reservations (a row of exact counters: written again once)
        nodes: dict[int, Inode] = {}
        for r in rows:
            node = ns.root if r.ino == 1 else Inode(Fid.parse(r.fid), r.ino, r.is_dir, r.mode, r.uid, r.gid,
                                                    r.ctime_ns, r.mtime_ns, r.atime_ns)
            node.mode, node.uid, node.gid = r.mode, r.uid, r.gid
            node.atime, node.mtime, node.ctime = r.atime_ns, r.mtime_ns, r.ctime_ns
            node.size, node.nlink = r.size, r.nlink
            node.layout = layout_from_doc(r.layout)
            node.default_spec = StripeSpec(*r.default_spec) if r.default_spec else None
            nodes[r.ino] = node
            self.where[r.ino] = [Entry(r.parent, r.name)]
            if r.xattrs:
                self.xattrs[r.ino] = {k: base64.b64decode(v) for k, v in r.xattrs.items()}
        for link in links:
            if link.ino in nodes:
                self.where[link.ino].append(Entry(link.parent, link.name))
                self._linked.add(link.ino)
        for t in types:
            node = nodes.get(t.ino)
            if node is not None:
                node.kind, node.target, node.rdev = t.kind, t.target, t.rdev
                self._typed.add(t.ino)
        for ino, node in nodes.items():
            if ino == 1:
                continue
            for e in self.where[ino]:
                parent = nodes.get(e.parent)
                if parent is not None:
                    parent.children[e.name] = node
            ns.by_fid[node.fid] = node
            ns.mdt.take_inode()
        return True

    # ---- helpers -----------------------------------------------------------------------------
    def _parent_of(self, path: str, cred: Cred) -> Inode:
        return self.ns.lookup("/" + "/".join(split(path)[:-1]), cred)

    def _place(self, node: Inode, parent: Inode, path: str) -> None:
        """A new name of `node` (its first, or a hard link's)."""
        self.where.setdefault(node.ino, []).append(Entry(parent.ino, split(path)[-1]))

    def _unplace(self, node: Inode, parent: Inode, path: str) -> bool:
        """One name of `node` gone; True when it was its last (the inode is gone too)."""
        names = self.where.get(node.ino, [])
        e = Entry(parent.ino, split(path)[-1])
        if e in names:
            names.remove(e)
        if names:
            return False
        self._forget(node)
        return True

    def _forget(self, node: Inode) -> None:
        self.where.pop(node.ino, None)
        self.xattrs.pop(node.ino, None)

    # ---- reads -------------------------------------------------------------------------------
    def lookup(self, path: str, cred: Cred) -> Inode:
        with self.lock:
            return self.ns.lookup(path, cred)

    def directory(self, path: str, cred: Cred) -> Inode:
        """The directory `path`, which the caller may list (Readdir's checks, without listing it)."""
        with self.lock:
            d = self.ns.lookup(path, cred)
            if not d.is_dir:
                raise LustreError("ENOTDIR", f"{path} is not a directory")
            self.ns._check(d, R, cred, path)
            return d

    def readdir(self, path: str, cred: Cred) -> list[tuple[str, Inode]]:
        with self.lock:
            d = self.ns.lookup(path, cred)
            names = self.ns.readdir(path, cred)
            return [(n, d.children[n]) for n in names]

    # ---- mutations ---------------------------------------------------------------------------
    def create(self, path: str, now: int, mode: int, cred: Cred, spec: StripeSpec | None,
               delay_layout: bool = False, exclusive: bool = False) -> Inode:
        with self.lock:
            try:
                existing = self.ns.find(path, cred)
            except LustreError as e:   # a FID path that names nothing
                if e.name != "ENOENT":
                    raise
                existing = path
            if not isinstance(existing, str):
                if exclusive:
                    raise LustreError("EEXIST", f"{path} already exists")
                if existing.is_dir:
                    raise LustreError("EISDIR", f"{path} is a directory")
                return existing
            node = self.ns.create(path, now, mode, cred, spec, delay_layout)
            parent = self._parent_of(path, cred)
            self._place(node, parent, path)
            self._save([node, parent], [])
            return node

    def mkdir(self, path: str, now: int, mode: int, cred: Cred, spec: StripeSpec | None) -> Inode:
        with self.lock:
            node = self.ns.mkdir(path, now, mode, cred, spec)
            parent = self._parent_of(path, cred)
            self._place(node, parent, path)
            self._save([node, parent], [])
            return node

    def unlink(self, path: str, now: int, cred: Cred, open_: bool = False) -> list[StripeObject]:
        """An orphan (unlinked while open) is kept in memory only: after an MDS restart its objects are
        not destroyed (real Lustre destroys the PENDING orphans at recovery)."""
        with self.lock:
            node = self.ns.lookup(path, cred)
            if path.startswith(FID_DIR):
                return self.ns.unlink(path, now, cred)
            freed = self.ns.unlink(path, now, cred, open_)
            parent = self._parent_of(path, cred)
            if self._unplace(node, parent, path):
                self._save([parent], [node.ino])
            else:
                self._save([parent, node], [])
            return freed

    def rmdir(self, path: str, now: int, cred: Cred) -> None:
        with self.lock:
            node = self.ns.lookup(path, cred)
            self.ns.rmdir(path, now, cred)
            parent = self._parent_of(path, cred)
            self._forget(node)
            self._save([parent], [node.ino])

    def rename(self, src: str, dst: str, now: int, cred: Cred) -> list[StripeObject]:
        with self.lock:
            node = self.ns.lookup(src, cred)
            try:
                existing = self.ns.lookup(dst, cred)
            except LustreError:
                existing = None
            freed = self.ns.rename(src, dst, now, cred)
            if existing is node:   # two names of one file: POSIX rename does nothing
                return freed
            sparent, dparent = self._parent_of(src, cred), self._parent_of(dst, cred)
            removed, kept = [], []
            if existing is not None and self._unplace(existing, dparent, dst):
                removed.append(existing.ino)
            elif existing is not None:   # a hard-linked file lost one of its names
                kept.append(existing)
            self._unplace(node, sparent, src)
            self._place(node, dparent, dst)
            self._save([node, sparent, dparent] + kept, removed)
            return freed

    def link(self, src: str, dst: str, now: int, cred: Cred) -> Inode:
        with self.lock:
            node = self.ns.link(src, dst, now, cred)
            parent = self._parent_of(dst, cred)
            self._place(node, parent, dst)
            self._save([node, parent], [])
            return node

    def symlink(self, path: str, target: str, now: int, cred: Cred) -> Inode:
        with self.lock:
            node = self.ns.symlink(path, target, now, cred)
            parent = self._parent_of(path, cred)
            self._place(node, parent, path)
            self._save([node, parent], [])
            return node

    def mknod(self, path: str, mode: int, rdev: int, now: int, cred: Cred) -> Inode:
        with self.lock:
            node = self.ns.mknod(path, mode, rdev, now, cred)
            parent = self._parent_of(path, cred)
            self._place(node, parent, path)
            self._save([node, parent], [])
            return node

    def paths_of(self, ino: int) -> list[str]:
        """Every name of inode `ino` as a path (a hard-linked file has several)."""
        def path(i: int) -> str:
            e = self.where[i][0]
            return "" if i == 1 else path(e.parent) + "/" + e.name
        with self.lock:
            return [path(e.parent) + "/" + e.name for e in self.where.get(ino, [])]

    def readlink(self, path: str, cred: Cred) -> str:
        with self.lock:
            node = self.ns.lookup(path, cred)
            if node.kind != st.S_IFLNK or node.is_dir:
                raise LustreError("EINVAL", f"{path} is not a symbolic link")
            return node.target

    def setattr(self, path: str, now: int, cred: Cred, *, mode: int | None = None, uid: int | None = None,
                gid: int | None = None, size: int | None = None, atime: int | None = None,
                mtime: int | None = None, grow_only: bool = False, explicit_times: bool = False,
                append: int = 0, read_atime: bool = False) -> Inode:
        """`append`: an O_APPEND write's length; the size grows by it under this lock (the reply's size
        minus it is the write's offset), so concurrent appenders get ranges that do not overlap.
        `read_atime`: a reader's access time, alone in the request, saved only when relatime moves it."""
        with self.lock:
            node = self.ns.lookup(path, cred)
            if read_atime:
                if atime is not None and self.ns.read_atime(path, atime, cred):
                    self._save([node], [])
                return node
            if append:
                size, grow_only = node.size + append, False
            if mode is not None:
                self.ns.chmod(path, mode, now, cred)
            if uid is not None or gid is not None:   # even to the same owner: ctime, and setuid dropped (Linux)
                self.ns.chown(path, node.uid if uid is None else uid, node.gid if gid is None else gid, now, cred)
            if size is not None and not (grow_only and size <= node.size):
                self.ns.set_size(path, size, now, cred)
            if size is not None and cred.uid != 0 and node.is_reg:   # a write or truncate without CAP_FSETID
                node.mode &= ~(st.S_ISUID | (st.S_ISGID if node.mode & st.S_IXGRP else 0))
            if atime is not None or mtime is not None:
                self.ns.set_times(path, atime, mtime, now, explicit_times, cred)
            self._save([node], [])
            return node

    def setstripe(self, path: str, spec: StripeSpec, now: int, cred: Cred) -> Inode:
        with self.lock:
            try:
                self.ns.lookup(path, cred)
                new = False
            except LustreError as e:
                if e.name != "ENOENT":
                    raise
                new = True
            if not new:
                node = self.ns.lookup(path, cred)
                if not node.is_dir and node.layout is not None and node.size > 0:
                    raise LustreError("EEXIST", f"{path} already has a layout and data; layouts are set at "
                                      "creation (use lfs migrate)")
                if not node.is_dir and node.layout is not None:   # an empty file: replace its layout
                    return self._relayout(path, node, spec, now, cred)
            node = self.ns.setstripe(path, spec, now, cred)
            parent = self._parent_of(path, cred) if split(path) else None
            if new and parent is not None:
                self._place(node, parent, path)
            self._save([node] + ([parent] if parent is not None else []), [])
            return node

    def _relayout(self, path: str, node: Inode, spec: StripeSpec, now: int, cred: Cred) -> Inode:
        """`lfs setstripe` on an existing empty file: Lustre refuses it (EEXIST) - see FIDELITY."""
        raise LustreError("EEXIST", f"{path}: file already has a layout; setstripe works on new files or "
                          "directories (an existing file keeps its layout, as on Lustre)")

    def set_xattr(self, path: str, name: str, value: bytes, flags: int, now: int, cred: Cred) -> None:
        with self.lock:
            node = self.ns.lookup(path, cred)
            xattrs.check_write(self.ns, node, name, cred, path)
            xs = self.xattrs.setdefault(node.ino, {})
            if flags == 1 and name in xs:
                raise LustreError("EEXIST", f"{path}: xattr {name} exists")
            if flags == 2 and name not in xs:
                raise LustreError("ENODATA", f"{path}: no xattr {name}")
            xs[name] = value
            node.ctime = now
            self._save([node], [])

    def remove_xattr(self, path: str, name: str, now: int, cred: Cred) -> None:
        with self.lock:
            node = self.ns.lookup(path, cred)
            xattrs.check_remove(self.ns, node, name, cred, path)
            xs = self.xattrs.get(node.ino, {})
            if name not in xs:
                raise LustreError("ENODATA", f"{path}: no xattr {name}")
            del xs[name]
            node.ctime = now
            self._save([node], [])

    def get_xattr(self, path: str, name: str, cred: Cred) -> bytes:
        with self.lock:
            node = self.ns.lookup(path, cred)
            xattrs.check_name(name)
            value = self.xattrs.get(node.ino, {}).get(name)
            if not xattrs.may_read(self.ns, node, name, cred, path) or value is None:
                raise LustreError("ENODATA", f"{path}: no xattr {name}")
            return value

    def list_xattrs(self, path: str, cred: Cred) -> list[str]:
        with self.lock:
            node = self.ns.lookup(path, cred)
            return xattrs.listed(sorted(self.xattrs.get(node.ino, {})), cred)

    def has_privileged_xattrs(self, ino: int) -> bool:
        return any(n.startswith(xattrs.PRIVILEGED) for n in self.xattrs.get(ino, ()))

    def close(self) -> None:
        self.writer.close()
        self.engine.dispose()

    def inode_count(self) -> int:
        return len(self.where)
