"""The twin's Ceph daemon path under boto3: median latency of 4 KiB and 64 MiB PUT/GET through the
RGW gateway daemon (gateway → monitor → OSD daemons), 4 KiB ops/s with 16 concurrent clients, and
RBD 64 MiB write/read through the monitor's CephRbd service (if present).

    .venv/bin/python -m bench.ceph_daemons [--small N] [--big N] [--run-dir DIR]

Starts its own `twin up mini --ceph` in a temporary run directory (unless --run-dir names a
running one) and stops it at the end.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import boto3
from botocore.config import Config

from emulator import lifecycle
from emulator.client import Twin
from emulator.rundir import RunDir

AK, SK = "BENCHKEY000000000001", "benchsecret0000000000000000000000000001"


def _client(endpoint: str) -> Any:
    return boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=AK, aws_secret_access_key=SK,
                        region_name="us-east-1",
                        config=Config(retries={"max_attempts": 0}, s3={"addressing_style": "path"},
                                      max_pool_connections=32, read_timeout=120))


def _timed(fn: Any) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def run_bench(admin: Any, small: int, big: int, rbd: bool = True) -> dict[str, float]:
    from clustertwin.v1 import ceph_pb2 as pb

    try:
        admin.call("UserCreate", pb.CephMonUserCreateRequest(user=pb.CephRgwUser(uid="bench", display_name="bench",
                                                                      access_key=AK, secret_key=SK)))
    except Exception:  # noqa: BLE001 - already there in a reused twin
        pass
    s3 = _client(admin.s3_endpoint())
    bucket = f"bench-{os.getpid()}"
    s3.create_bucket(Bucket=bucket)
    out: dict[str, float] = {}
    body4k = os.urandom(4096)
    s3.put_object(Bucket=bucket, Key="warm", Body=body4k)
    puts = [_timed(lambda i=i: s3.put_object(Bucket=bucket, Key=f"k4-{i}", Body=body4k)) for i in range(small)]
    gets = [_timed(lambda i=i: s3.get_object(Bucket=bucket, Key=f"k4-{i}")["Body"].read()) for i in range(small)]
    out["put_4k_ms"] = statistics.median(puts) * 1e3
    out["get_4k_ms"] = statistics.median(gets) * 1e3

    clients = [_client(admin.s3_endpoint()) for _ in range(16)]
    n_each = max(small // 4, 5)

    def worker(c: Any, j: int, op: str) -> None:
        for i in range(n_each):
            if op == "put":
                c.put_object(Bucket=bucket, Key=f"c{j}-{i}", Body=body4k)
            else:
                c.get_object(Bucket=bucket, Key=f"c{j}-{i}")["Body"].read()

    for op in ("put", "get"):
        t0 = time.perf_counter()
        with ThreadPoolExecutor(16) as ex:
            list(ex.map(lambda jc, op=op: worker(jc[1], jc[0], op), enumerate(clients)))
        out[f"{op}_4k_16c_ops_s"] = 16 * n_each / (time.perf_counter() - t0)

    body64 = os.urandom(64 << 20)
    bp = [_timed(lambda i=i: s3.put_object(Bucket=bucket, Key=f"k64-{i}", Body=body64)) for i in range(big)]
    bg = []
    for i in range(big):
        t0 = time.perf_counter()
        got = s3.get_object(Bucket=bucket, Key=f"k64-{i}")["Body"].read()
        bg.append(time.perf_counter() - t0)
        assert got == body64
    out["put_64m_ms"] = statistics.median(bp) * 1e3
    out["get_64m_ms"] = statistics.median(bg) * 1e3
    out["put_64m_mib_s"] = 64 / statistics.median(bp)
    out["get_64m_mib_s"] = 64 / statistics.median(bg)

    if rbd:
        rbd = admin.rbd()
        name = f"bench{os.getpid()}"
        rbd.create("rbd", name, 1 << 30)
        w = [_timed(lambda: rbd.write("rbd", name, 0, body64)) for _ in range(big)]
        r = [_timed(lambda: rbd.read("rbd", name, 0, len(body64))) for _ in range(big)]
        out["rbd_write_64m_mib_s"] = 64 / statistics.median(w)
        out["rbd_read_64m_mib_s"] = 64 / statistics.median(r)
        rbd.remove("rbd", name)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--small", type=int, default=40, help="4 KiB PUTs/GETs to time")
    ap.add_argument("--big", type=int, default=3, help="64 MiB PUTs/GETs to time")
    ap.add_argument("--run-dir", type=Path, default=None, help="a running twin with --ceph (default: start one)")
    ap.add_argument("--clock-scale", type=float, default=1.0, help="of the twin it starts (Ceph's real timers at 1)")
    ap.add_argument("--no-rbd", action="store_true", help="skip the RBD figures (a twin without CephRbd)")
    ap.add_argument("--keep", type=Path, default=None, help="start the twin in this directory and leave its logs")
    args = ap.parse_args()
    if args.run_dir:
        res = run_bench(Twin.connect(args.run_dir).ceph(), args.small, args.big, not args.no_rbd)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            run = RunDir(args.keep or Path(tmp) / "ceph")
            lifecycle.up("mini", run, ceph=True, clock_scale=args.clock_scale, timeout=90)
            try:
                time.sleep(2.0)
                res = run_bench(Twin.connect(run.path).ceph(), args.small, args.big, not args.no_rbd)
            finally:
                lifecycle.down(run)
    for k, v in res.items():
        print(f"{k:24s} {v:10.1f}")


if __name__ == "__main__":
    main()
