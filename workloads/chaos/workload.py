"""The verifying workload: every write that was acknowledged is remembered with its digest.

S3 and Lustre run as worker processes (`python -m workloads.chaos.workload s3|lustre ...`), so that
one stuck in a blocked socket or a FUSE call can be stopped by its pid, and so that the S3 client
runs where a training job would: in a GPU server's network namespace under `--network netns`.
Each appends one JSON line per operation to its journal, after the acknowledgement and before the
next operation; `verify` mode reads every acknowledged write back and writes a result document.
Slurm jobs and GPU leases run as threads of the thrasher (`SlurmJobs`, `GpuLeases`).
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import os
import random
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

MIB = 1 << 20
PART = 5 * MIB   # S3's smallest part but the last
VERIFY_THREADS = 4


def journal_lines(path: Path) -> list[dict[str, Any]]:
    """A journal's records (a last line cut short by a kill is ignored)."""
    out = []
    try:
        text = path.read_text()
    except OSError:
        return out
    for line in text.splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out


class Journal:
    def __init__(self, path: Path) -> None:
        self.f = open(path, "a")  # noqa: SIM115  (open for the worker's life)

    def write(self, **rec: Any) -> None:
        self.f.write(json.dumps(rec | {"t": round(time.time(), 3)}) + "\n")
        self.f.flush()


def body(rng: random.Random, size: int) -> bytes:
    return rng.randbytes(size)


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def b64sha(data: bytes) -> str:
    return base64.b64encode(hashlib.sha256(data).digest()).decode()


# --- S3 ----------------------------------------------------------------------------------------
def s3_client(url: str, ak: str, sk: str) -> Any:
    import boto3
    from botocore.config import Config

    return boto3.client("s3", endpoint_url=url, aws_access_key_id=ak, aws_secret_access_key=sk,
                        region_name="us-east-1",
                        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1},
                                      connect_timeout=5, read_timeout=30))


def s3_write(a: argparse.Namespace) -> int:
    s3, rng, j = s3_client(a.url, a.ak, a.sk), random.Random(a.seed), Journal(a.journal)
    stop, n = Path(a.stop), 0
    acked: list[tuple[str, str]] = []
    while True:
        try:
            s3.head_bucket(Bucket=a.bucket)
            break
        except Exception:  # noqa: BLE001 - not there yet (or the gateway is restarting): create it
            try:
                s3.create_bucket(Bucket=a.bucket)
                break
            except Exception as e:  # noqa: BLE001
                j.write(kind="create_bucket", ok=False, error=str(e)[:200])
                if stop.exists():
                    return 0
                time.sleep(1)
    while not stop.exists():
        n += 1
        op = rng.choices(["put", "multipart", "get"], weights=[5, 1, 3 if acked else 0])[0]
        key = f"{op}/{a.seed}-{n:06d}"
        t0 = time.monotonic()
        try:
            if op == "put":
                data = body(rng, rng.choice([4096, 65536, 300_000, MIB]))
                s3.put_object(Bucket=a.bucket, Key=key, Body=data, ChecksumAlgorithm="SHA256")
                acked.append((key, sha(data)))
                j.write(kind="put", ok=True, key=key, size=len(data), sha256=sha(data),
                        s=round(time.monotonic() - t0, 3))
            elif op == "multipart":
                data = body(rng, PART + rng.choice([1, 65536, 700_000]))
                up = s3.create_multipart_upload(Bucket=a.bucket, Key=key, ChecksumAlgorithm="SHA256")
                parts = []
                try:
                    for i, off in enumerate(range(0, len(data), PART), 1):
                        chunk = data[off:off + PART]
                        r = s3.upload_part(Bucket=a.bucket, Key=key, UploadId=up["UploadId"], PartNumber=i,
                                           Body=chunk, ChecksumAlgorithm="SHA256")
                        parts.append({"PartNumber": i, "ETag": r["ETag"], "ChecksumSHA256": r["ChecksumSHA256"]})
                    s3.complete_multipart_upload(Bucket=a.bucket, Key=key, UploadId=up["UploadId"],
                                                 MultipartUpload={"Parts": parts})
                except Exception:
                    try:   # leave no upload behind when a part or the completion failed
                        s3.abort_multipart_upload(Bucket=a.bucket, Key=key, UploadId=up["UploadId"])
                    except Exception:  # noqa: BLE001, S110 - the gateway may be down: its lifecycle would
                        pass
                    raise
                acked.append((key, sha(data)))
                j.write(kind="multipart", ok=True, key=key, size=len(data), parts=len(parts), sha256=sha(data),
                        s=round(time.monotonic() - t0, 3))
            else:
                key, want = rng.choice(acked)
                got = sha(s3.get_object(Bucket=a.bucket, Key=key, ChecksumMode="ENABLED")["Body"].read())
                j.write(kind="get", ok=True, key=key, match=got == want, s=round(time.monotonic() - t0, 3))
        except Exception as e:  # noqa: BLE001 - a failed operation is not acknowledged: count it, go on
            j.write(kind=op, ok=False, key=key, error=f"{type(e).__name__}: {str(e)[:200]}",
                    s=round(time.monotonic() - t0, 3))
            time.sleep(0.5)
        time.sleep(a.pause)
    return 0


def s3_verify(a: argparse.Namespace) -> int:
    s3 = s3_client(a.url, a.ak, a.sk)   # boto3 clients are thread-safe
    acked = [r for r in journal_lines(Path(a.journal)) if r.get("ok") and r["kind"] in ("put", "multipart")]

    def check(r: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
        for attempt in range(3):
            try:
                got = s3.get_object(Bucket=a.bucket, Key=r["key"], ChecksumMode="ENABLED")["Body"].read()
                if sha(got) != r["sha256"]:
                    return "mismatched", {"key": r["key"], "size": len(got), "want": r["size"]}
                return None
            except Exception as e:  # noqa: BLE001
                if attempt == 2:
                    return "lost", {"key": r["key"], "error": f"{type(e).__name__}: {str(e)[:200]}"}
                time.sleep(1)
        return None

    write_result(a.result, len(acked), parallel(check, acked))
    return 0


def parallel(check: Any, items: list[Any]) -> list[tuple[str, dict[str, Any]]]:
    """check(item) for every item, four at a time (reads of many small objects and files); the problems."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(VERIFY_THREADS) as pool:
        return [x for x in pool.map(check, items) if x]


def write_result(path: Path, checked: int, problems: list[tuple[str, dict[str, Any]]]) -> None:
    result: dict[str, Any] = {"checked": checked, "lost": [], "mismatched": []}
    for what, detail in problems:
        result[what].append(detail)
    Path(path).write_text(json.dumps(result))


# --- Lustre ------------------------------------------------------------------------------------
def lustre_write(a: argparse.Namespace) -> int:
    rng, j, stop, n = random.Random(a.seed), Journal(a.journal), Path(a.stop), 0
    root = Path(a.dir)
    os.makedirs(root / a.name, exist_ok=True)
    while not stop.exists():
        n += 1
        rel = f"{a.name}/f{n:06d}"
        data = body(rng, rng.choice([4096, 65536, 262_144, MIB]))
        t0 = time.monotonic()
        try:
            fd = os.open(root / rel, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view):]
                os.fsync(fd)
            finally:
                os.close(fd)
            j.write(kind="write", ok=True, path=rel, size=len(data), sha256=sha(data),
                    s=round(time.monotonic() - t0, 3))
        except OSError as e:
            j.write(kind="write", ok=False, path=rel, error=f"{e.strerror or e}", s=round(time.monotonic() - t0, 3))
            time.sleep(0.5)
        time.sleep(a.pause)
    return 0


def lustre_verify(a: argparse.Namespace) -> int:
    """Every acknowledged write of every journal, read back through every mount."""
    acked = [r for journal in a.journals for r in journal_lines(Path(journal)) if r.get("ok") and r["kind"] == "write"]
    reads = [(r, mount) for r in acked for mount in a.mounts]

    def check(item: tuple[dict[str, Any], str]) -> tuple[str, dict[str, Any]] | None:
        r, mount = item
        try:
            got = Path(mount, r["path"]).read_bytes()
        except OSError as e:
            return "lost", {"path": r["path"], "mount": mount, "error": e.strerror or str(e)}
        if sha(got) != r["sha256"]:
            return "mismatched", {"path": r["path"], "mount": mount, "size": len(got), "want": r["size"]}
        return None

    write_result(a.result, len(reads), parallel(check, reads))
    return 0


# --- the process side: started by the thrasher ------------------------------------------------
def start(args: list[str], log: Path, netns: str | None = None) -> subprocess.Popen:
    """A worker process in its own session (stopped by its pid), optionally in a network namespace."""
    root = Path(__file__).resolve().parents[2]
    argv = [sys.executable, "-m", "workloads.chaos.workload", *args] + (["--netns", netns] if netns else [])
    with open(log, "ab") as out:
        return subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=out, start_new_session=True,
                                cwd=root, env={**os.environ, "PYTHONPATH": str(root)})


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m workloads.chaos.workload")
    p.add_argument("what", choices=["s3", "lustre"])
    p.add_argument("mode", choices=["write", "verify"])
    p.add_argument("--journal", type=Path)
    p.add_argument("--journals", nargs="*", default=[])
    p.add_argument("--mounts", nargs="*", default=[])
    p.add_argument("--stop", default="/nonexistent")
    p.add_argument("--result", type=Path)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--pause", type=float, default=0.2)
    p.add_argument("--url", default="")
    p.add_argument("--ak", default="")
    p.add_argument("--sk", default="")
    p.add_argument("--bucket", default="chaos")
    p.add_argument("--dir", default="")
    p.add_argument("--name", default="w")
    p.add_argument("--netns", default=None)
    a = p.parse_args(argv)
    if a.netns:   # before any socket: the S3 client talks from the host's storage NIC
        from emulator.procutil import enter_netns
        enter_netns(a.netns)
    fn = {("s3", "write"): s3_write, ("s3", "verify"): s3_verify,
          ("lustre", "write"): lustre_write, ("lustre", "verify"): lustre_verify}[(a.what, a.mode)]
    return fn(a)


# --- Slurm jobs and GPU leases, as threads of the thrasher ------------------------------------
class SlurmJobs(threading.Thread):
    """sbatch a small requeueable job every few seconds; each leaves a marker when it completes.
    None may be lost: every acknowledged submission completes (after requeues) by the end."""

    def __init__(self, conf: Path, jobs_dir: Path, stop: threading.Event, seed: int, every_s: float = 4.0) -> None:
        super().__init__(name="chaos-slurm", daemon=True)
        self.env = {**os.environ, "SLURM_CONF": str(conf)}
        self.dir, self.stop, self.rng, self.every = jobs_dir, stop, random.Random(seed), every_s
        self.submitted: list[str] = []
        self.failed: list[str] = []
        jobs_dir.mkdir(parents=True, exist_ok=True)

    def run(self) -> None:
        while not self.stop.wait(self.rng.uniform(0.5, 1.5) * self.every):
            secs = self.rng.choice([1, 2, 5])
            marker = f'{self.dir}/$SLURM_JOB_ID.done'
            wrap = f'sleep {secs}; echo "$SLURM_JOB_ID $SLURM_RESTART_COUNT $SLURMD_NODENAME" > {marker}'
            try:
                r = subprocess.run(["sbatch", "--parsable", "--requeue", "-N1", "-J", "chaos", "-o", "/dev/null",
                                    "--chdir", str(self.dir), "--wrap", wrap], env=self.env, capture_output=True,
                                   text=True, timeout=30)
            except subprocess.TimeoutExpired:
                self.failed.append("sbatch timed out")
                continue
            if r.returncode == 0 and r.stdout.strip():
                self.submitted.append(r.stdout.strip().split(";")[0])
            else:
                self.failed.append(r.stderr.strip()[:200])

    def done(self) -> dict[str, dict[str, Any]]:
        out = {}
        for job in self.submitted:
            p = self.dir / f"{job}.done"
            if p.exists():
                parts = p.read_text().split()
                out[job] = {"restarts": int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0,
                            "node": parts[2] if len(parts) > 2 else ""}
        return out


class GpuLeases(threading.Thread):
    """Lease one or two GPUs of a server, hold them briefly, release. An Xid may end a lease first
    (that is the fault's effect, not a loss); at the end no lease of ours may still be active."""

    def __init__(self, twin: Any, servers: list[str], stop: threading.Event, seed: int) -> None:
        super().__init__(name="chaos-gpu", daemon=True)
        self.twin, self.servers, self.stop, self.rng = twin, servers, stop, random.Random(seed)
        self.counts = {"leased": 0, "released": 0, "ended_by_fault": 0, "released_at_end": 0, "failed": 0}
        self.errors: dict[str, int] = {}
        self.leases: list[tuple[str, str]] = []   # (server, lease id) acquired

    def _error(self, e: Exception) -> None:
        self.counts["failed"] += 1
        key = getattr(e, "code", None)
        key = key.name if hasattr(key, "name") else type(e).__name__
        self.errors[key] = self.errors.get(key, 0) + 1

    def run(self) -> None:
        n = 0
        while not self.stop.wait(self.rng.uniform(0.3, 1.0)):
            n += 1
            server = self.rng.choice(self.servers)
            node = self.twin.gpu_node(server)
            try:
                lease = node.lease(f"chaos-{n}", count=self.rng.choice([1, 2]), utilization=50)
            except Exception as e:  # noqa: BLE001 - UNAVAILABLE while killed, no healthy GPU after an Xid
                self._error(e)
                continue
            self.counts["leased"] += 1
            self.leases.append((server, lease.id))
            self.stop.wait(self.rng.uniform(0.5, 2.0))
            try:
                node.release(lease.id)
                self.counts["released"] += 1
            except Exception as e:  # noqa: BLE001
                if self._ended(node, lease.id):
                    self.counts["ended_by_fault"] += 1
                else:
                    self._error(e)

    @staticmethod
    def _ended(node: Any, lease_id: str) -> bool:
        try:
            return not node.lease_info(lease_id).active
        except Exception:  # noqa: BLE001
            return False

    def still_active(self) -> list[str]:
        """Our leases still active after releasing again those whose release a fault swallowed (a lease
        outlives its server's kill -9, as it should: the daemon is crash-only)."""
        left = []
        for server, lease_id in self.leases:
            node = self.twin.gpu_node(server)
            if not self._ended(node, lease_id):
                try:
                    node.release(lease_id)
                    self.counts["released_at_end"] += 1
                except Exception:  # noqa: BLE001
                    left.append(f"{server}:{lease_id}")
        return left


if __name__ == "__main__":
    sys.exit(main())
