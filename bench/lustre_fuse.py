"""Lustre through the FUSE mount vs the local disk: 1 GiB sequential write and read with stripe
count 4 (dd bs=4M, conv=fsync for the write, caches dropped before each read, the same size on the
same disk for the reference), `ls -l` of a 10,000-file directory (on a fresh mount, so the listing
and every attribute come from the MDS), the cost of creating a file, and `twin stage` of 1 GiB in
1,000 objects from the Ceph gateway. Starts its own twins (`rack --lustre`, then `mini --ceph
--lustre` for staging; NVMe time model off: the real stack is measured), prints figures and ratios,
stops them.

    .venv/bin/python -m bench.lustre_fuse [--size-mib 1024] [--files 10000] [--stage-objects 1000]
        [--network netns] [--no-workloads]
    .venv/bin/python -m bench --only lustre

Targets (issue 6, issue 16): read and write >= 50 % of local disk; `ls -l` of 10,000 files <= 1 s;
unbuffered 100-byte writes >= 50,000/s, create+write+close >= 1,000 files/s, stat >= 10,000/s, dbench
with 4 clients >= 10 % of local disk, bonnie++ -s 256 -n 1 in <= 3 min, fio random 4 KiB reads reported
(each with the same workload on the local disk beside it); staging 1 GiB in 1,000 objects <= 60 s.
Needs root (FUSE, drop_caches).
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from emulator.rundir import RunDir
from services.ceph.manifest import gateway

ROOT = Path(__file__).resolve().parent.parent
TWIN = str(ROOT / ".venv" / "bin" / "twin")
MiB = 1024 * 1024
AK, SK = "AKBENCH", "sk-bench"
NETNS_LOCK = "/tmp/clustertwin-netns.lock"


def drop_caches() -> None:
    subprocess.run(["sync"], check=True)
    try:
        Path("/proc/sys/vm/drop_caches").write_text("3\n")
    except OSError:
        print("  (cannot drop caches: not root; reads may come from the page cache)")


def dd(args: list[str]) -> float:
    """Bytes/s dd reports."""
    r = subprocess.run(["dd", *args], capture_output=True, text=True, check=True)
    m = re.search(r"(\d+) bytes .* copied, ([\d.]+) s", r.stderr)
    return int(m[1]) / float(m[2])


def seq(path: Path, mib: int) -> tuple[float, float]:
    w = dd(["if=/dev/zero", f"of={path}", "bs=4M", f"count={mib // 4}", "conv=fsync"])
    drop_caches()
    r = dd([f"if={path}", "of=/dev/null", "bs=4M"])
    return w, r


SETTLE_S = 3.0   # between rounds of small files


def small_ops(d: Path, writes: int = 20_000, files: int = 1000, rounds: int = 3) -> dict[str, float]:
    """Per-second rates of what loggers and checkpointers do: unbuffered 100-byte write()s to one file
    (then its close), then `rounds` rounds, each in a directory of its own, of create+write(100 B)+close
    of small files, stat of them, and unlink; each rate the median of its rounds (one round of 1,000
    files is a second, within reach of the machine's other work). A round starts once the last one's
    unlinks have settled: on the twin, each unlink has the MDS destroy the file's OST object in the
    background, which would otherwise run through the next round's creates."""
    d.mkdir(parents=True, exist_ok=True)
    buf = b"x" * 100
    fd = os.open(d / "log", os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
    t0 = time.perf_counter()
    for _ in range(writes):
        os.write(fd, buf)
    t1 = time.perf_counter()
    os.close(fd)
    out = {"write100": writes / (t1 - t0), "close_ms": (time.perf_counter() - t1) * 1e3}
    rates: dict[str, list[float]] = {"cwc": [], "stat": [], "unlink": []}
    for r in range(rounds):
        sub = d / f"round{r}"
        sub.mkdir()
        t0 = time.perf_counter()
        for i in range(files):
            fd = os.open(sub / f"s{i}", os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
            os.write(fd, buf)
            os.close(fd)
        rates["cwc"].append(files / (time.perf_counter() - t0))
        t0 = time.perf_counter()
        for _ in range(10):
            for i in range(files):
                os.stat(sub / f"s{i}")
        rates["stat"].append(10 * files / (time.perf_counter() - t0))
        t0 = time.perf_counter()
        for i in range(files):
            os.unlink(sub / f"s{i}")
        rates["unlink"].append(files / (time.perf_counter() - t0))
        sub.rmdir()
        time.sleep(SETTLE_S)   # the unlinks' object destroys (on the OSSs) are not the next round's work
    out |= {k: statistics.median(v) for k, v in rates.items()}
    (d / "log").unlink()
    return out


DBENCH_LOAD = "/usr/share/dbench/client.txt"   # Debian's dbench loadfile (NetBench's client trace)
BONNIE_LIMIT_S = 180.0                          # issue 16: bonnie++ -s 256 -n 1 completes in <= 3 min


def dbench(d: Path, clients: int = 4, seconds: int = 20) -> float:
    """MB/s dbench reports for `clients` clients over `seconds` (after its warm-up)."""
    d.mkdir(parents=True, exist_ok=True)
    r = subprocess.run(["dbench", "-D", str(d), "-t", str(seconds), "-c", DBENCH_LOAD, str(clients)],
                       capture_output=True, text=True, timeout=seconds * 6 + 120)
    m = re.search(r"Throughput ([\d.]+) MB/sec", r.stdout)
    if r.returncode or not m:
        raise RuntimeError(f"dbench failed ({r.returncode}): {(r.stdout + r.stderr)[-400:]}")
    return float(m[1])


def fio_randread(d: Path, size_mib: int = 256, seconds: int = 10) -> float:
    """IOPS of random 4 KiB reads (psync, one job) from a file laid out first, caches dropped between."""
    d.mkdir(parents=True, exist_ok=True)
    base = ["fio", "--name=rr", f"--directory={d}", f"--size={size_mib}M", "--bs=4k", "--ioengine=psync",
            "--output-format=json"]
    subprocess.run([*base, "--rw=write", "--end_fsync=1"], capture_output=True, check=True)
    drop_caches()
    r = subprocess.run([*base, "--rw=randread", f"--runtime={seconds}", "--time_based"], capture_output=True,
                       text=True, check=True)
    iops = json.loads(r.stdout)["jobs"][0]["read"]["iops"]
    for f in d.iterdir():
        f.unlink()
    return float(iops)


def bonnie(d: Path, limit: float = BONNIE_LIMIT_S) -> float:
    """Seconds `bonnie++ -s 256 -n 1` takes (-r 128: the size needs no more than twice that RAM), or -1 if
    it had not finished within `limit` (its 1-byte write() phase is the slow one)."""
    d.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    try:
        subprocess.run(["bonnie++", "-u", "root", "-d", str(d), "-s", "256", "-n", "1", "-r", "128", "-q"],
                       capture_output=True, check=True, timeout=limit)
    except subprocess.TimeoutExpired:
        return -1.0
    return time.monotonic() - t0


def workloads(d: Path) -> dict[str, float]:
    """The file-system benchmarks of issue 16 in directory `d`: dbench (4 clients), fio random 4 KiB
    reads, bonnie++ -s 256 -n 1."""
    return {"dbench": dbench(d / "dbench"), "fio_rr": fio_randread(d / "fio"), "bonnie_s": bonnie(d / "bonnie")}


def breakdown(run: Path, mnt: Path, n: int = 500) -> dict[str, float]:
    """Where one operation's time goes (ms each): a FUSE round trip (statvfs, which the client answers
    from its own 1 s cache), a gRPC round trip that does nothing (the MDS's health check), a framed
    round trip that does nothing (a method the MDS lacks, answered UNIMPLEMENTED: the floor of the
    transport the mount's metadata calls take, emulator/frame_rpc.py), an MDS read RPC (Getattr), MDS
    changes (Create, Setattr: the same round trip plus the MDT transaction), and a 100-byte OSS write
    RPC (framed too), each from a client in this process."""
    from emulator.rundir import RunDir
    from services.lustre.client.core import LustreClient
    from services.lustre.wire import layout_from_pb

    def each(fn) -> float:  # noqa: ANN001
        t0 = time.perf_counter()
        for i in range(n):
            fn(i)
        return (time.perf_counter() - t0) / n * 1e3

    import grpc
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    c = LustreClient.from_manifest(RunDir(run).load_manifest())
    health = health_pb2_grpc.HealthStub(c.mds.channels[c.mds.current])
    nothing = c.mds.framed[c.mds.current].unary_unary("/clustertwin.v1.LustreMds/Nothing")

    def framed_noop(i: int) -> None:
        with contextlib.suppress(grpc.RpcError):
            nothing(b"", timeout=5)
    c.mkdir("/parts")   # a directory the mount never listed: a create here revokes no lock of the mount's
    try:
        out = {"fuse_ms": each(lambda i: os.statvfs(mnt)),
               "grpc_ms": each(lambda i: health.Check(health_pb2.HealthCheckRequest())),
               "framed_ms": each(framed_noop),
               "getattr_ms": each(lambda i: c.getattr("/")),
               "md_create_ms": each(lambda i: c.create(f"/parts/bd{i}")),
               "md_setattr_ms": each(lambda i: c.setattr(f"/parts/bd{i}", size=100, grow_only=True))}
        lay = layout_from_pb(c.getattr("/parts/bd0").layout)
        out["oss_write_ms"] = each(lambda i: c.write(lay, i * 100, b"x" * 100))
        out["md_unlink_ms"] = each(lambda i: c.unlink(f"/parts/bd{i}"))
        c.rmdir("/parts")
        return out
    finally:
        c.close()


def twin(*args: str, run: Path) -> str:
    return subprocess.run([TWIN, *args, "--run-dir", str(run)], capture_output=True, text=True, check=True,
                          env=os.environ | {"AWS_ACCESS_KEY_ID": AK, "AWS_SECRET_ACCESS_KEY": SK}).stdout


def local_figures(local: Path, size_mib: int, workloads_too: bool) -> dict[str, float]:
    """The same workloads on the local disk, as the reference of each ratio."""
    local.mkdir()
    out: dict[str, float] = {}
    out["local_write"], out["local_read"] = seq(local / "f", size_mib)
    out |= {f"local_{k}": v for k, v in small_ops(local / "small").items()}
    if workloads_too:
        out |= {f"local_{k}": v for k, v in workloads(local / "work").items()}
    (local / "f").unlink()   # afterwards: freeing its blocks is no part of the small-file figures
    return out


def fuse_figures(work: Path, topology: str, size_mib: int, files: int, workloads_too: bool = True,
                 network: str = "loopback") -> dict[str, float]:
    """`network` netns: the twin on the namespace network, the mount on gpu001 over its storage NIC."""
    run, mnt = work / "run", work / "mnt"
    out = local_figures(work / "local", size_mib, workloads_too)
    try:
        twin("up", topology, "--lustre", *(["--network", "netns"] if network == "netns" else []), run=run)
        twin("lustre", "mount", str(mnt), run=run)
        twin("lustre", "lfs", "setstripe", "-c", "4", str(mnt / "f"), run=run)
        out["twin_write"], out["twin_read"] = seq(mnt / "f", size_mib)
        out |= {f"twin_{k}": v for k, v in small_ops(mnt / "small").items()}
        if workloads_too:
            out |= {f"twin_{k}": v for k, v in workloads(mnt / "work").items()}
        # afterwards: the OSSs destroying its 1 GiB of objects is no part of the small-file figures
        (mnt / "f").unlink()
        if network != "netns":   # the breakdown's client runs in this process, outside the namespaces
            out |= breakdown(run, mnt)
        d = mnt / "many"
        d.mkdir()
        t0 = time.monotonic()
        for i in range(files):
            (d / f"f{i:05d}").touch()
        out["create_ms"] = (time.monotonic() - t0) / files * 1e3
        # A mount that made the files holds them (their attributes and the listing, under their locks):
        # mounted again, it holds nothing, and the listing and every attribute come from the MDS.
        twin("lustre", "umount", str(mnt), run=run)
        twin("lustre", "mount", str(mnt), run=run)
        t0 = time.monotonic()
        listing = subprocess.run(["ls", "-l", str(d)], capture_output=True, text=True, check=True).stdout
        out["ls_s"] = time.monotonic() - t0
        assert listing.count("\n") >= files
        return out
    finally:
        subprocess.run([TWIN, "lustre", "umount", str(mnt), "--run-dir", str(run)], capture_output=True)
        subprocess.run([TWIN, "down", "--run-dir", str(run)], capture_output=True)


def stage_figures(work: Path, objects: int, total_mib: int, workers: int = 8) -> dict[str, float]:
    import boto3
    from botocore.config import Config

    run, mnt = work / "run-stage", work / "mnt-stage"
    try:
        twin("up", "mini", "--ceph", "--lustre", run=run)
        twin("lustre", "mount", str(mnt), run=run)
        twin("ceph", "user", "create", "--uid", "bench", "--display-name", "Bench", "--access-key", AK,
             "--secret", SK, run=run)
        endpoint = gateway(RunDir(run).load_manifest()).s3
        s3 = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=AK, aws_secret_access_key=SK,
                          region_name="us-east-1", config=Config(s3={"addressing_style": "path"},
                                                                 max_pool_connections=16))
        s3.create_bucket(Bucket="bench")
        size = total_mib * MiB // objects
        t0 = time.monotonic()
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(lambda i: s3.put_object(Bucket="bench", Key=f"ds/{i:05d}.bin",
                                                  Body=hashlib.sha256(str(i).encode()).digest() * (size // 32)),
                          range(objects)))
        upload = time.monotonic() - t0
        t0 = time.monotonic()
        report = json.loads(twin("stage", "s3://bench/ds/", str(mnt / "ds"), "--workers", str(workers),
                                 "--stripe-count", "1", "--json", run=run))
        took = time.monotonic() - t0
        assert report["copied"] == objects and not report["failed"], report
        return {"stage_s": took, "stage_mib": report["bytes_copied"] / MiB, "upload_s": upload,
                "stage_retries": len(report["retries"])}
    finally:
        subprocess.run([TWIN, "lustre", "umount", str(mnt), "--run-dir", str(run)], capture_output=True)
        subprocess.run([TWIN, "down", "--run-dir", str(run)], capture_output=True)


@contextlib.contextmanager
def netns_lock(network: str) -> Iterator[None]:
    """The machine-wide lock a twin on the namespace network holds (one per machine at a time)."""
    if network != "netns":
        yield
        return
    with open(NETNS_LOCK, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        yield


def run(size_mib: int = 1024, files: int = 10_000, stage_objects: int = 1000, stage_mib: int = 1024,
        topology: str = "rack", network: str = "loopback", workloads_too: bool = True) -> dict[str, float]:
    os.environ.setdefault("TWIN_LUSTRE_NVME_SCALE", "0")
    work = Path(tempfile.mkdtemp(prefix="lustre-bench-", dir=str(ROOT)))
    try:
        with netns_lock(network):
            out = fuse_figures(work, topology, size_mib, files, workloads_too, network)
        out["load_before_stage"] = os.getloadavg()[0]
        if stage_objects:
            out |= stage_figures(work, stage_objects, stage_mib)
        out |= {"size_mib": size_mib, "files": files, "stage_objects": stage_objects}
        return out
    finally:
        shutil.rmtree(work, ignore_errors=True)


def rows(f: dict[str, float]) -> list[tuple[str, str, str, bool]]:
    """(name, value, target, ok) rows for bench/__main__.py."""
    M = MiB
    wr, rr = f["twin_write"] / f["local_write"], f["twin_read"] / f["local_read"]
    out = [
        (f"seq write {f['size_mib']} MiB, stripe count 4", f"{f['twin_write'] / M:.0f} MiB/s = {wr:.0%} of local "
         f"{f['local_write'] / M:.0f} MiB/s", ">= 50 %", wr >= 0.50),
        (f"seq read {f['size_mib']} MiB, stripe count 4", f"{f['twin_read'] / M:.0f} MiB/s = {rr:.0%} of local "
         f"{f['local_read'] / M:.0f} MiB/s", ">= 50 %", rr >= 0.50),
        (f"ls -l of {f['files']} files", f"{f['ls_s']:.2f} s (create {f['create_ms']:.1f} ms/file)", "<= 1 s",
         f["ls_s"] <= 1.0),
    ]
    for key, name, target in (("write100", "unbuffered 100-byte write()s", 50_000),
                              ("cwc", "create+write+close of small files", 1_000),
                              ("stat", "stat", 10_000), ("unlink", "unlink", 0)):
        if f"twin_{key}" in f:
            v, lv = f[f"twin_{key}"], f[f"local_{key}"]
            out.append((f"{name} /s", f"{v:,.0f}/s (local {lv:,.0f}/s)", f">= {target:,}" if target else "reported",
                        v >= target))
    out += workload_rows(f)
    if "fuse_ms" in f:
        out.append(("one operation's parts (ms)", f"FUSE round trip {f['fuse_ms']:.3f}, gRPC round trip "
                    f"{f['grpc_ms']:.2f}, framed round trip {f['framed_ms']:.2f}, MDS Getattr "
                    f"{f['getattr_ms']:.2f}, Create {f['md_create_ms']:.2f}, Setattr {f['md_setattr_ms']:.2f}, Unlink "
                    f"{f['md_unlink_ms']:.2f}, OSS write "
                    f"{f['oss_write_ms']:.2f}", "reported", True))
    if "stage_s" in f:
        out.append((f"twin stage {f['stage_mib']:.0f} MiB in {f['stage_objects']} objects",
                    f"{f['stage_s']:.1f} s ({f['stage_mib'] / f['stage_s']:.1f} MiB/s; upload took "
                    f"{f['upload_s']:.0f} s)", "<= 60 s", f["stage_s"] <= 60))
    return out


def workload_rows(f: dict[str, float]) -> list[tuple[str, str, str, bool]]:
    out = []
    if "twin_dbench" in f:
        r = f["twin_dbench"] / f["local_dbench"]
        out.append(("dbench, 4 clients", f"{f['twin_dbench']:.1f} MB/s = {r:.1%} of local {f['local_dbench']:.0f} MB/s",
                    ">= 10 %", r >= 0.10))
    if "twin_fio_rr" in f:
        out.append(("fio random 4 KiB reads (psync, 1 job)", f"{f['twin_fio_rr']:,.0f} IOPS (local "
                    f"{f['local_fio_rr']:,.0f})", "reported", True))
    if "twin_bonnie_s" in f:
        t, lt = f["twin_bonnie_s"], f["local_bonnie_s"]
        shown = f"{t:.0f} s" if t >= 0 else f"not finished in {BONNIE_LIMIT_S:.0f} s"
        out.append(("bonnie++ -s 256 -n 1", f"{shown} (local {lt:.0f} s)", "<= 180 s", 0 <= t <= BONNIE_LIMIT_S))
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size-mib", type=int, default=1024)
    ap.add_argument("--files", type=int, default=10_000)
    ap.add_argument("--stage-objects", type=int, default=1000, help="0: skip the staging figure")
    ap.add_argument("--stage-mib", type=int, default=1024)
    ap.add_argument("--topology", default="rack")
    ap.add_argument("--network", choices=["loopback", "netns"], default="loopback",
                    help="netns: the client on gpu001 over the storage segment (holds the netns lock)")
    ap.add_argument("--no-workloads", action="store_true", help="skip dbench, fio and bonnie++")
    a = ap.parse_args()
    f = run(a.size_mib, a.files, a.stage_objects, a.stage_mib, a.topology, a.network, not a.no_workloads)
    print(f"lustre FUSE bench ({a.topology}, {a.network}, stripe count 4, NVMe model off; load average "
          f"{os.getloadavg()[0]:.1f})")
    for name, value, target, ok in rows(f):
        print(f"  {name:<40} {value:<60} target {target:<8} {'ok' if ok else 'MISSED'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
