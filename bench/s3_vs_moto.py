"""The twin's S3 gateway against moto's server, side by side, with the same boto3 workload.

The headline is the twin as users start it, `twin up mini --ceph`: the RGW daemon in front of the
monitor and 15 OSD daemons, every EC 8+3 chunk written to and read from its OSD daemon (a messenger
message and a record in the OSD's log; the gateway moves the data pool's chunks to and from the OSDs
itself, and commits each object's metadata to the monitor). It runs twice,
`--storage-timing fast` (no modelled device waits) and `model` (the seed's HDD/SSD physics, the
default). Second line: the gateway in process (`python -m services.ceph.rgw.http`,
its EC chunks in memory). And `python -m moto.server`. All run at once, each workload alternating
over them so that all see the same machine:
- 4 KiB PutObject, then GetObject, for `seconds` each, from 16 threads with one boto3 client apiece
  (path-style, s3v4), counted as operations per second; the CPU each server process spent per
  operation (/proc/<pid>/stat deltas: gateway, monitor, OSD daemons) says where the time goes;
- 64 MiB PutObject then GetObject of a few objects from one client, as MiB/s; the same against
  bench/s3_floor.py, a server that only moves bytes, whose ratio to moto is the most any server
  could show over this client on this machine.
Medians of `repeats` runs. Then the in-process gateway is profiled (cProfile over the same request
path, 4 KiB and 64 MiB) and its EC encode/decode throughput measured.

    python -m bench --only s3          (or: python -m bench.s3_vs_moto [--seconds 5] [--repeats 3])
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import io
import json
import logging
import multiprocessing
import os
import pstats
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path

import boto3
from botocore.client import BaseClient
from botocore.config import Config

from bench import procstat
from clustertwin.v1 import ceph_pb2 as pb_ceph
from emulator.process import stop_process

ROOT = Path(__file__).resolve().parent.parent
MIB = 1 << 20
SMALL = 4 << 10
BIG = 64 << 20
CLIENTS = 16
KEYS = 64  # 4 KiB keys per client, overwritten in turn
ACCESS, SECRET = "AKIABENCH0000000", "bench-secret"


@dataclass(frozen=True)
class Endpoint:
    name: str
    url: str
    pid: int  # the server process (its CPU time per operation is reported)
    procs: dict[str, list[int]] = field(default_factory=dict)  # a deployed twin's: role -> pids (CPU per role)

    def roles(self) -> dict[str, list[int]]:
        return self.procs or {"server": [self.pid]}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_port(port: int, proc: subprocess.Popen[bytes], log: Path, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}: {log.read_text()[-2000:]}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return
        time.sleep(0.1)
    raise RuntimeError(f"nothing listens on port {port} after {timeout:g} s")


@contextlib.contextmanager
def server(name: str, tmp: Path) -> Iterator[Endpoint]:
    port = _free_port()
    if name == "twin":
        users = tmp / "users.json"
        users.write_text(json.dumps([{"uid": "bench", "access_key": ACCESS, "secret_key": SECRET}]))
        cmd = [sys.executable, "-m", "services.ceph.rgw.http", "--port", str(port), "--users", str(users)]
    elif name == "floor":
        cmd = [sys.executable, "-m", "bench.s3_floor", "--port", str(port)]
    else:
        cmd = [sys.executable, "-m", "moto.server", "-p", str(port)]
    log = (tmp / f"{name}.log").open("wb")  # not a pipe: werkzeug logs every request and would block on it
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    try:
        _wait_port(port, proc, tmp / f"{name}.log")
        yield Endpoint(name, f"http://127.0.0.1:{port}", proc.pid)
    finally:
        stop_process(proc.pid, 10)   # the one stop path: SIGTERM, grace, SIGKILL, reap
        log.close()


@contextlib.contextmanager
def daemon_twin(tmp: Path, timing: str = "model") -> Iterator[Endpoint]:
    """The twin as it is deployed (`twin up mini --ceph --storage-timing TIMING`): the RGW daemon over the
    monitor and 15 OSD daemons, every chunk a messenger message and a file, every object's metadata a
    committed row."""
    from emulator import lifecycle
    from emulator.rundir import RunDir
    from services.ceph.sdk import CephAdmin

    run = RunDir(tmp / f"daemons-{timing}")
    lifecycle.up("mini", run, ceph=True, storage_timing=timing, timeout=120)
    try:
        admin = CephAdmin(run.path)
        admin.mon.UserCreate(pb_ceph.CephMonUserCreateRequest(user=pb_ceph.CephRgwUser(
            uid="bench", display_name="bench", access_key=ACCESS, secret_key=SECRET)), timeout=30)
        daemons = json.loads(run.daemons.read_text())["daemons"]
        procs = {"rgw": [int(daemons["ceph-rgw"]["pid"])], "mon": [int(daemons["ceph-mon"]["pid"])],
                 "osds": [int(d["pid"]) for n, d in daemons.items() if n.startswith("osd.")]}
        yield Endpoint(f"deployed-{timing}", admin.s3_endpoint(), procs["rgw"][0], procs)
    finally:
        lifecycle.down(run)


def client(url: str) -> BaseClient:
    return boto3.session.Session().client(
        "s3", endpoint_url=url, region_name="us-east-1", aws_access_key_id=ACCESS, aws_secret_access_key=SECRET,
        config=Config(signature_version="s3v4", s3={"addressing_style": "path"}, retries={"max_attempts": 1},
                      max_pool_connections=4),
    )


def _worker(conn: Connection, proc: int, threads: int) -> None:
    """A client process: `threads` threads, each with its own boto3 client per endpoint, run what the
    parent asks (prepare, put, get) and send back the operations each finished inside the window."""
    clients: dict[str, list[BaseClient]] = {}
    small = os.urandom(SMALL)
    while True:
        cmd = conn.recv()
        if cmd is None:
            return
        what, url, bucket, start_at, seconds = cmd
        if url not in clients:
            clients[url] = [client(url) for _ in range(threads)]
        cs = clients[url]
        counts = [0] * threads
        errors: list[BaseException] = []

        def run(t: int, c: BaseClient, what: str = what, bucket: str = bucket, start_at: float = start_at,
                seconds: float = seconds, counts: list[int] = counts, errors: list[BaseException] = errors) -> None:
            prefix = f"p{proc}t{t}"
            try:
                if what == "prepare":  # every key a GET will ask for exists, every connection is open
                    for n in range(KEYS):
                        c.put_object(Bucket=bucket, Key=f"{prefix}/k{n}", Body=small)
                    return
                time.sleep(max(0.0, start_at - time.time()))
                end, n = start_at + seconds, 0
                while time.time() < end:
                    key = f"{prefix}/k{n % KEYS}"
                    if what == "put":
                        c.put_object(Bucket=bucket, Key=key, Body=small)
                    else:
                        c.get_object(Bucket=bucket, Key=key)["Body"].read()
                    if time.time() <= end:
                        n += 1
                counts[t] = n
            except BaseException as e:  # noqa: BLE001 - reported to the parent
                errors.append(e)

        ts = [threading.Thread(target=run, args=(t, c)) for t, c in enumerate(cs)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        conn.send((sum(counts), repr(errors[0]) if errors else ""))


class Clients:
    """16 boto3 clients as `procs` processes × threads, so that the clients' own Python (signing,
    parsing) is not one GIL that caps what any server can be shown to do."""

    def __init__(self, procs: int, total: int = CLIENTS) -> None:
        ctx = multiprocessing.get_context("spawn")
        self.conns, self.procs = [], []
        for p in range(procs):
            parent, child = ctx.Pipe()
            proc = ctx.Process(target=_worker, args=(child, p, total // procs + (p < total % procs)), daemon=True)
            proc.start()
            self.conns.append(parent)
            self.procs.append(proc)

    def run(self, what: str, url: str, bucket: str, seconds: float = 0.0) -> int:
        start_at = time.time() + 0.5
        for c in self.conns:
            c.send((what, url, bucket, start_at, seconds))
        total = 0
        for c in self.conns:
            n, err = c.recv()
            if err:
                raise RuntimeError(f"{what} against {url}: {err}")
            total += n
        return total

    def close(self) -> None:
        for c in self.conns:
            c.send(None)
        for p in self.procs:
            p.join(10)


def _cpu(e: Endpoint) -> dict[str, float]:
    return {role: sum(procstat.cpu_seconds(p) for p in pids) for role, pids in e.roles().items()}


def small_ops(eps: list[Endpoint], clients: Clients, seconds: float, repeats: int) -> dict[str, dict[str, float]]:
    """4 KiB PUT and GET windows, the endpoints alternating so that all see the same machine; the CPU
    each of an endpoint's processes spent per operation, as `{op}_cpu_{role}_ms`."""
    samples: dict[str, dict[str, list[float]]] = {e.name: {} for e in eps}
    for e in eps:
        client(e.url).create_bucket(Bucket="small")
        clients.run("prepare", e.url, "small")
    for _ in range(repeats):
        for op in ("put", "get"):
            for e in eps:
                cpu0 = _cpu(e)
                n = clients.run(op, e.url, "small", seconds)
                cpu1 = _cpu(e)
                samples[e.name].setdefault(f"{op}_ops", []).append(n / seconds)
                for role in cpu0:
                    ms = (cpu1[role] - cpu0[role]) / max(n, 1) * 1000
                    samples[e.name].setdefault(f"{op}_cpu_{role}_ms", []).append(ms)
    return {name: {k: statistics.median(v) for k, v in d.items()} for name, d in samples.items()}


def big_objects(eps: list[Endpoint], repeats: int, count: int) -> dict[str, dict[str, float]]:
    big = os.urandom(BIG)
    samples: dict[str, dict[str, list[float]]] = {e.name: {} for e in eps}
    cs = {e.name: client(e.url) for e in eps}
    for e in eps:
        cs[e.name].create_bucket(Bucket="big")  # (the floor server answers anything with a 200)
    for r in range(repeats):
        for e in eps:
            c, got_ = cs[e.name], samples[e.name]
            for op in ("put", "get"):
                cpu0, t0 = _cpu(e), time.perf_counter()
                for n in range(count):
                    if op == "put":
                        c.put_object(Bucket="big", Key=f"big{n}", Body=big)
                        continue
                    got = c.get_object(Bucket="big", Key=f"big{n}")["Body"].read()
                    if r == 0 and n == 0 and got != big:
                        raise RuntimeError(f"{e.name}: a 64 MiB object read back differs")
                got_.setdefault(f"big_{op}_mibs", []).append(count * BIG / MIB / (time.perf_counter() - t0))
                cpu1 = _cpu(e)
                for role in cpu0:   # CPU seconds per 64 MiB object
                    got_.setdefault(f"big_{op}_cpu_{role}_s", []).append((cpu1[role] - cpu0[role]) / count)
    return {name: {k: statistics.median(v) for k, v in d.items()} for name, d in samples.items()}


# -- inside the gateway --------------------------------------------------------------------------


def ec_throughput(seconds: float = 1.0) -> dict[str, float]:
    """The data pool's codec on RGW's 4 MiB stripes: encode, decode with all data chunks, decode
    with 3 data chunks lost (real Reed–Solomon reconstruction)."""
    from services.ceph.erasure import ErasureCode
    from services.ceph.memtune import tune_malloc

    tune_malloc()  # as the gateway process does
    ec = ErasureCode(8, 3)
    data = os.urandom(4 * MIB)
    chunks = ec.encode(data)
    out: dict[str, float] = {"backend": 0.0}
    cases = {
        "encode": lambda: ec.encode(data),
        "decode": lambda: ec.decode(dict(enumerate(chunks)), len(data)),
        "decode_3_lost": lambda: ec.decode({i: c for i, c in enumerate(chunks) if i not in (0, 3, 7)}, len(data)),
    }
    for name, fn in cases.items():
        n, t0 = 0, time.perf_counter()
        while time.perf_counter() - t0 < seconds:
            fn()
            n += 1
        out[name] = n * 4 / (time.perf_counter() - t0)
    out["backend_name"] = ec.backend  # type: ignore[assignment]
    return out


# Where gateway time goes: by the file of the Python function that spent it; C built-ins (hashes,
# CRCs, joins, pyeclib) are charged by name, or else to the file of the function that called them.
_BY_NAME = (
    ("pyeclib", "EC encode/decode"),
    ("openssl_md5", "MD5 for the ETag"),
    ("openssl_sha256", "SigV4 (HMACs, payload SHA-256) + x-amz-checksum"),
    ("hmac", "SigV4 (HMACs, payload SHA-256) + x-amz-checksum"),
)
_BY_FILE = (
    ("erasure.py", "EC encode/decode"),
    ("pg.py", "PGs: chunk CRC-32Cs, placement, chunk store"),
    ("chunkstore.py", "PGs: chunk CRC-32Cs, placement, chunk store"),
    ("cluster.py", "PGs: chunk CRC-32Cs, placement, chunk store"),
    ("pool.py", "PGs: chunk CRC-32Cs, placement, chunk store"),
    ("hashing.py", "PGs: chunk CRC-32Cs, placement, chunk store"),
    ("crush.py", "PGs: chunk CRC-32Cs, placement, chunk store"),
    ("replication.py", "PGs: chunk CRC-32Cs, placement, chunk store"),
    ("rados.py", "PGs: chunk CRC-32Cs, placement, chunk store"),
    ("sigv4.py", "SigV4 (HMACs, payload SHA-256) + x-amz-checksum"),
    ("sigv2.py", "SigV4 (HMACs, payload SHA-256) + x-amz-checksum"),
    ("presign.py", "SigV4 (HMACs, payload SHA-256) + x-amz-checksum"),
    ("auth.py", "SigV4 (HMACs, payload SHA-256) + x-amz-checksum"),
    ("chunked.py", "SigV4 (HMACs, payload SHA-256) + x-amz-checksum"),
    ("received.py", "waiting for digests taken as the body arrived (MD5, SHA-256, CRC)"),
    ("checksums.py", "SigV4 (HMACs, payload SHA-256) + x-amz-checksum"),
    ("policy.py", "authorization (policy, ACL)"),
    ("authz.py", "authorization (policy, ACL)"),
    ("acl.py", "authorization (policy, ACL)"),
    ("gateway.py", "gateway: striping, copies, index, S3 logic"),
    ("bucket_index.py", "gateway: striping, copies, index, S3 logic"),
    ("entity.py", "gateway: striping, copies, index, S3 logic"),
    ("s3_xml.py", "gateway: striping, copies, index, S3 logic"),
    ("conditional.py", "gateway: striping, copies, index, S3 logic"),
    ("json", "gateway: striping, copies, index, S3 logic"),
)


def _area(path: str, func: str) -> str | None:
    for needle, area in _BY_NAME:
        if needle in func:
            return area
    if path == "~":
        return None
    for needle, area in _BY_FILE:
        if needle in path:
            return area
    return "other Python (datetime, stdlib)"


def profile_gateway(big_objects: int = 2) -> dict[str, dict[str, float]]:
    """cProfile the gateway in process (server in a thread, which is where `gw.handle` runs) while
    boto3 drives the 4 KiB and 64 MiB workloads; share of the gateway's own time per area."""
    from services.ceph.memtune import tune_malloc
    from services.ceph.rgw.cluster_setup import DATA_POOL, INDEX_POOL, rgw_cluster
    from services.ceph.rgw.gateway import Gateway
    from services.ceph.rgw.http import start_in_thread
    from services.ceph.rgw.users import User, Users

    tune_malloc()  # as the gateway process does (`python -m services.ceph.rgw.http`)
    gw = Gateway(rgw_cluster(12), Users([User("bench", "bench", ACCESS, SECRET)]), DATA_POOL, INDEX_POOL)
    srv = start_in_thread(gw)
    logging.getLogger("asyncio").setLevel(logging.CRITICAL)  # stop() cancels keep-alive handlers: not news
    prof = cProfile.Profile()
    handle = gw.handle

    def profiled(req):  # type: ignore[no-untyped-def]
        prof.enable()
        try:
            return handle(req)
        finally:
            prof.disable()

    gw.handle = profiled  # type: ignore[method-assign]
    results: dict[str, dict[str, float]] = {}
    try:
        c = client(f"http://127.0.0.1:{srv.port}")
        c.create_bucket(Bucket="prof")
        for label, size, n in (("4 KiB", SMALL, 400), ("64 MiB", BIG, big_objects)):
            prof = cProfile.Profile()
            body = os.urandom(size)
            for i in range(n):
                c.put_object(Bucket="prof", Key=f"p{i}", Body=body)
                c.get_object(Bucket="prof", Key=f"p{i}")["Body"].read()
            results[label] = _breakdown(prof, n)
    finally:
        srv.stop()
    return results


def _breakdown(prof: cProfile.Profile, n: int) -> dict[str, float]:
    st = pstats.Stats(prof, stream=io.StringIO())
    areas: dict[str, float] = {}
    total = 0.0
    for (path, _line, func), (_cc, _nc, tt, _ct, callers) in st.stats.items():  # type: ignore[attr-defined]
        total += tt
        area = _area(path, func)
        if area is not None:
            areas[area] = areas.get(area, 0.0) + tt
            continue
        caller_tt = sum(c[2] for c in callers.values()) or 1.0  # a built-in: charged to its callers
        for (cpath, _cl, cfunc), c in callers.items():
            a = _area(cpath, cfunc) or "other Python (datetime, stdlib)"
            areas[a] = areas.get(a, 0.0) + tt * c[2] / caller_tt
    out = {area: t / total * 100 for area, t in areas.items() if total}
    out["ms_per_put_get"] = total / n * 1000
    return out


FIGURES = (("put_ops", "4 KiB PUT, 16 clients", "ops/s"), ("get_ops", "4 KiB GET, 16 clients", "ops/s"),
           ("big_put_mibs", "64 MiB PUT", "MiB/s"), ("big_get_mibs", "64 MiB GET", "MiB/s"))


def _line(d: dict[str, float], m: dict[str, float] | None) -> str:
    def one(key: str, unit: str) -> str:
        return f"{d[key]:,.0f} {unit}" + (f" ({d[key] / m[key]:.2f}x moto)" if m and m[key] else "")
    return (f"4 KiB PUT {one('put_ops', 'ops/s')}, GET {one('get_ops', 'ops/s')}; "
            f"64 MiB PUT {one('big_put_mibs', 'MiB/s')}, GET {one('big_get_mibs', 'MiB/s')}")


def _where(d: dict[str, float]) -> str:
    """CPU per operation per process of a deployed twin: what its time is spent on."""
    def roles(prefix: str, suffix: str, scale: float, unit: str) -> str:
        return ", ".join(f"{role} {d[f'{prefix}{role}{suffix}'] * scale:.2f}" for role in ("rgw", "mon", "osds")) + unit
    return (f"4 KiB PUT {roles('put_cpu_', '_ms', 1, ' ms')}; GET {roles('get_cpu_', '_ms', 1, ' ms')}; "
            f"64 MiB PUT {roles('big_put_cpu_', '_s', 1, ' s')}; GET {roles('big_get_cpu_', '_s', 1, ' s')}")


def run(seconds: float = 5.0, repeats: int = 3, big_count: int = 3,
        client_procs: int = 4) -> list[tuple[str, str, str, bool]]:
    print(f"S3: the deployed twin (`twin up mini --ceph`: RGW daemon <-> 15 OSD daemons, metadata on the monitor, "
          f"EC 8+3) vs moto's server; 4 KiB: {CLIENTS} boto3 clients ({client_procs} processes x threads), "
          f"{seconds:g} s windows; "
          f"64 MiB: one client, {big_count} objects; medians of {repeats} runs, all servers up, alternating:",
          flush=True)
    with (tempfile.TemporaryDirectory() as tmp, server("twin", Path(tmp)) as inproc,
          server("moto", Path(tmp)) as moto, server("floor", Path(tmp)) as floor,
          daemon_twin(Path(tmp), "fast") as fast, daemon_twin(Path(tmp), "model") as model):
        eps = [fast, model, moto, inproc]
        clients = Clients(client_procs)
        try:
            res = small_ops(eps, clients, seconds, repeats)
        finally:
            clients.close()
        big = big_objects([*eps, floor], repeats, big_count)
    for name in res:
        res[name].update(big[name])
    m, f = res["moto"], big["floor"]
    print(f"  deployed twin, --storage-timing fast:  {_line(res[fast.name], m)}", flush=True)
    print(f"  deployed twin, --storage-timing model: {_line(res[model.name], m)}", flush=True)
    print(f"  moto server:                           {_line(m, None)}", flush=True)
    print(f"  in-process gateway (python -m services.ceph.rgw.http, EC chunks in its memory, no OSD daemons): "
          f"{_line(res[inproc.name], m)}", flush=True)
    print(f"  floor (a server that only moves bytes, same boto3 client): 64 MiB PUT {f['big_put_mibs']:,.0f} MiB/s "
          f"= {f['big_put_mibs'] / m['big_put_mibs']:.2f}x moto, GET {f['big_get_mibs']:,.0f} MiB/s "
          f"= {f['big_get_mibs'] / m['big_get_mibs']:.2f}x moto: the best ratio any server could show here", flush=True)
    for e in (fast, model):
        print(f"  CPU per op, {e.name} (rgw, mon, the 15 OSDs together): {_where(res[e.name])}", flush=True)
    print(f"  CPU per op, moto: 4 KiB PUT {m['put_cpu_server_ms']:.2f} ms, GET {m['get_cpu_server_ms']:.2f} ms; "
          f"in process: PUT {res[inproc.name]['put_cpu_server_ms']:.2f} ms, "
          f"GET {res[inproc.name]['get_cpu_server_ms']:.2f} ms", flush=True)
    rows = []
    for name, target in ((fast.name, 1.0), (model.name, 0.0), (inproc.name, 1.0)):
        t = res[name]
        for key, label, unit in FIGURES:
            ratio = t[key] / m[key] if m[key] else float("inf")
            goal = target
            rows.append((f"{label}: {name} / moto", f"{ratio:.2f}x ({t[key]:,.0f} vs {m[key]:,.0f} {unit})",
                         f">= {goal:g}x" if goal else "(device model)", ratio >= goal))
    ec = ec_throughput()
    print(f"  EC 8+3 ({ec.pop('backend_name')}, 4 MiB stripes, one core): encode {ec['encode']:,.0f} MiB/s, "
          f"decode {ec['decode']:,.0f} MiB/s (all data chunks), {ec['decode_3_lost']:,.0f} MiB/s (3 lost)")
    for label, areas in profile_gateway().items():
        ms = areas.pop("ms_per_put_get")
        parts = ", ".join(f"{a} {p:.0f}%" for a, p in sorted(areas.items(), key=lambda x: -x[1]) if p >= 1)
        print(f"  in-process gateway time, {label} PUT+GET ({ms:.2f} ms in gw.handle per pair): {parts}")
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--big-objects", type=int, default=3)
    ap.add_argument("--client-procs", type=int, default=4)
    args = ap.parse_args()
    from bench.report import report

    report(run(args.seconds, args.repeats, args.big_objects, args.client_procs))


if __name__ == "__main__":
    main()
