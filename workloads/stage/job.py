"""The staging job: S3 (the twin's Ceph gateway, or any S3) -> a directory (the Lustre mount), as a
site's "stage the dataset before training" job does.

    job = StageJob(s3_client, "bucket", "prefix/", "/mnt/hot/run42", workers=8)
    report = job.run()

What it does, per object under the prefix (ListObjectsV2), with `workers` threads:
  - its destination is DEST/<key without the prefix>; subdirectories are created as needed (and
    `set_layout(dir)` is called on the destination and every directory it creates: `twin stage`
    sets the chosen stripe layout there with `lfs setstripe`, which new files inherit);
  - it streams the object (GetObject) into `<dest>.stage-part`, computing its MD5 on the way, then
    verifies it and renames the part over the destination;
  - verification: a single-part upload's ETag is the MD5 of its bytes and must match. A multipart
    ETag (`<md5 of the parts' md5s>-<parts>`) is not the content's MD5, so the content MD5 is compared
    with one the uploader stored in the object's user metadata (`x-amz-meta-md5`, hex, or
    `x-amz-meta-md5chksum`, base64, as rclone writes it) when there is one; without it only the size
    can be checked, and the report counts the object as `size-verified` (honest, not silent);
  - a failure (connection reset, 5xx/503 SlowDown, a short or corrupt body, EIO from the file
    system) is retried with exponential backoff (0.5 s doubling, at most 8 s apart, `attempts`
    tries); every retry is recorded in the report. An OSS failing over under a write blocks that
    write until the partner serves the OST (the Lustre client does that), it is not an error;
  - resume: each completed object is appended (one JSON line, flushed) to the journal
    `DEST/.stage-manifest.jsonl` (key, size, ETag, MD5). A later run copies only objects that are
    missing from it, changed (size or ETag differ) or whose file is gone or has another size; a run
    killed mid-object leaves a `.stage-part` file that the next run overwrites.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from emulator.errors import UserError

JOURNAL = ".stage-manifest.jsonl"
PART_SUFFIX = ".stage-part"
CHUNK = 1024 * 1024


class StageError(UserError, RuntimeError):
    pass


class ChecksumMismatch(IOError):
    pass


@dataclass
class S3Object:
    key: str
    size: int
    etag: str

    @property
    def multipart(self) -> bool:
        return "-" in self.etag


@dataclass
class Retry:
    key: str
    attempt: int
    error: str
    wait_s: float


@dataclass
class StageReport:
    listed: int = 0
    copied: int = 0
    skipped: int = 0
    failed: list[tuple[str, str]] = field(default_factory=list)
    bytes_copied: int = 0
    md5_verified: int = 0
    size_verified: int = 0          # multipart objects without a stored MD5: size checked only
    retries: list[Retry] = field(default_factory=list)
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"listed": self.listed, "copied": self.copied, "skipped": self.skipped, "failed": self.failed,
                "bytes_copied": self.bytes_copied, "md5_verified": self.md5_verified,
                "size_verified": self.size_verified, "seconds": round(self.seconds, 3),
                "retries": [r.__dict__ for r in self.retries]}


def _is_retryable(e: BaseException) -> bool:
    try:
        from botocore.exceptions import BotoCoreError, ClientError
    except ImportError:  # pragma: no cover
        return isinstance(e, (OSError, ChecksumMismatch))
    if isinstance(e, ClientError):
        code = e.response.get("Error", {}).get("Code", "")
        status = e.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0)
        return status >= 500 or code in ("SlowDown", "RequestTimeout", "ServiceUnavailable", "InternalError",
                                         "503", "500")
    return isinstance(e, (BotoCoreError, OSError, ChecksumMismatch, ConnectionError))


def stored_md5(head: dict[str, Any]) -> str | None:
    """A content MD5 the uploader kept in the object's user metadata (hex), if any."""
    meta = {k.lower(): v for k, v in (head.get("Metadata") or {}).items()}
    for name in ("md5", "content-md5"):
        v = meta.get(name, "").strip().lower()
        if len(v) == 32 and all(c in "0123456789abcdef" for c in v):
            return v
    v = meta.get("md5chksum")
    if v:
        try:
            return base64.b64decode(v).hex()
        except ValueError:
            return None
    return None


class StageJob:
    def __init__(self, s3: Any, bucket: str, prefix: str, dest: str | Path, *, workers: int = 8,
                 set_layout: Callable[[Path], None] | None = None, attempts: int = 8,
                 progress: Callable[[int], None] | None = None, on_total: Callable[[int, int], None] | None = None,
                 backoff_s: float = 0.5, max_backoff_s: float = 8.0) -> None:
        if workers < 1:
            raise StageError(f"--workers {workers}: must be at least 1")
        self.s3, self.bucket, self.prefix = s3, bucket, prefix
        self.dest = Path(dest)
        self.workers = workers
        self.set_layout = set_layout
        self.attempts = attempts
        self.progress = progress or (lambda n: None)
        self.on_total = on_total or (lambda n, b: None)
        self.backoff_s, self.max_backoff_s = backoff_s, max_backoff_s
        self.report = StageReport()
        self.mu = threading.Lock()
        self.made_dirs: set[Path] = set()
        self.journal_file: Any = None
        self.stop = threading.Event()

    # ---- listing and the journal ---------------------------------------------------------------
    def list_objects(self) -> list[S3Object]:
        out = []
        for page in self.s3.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=self.prefix):
            for o in page.get("Contents", []):
                if o["Key"].endswith("/") and o["Size"] == 0:
                    continue   # a "directory" marker
                out.append(S3Object(o["Key"], int(o["Size"]), o["ETag"].strip('"')))
        return out

    def target(self, key: str) -> Path:
        rel = key[len(self.prefix):].lstrip("/") if key.startswith(self.prefix) else key
        if not rel or any(p in ("..", ".") for p in rel.split("/")):
            raise StageError(f"object key {key!r} does not map to a path under {self.dest}")
        return self.dest / rel

    def read_journal(self) -> dict[str, dict[str, Any]]:
        done: dict[str, dict[str, Any]] = {}
        try:
            text = (self.dest / JOURNAL).read_text()
        except FileNotFoundError:
            return done
        for line in text.splitlines():
            try:
                rec = json.loads(line)
                done[rec["key"]] = rec
            except (ValueError, KeyError, TypeError):
                continue   # a line torn by a kill
        return done

    def up_to_date(self, o: S3Object, rec: dict[str, Any] | None) -> bool:
        if rec is None or rec.get("size") != o.size or rec.get("etag") != o.etag:
            return False
        try:
            return self.target(o.key).stat().st_size == o.size
        except OSError:
            return False

    def _journal(self, o: S3Object, md5: str, verified: str) -> None:
        line = json.dumps({"key": o.key, "size": o.size, "etag": o.etag, "md5": md5, "verified": verified,
                           "time": time.time()}) + "\n"
        with self.mu:
            self.journal_file.write(line.encode())
            self.journal_file.flush()

    # ---- one object ----------------------------------------------------------------------------
    def _mkdirs(self, d: Path) -> None:
        missing = []
        p = d
        while p != self.dest and p not in self.made_dirs and not p.is_dir():
            missing.append(p)
            p = p.parent
        for p in reversed(missing):
            try:
                p.mkdir()
            except FileExistsError:
                pass
            if self.set_layout is not None:
                self.set_layout(p)
            with self.mu:
                self.made_dirs.add(p)

    def copy_one(self, o: S3Object) -> None:
        dst = self.target(o.key)
        self._mkdirs(dst.parent)
        part = dst.with_name(dst.name + PART_SUFFIX)
        head_md5 = None
        if o.multipart:
            head_md5 = stored_md5(self.s3.head_object(Bucket=self.bucket, Key=o.key))
        r = self.s3.get_object(Bucket=self.bucket, Key=o.key, IfMatch=f'"{o.etag}"')
        body = r["Body"]
        h = hashlib.md5()
        n = 0
        sent = 0
        try:
            with open(part, "wb", buffering=0) as f:
                while True:
                    chunk = body.read(CHUNK)
                    if not chunk:
                        break
                    h.update(chunk)
                    f.write(chunk)
                    n += len(chunk)
                    self.progress(len(chunk))
                    sent += len(chunk)
        finally:
            body.close()
        try:
            md5 = h.hexdigest()
            if n != o.size:
                raise ChecksumMismatch(f"{o.key}: got {n} bytes, the listing says {o.size}")
            if not o.multipart and md5 != o.etag:
                raise ChecksumMismatch(f"{o.key}: MD5 {md5} != ETag {o.etag}")
            if o.multipart and head_md5 is not None and md5 != head_md5:
                raise ChecksumMismatch(f"{o.key}: MD5 {md5} != the stored x-amz-meta-md5 {head_md5}")
        except ChecksumMismatch:
            self.progress(-sent)
            raise
        os.replace(part, dst)
        verified = "md5" if (not o.multipart or head_md5 is not None) else "size"
        self._journal(o, md5, verified)
        with self.mu:
            self.report.copied += 1
            self.report.bytes_copied += n
            if verified == "md5":
                self.report.md5_verified += 1
            else:
                self.report.size_verified += 1

    def copy_with_retries(self, o: S3Object) -> None:
        wait_s = self.backoff_s
        for attempt in range(1, self.attempts + 1):
            if self.stop.is_set():
                return
            try:
                self.copy_one(o)
                return
            except Exception as e:  # noqa: BLE001 - classified below
                if not _is_retryable(e) or attempt == self.attempts:
                    with self.mu:
                        self.report.failed.append((o.key, f"{type(e).__name__}: {e}"))
                    return
                with self.mu:
                    self.report.retries.append(Retry(o.key, attempt, f"{type(e).__name__}: {e}", wait_s))
                time.sleep(wait_s)
                wait_s = min(self.max_backoff_s, wait_s * 2)

    # ---- the job -------------------------------------------------------------------------------
    def run(self) -> StageReport:
        t0 = time.monotonic()
        self.dest.mkdir(parents=True, exist_ok=True)
        if self.set_layout is not None:
            self.set_layout(self.dest)
        objects = self.list_objects()
        self.report.listed = len(objects)
        done = self.read_journal()
        todo = [o for o in objects if not self.up_to_date(o, done.get(o.key))]
        self.report.skipped = len(objects) - len(todo)
        # the journal, compacted to what is still valid, then appended to
        todo_keys = {o.key for o in todo}
        keep = [done[o.key] for o in objects if o.key in done and o.key not in todo_keys]
        tmp = self.dest / (JOURNAL + ".tmp")
        tmp.write_text("".join(json.dumps(r) + "\n" for r in keep))
        os.replace(tmp, self.dest / JOURNAL)
        self.on_total(len(todo), sum(o.size for o in todo))
        self.journal_file = open(self.dest / JOURNAL, "ab", buffering=0)
        try:
            with ThreadPoolExecutor(self.workers, thread_name_prefix="stage") as pool:
                futs = [pool.submit(self.copy_with_retries, o) for o in sorted(todo, key=lambda o: o.key)]
                try:
                    wait(futs, return_when=FIRST_EXCEPTION)
                except KeyboardInterrupt:
                    self.stop.set()
                    raise
                for f in futs:
                    f.result()
        finally:
            self.journal_file.close()
        self.report.seconds = time.monotonic() - t0
        return self.report
