"""Checkpoints as real files: a scaled stand-in of the checkpoint bytes plus a small manifest.

Layout: `DIR/step_<8 digits>/shard.bin` and `DIR/step_<8 digits>/manifest.json`. A checkpoint is
complete only when its manifest has been atomically renamed into place (written to a temporary
name, fsynced, `os.replace`d, directory fsynced), after its data: a crash mid-write leaves a
directory without a manifest, which `latest` skips. This is the protocol real trainers use on
Lustre, where a half-written checkpoint must never be resumed from.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MANIFEST = "manifest.json"
SHARD = "shard.bin"
CHUNK = 1 << 20


@dataclass(frozen=True)
class Checkpoint:
    step: int
    path: Path
    manifest: dict[str, Any]


def step_dir(root: Path, step: int) -> Path:
    return root / f"step_{step:08d}"


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write(root: Path, step: int, standin_bytes: int, manifest: dict[str, Any],
          midway: Callable[[], None] | None = None,
          before_manifest: Callable[[], None] | None = None) -> Checkpoint:
    """Write the stand-in data, then publish the manifest atomically. Returns the complete checkpoint.
    `midway()` is called once half the data is written (a drill injects a fault mid-checkpoint there),
    `before_manifest()` once the data is durable, before `manifest` (which it may update) is written."""
    d = step_dir(root, step)
    d.mkdir(parents=True, exist_ok=True)
    old = d / MANIFEST
    if old.exists():  # rewriting a step (a resumed job reached it again): retract the old one first
        old.unlink()
    seed = hashlib.sha256(f"{manifest.get('job_id')}:{step}".encode()).digest()
    block = (seed * (CHUNK // len(seed) + 1))[:CHUNK]
    digest = hashlib.sha256()
    with open(d / SHARD, "wb") as f:
        left = standin_bytes
        half = standin_bytes - standin_bytes // 2
        while left > 0:
            piece = block[: min(left, CHUNK, left - half if left > half else left)]
            f.write(piece)
            digest.update(piece)
            left -= len(piece)
            if midway is not None and left == half:
                f.flush()
                midway()
                midway = None
        if midway is not None:
            midway()
        f.flush()
        os.fsync(f.fileno())
    if before_manifest is not None:
        before_manifest()
    doc = dict(manifest, step=step, standin_bytes=standin_bytes, sha256=digest.hexdigest(), complete=True)
    tmp = d / (MANIFEST + ".tmp")
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1, sort_keys=True)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, d / MANIFEST)
    _fsync_dir(d)
    return Checkpoint(step, d, doc)


def verify(d: Path) -> dict[str, Any] | None:
    """The manifest of a complete, intact checkpoint directory, or None."""
    try:
        doc = json.loads((d / MANIFEST).read_text())
        data = (d / SHARD).stat().st_size
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict) or doc.get("standin_bytes") != data:
        return None
    digest = hashlib.sha256()
    with open(d / SHARD, "rb") as f:
        while chunk := f.read(CHUNK):
            digest.update(chunk)
    return doc if digest.hexdigest() == doc.get("sha256") else None


def scan(root: Path) -> tuple[list[Checkpoint], list[Path]]:
    """(complete checkpoints by step, incomplete or damaged directories)."""
    good: list[Checkpoint] = []
    bad: list[Path] = []
    if not root.is_dir():
        return good, bad
    for d in sorted(root.glob("step_*")):
        if not d.is_dir() or not d.name[5:].isdigit():
            continue
        doc = verify(d)
        if doc is None:
            bad.append(d)
        else:
            good.append(Checkpoint(int(d.name[5:]), d, doc))
    good.sort(key=lambda c: c.step)
    return good, bad


def latest(root: Path) -> Checkpoint | None:
    good, _ = scan(root)
    return good[-1] if good else None
