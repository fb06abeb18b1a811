"""A drill's dataset: seeded objects made in the twin's S3 gateway, staged into the Lustre mount by
`twin stage`'s job (workloads/stage/job.py), then every file read back and checked against its
content's MD5. Staging is real I/O: its duration and retries are wall-clock facts; the objects, bytes
and verification are reproducible from the seed. Used by the model's drills (runner.py) and the real
job's (workloads/train/real_drill.py)."""

from __future__ import annotations

import hashlib
import random
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from services.ceph.manifest import gateway

Log = Callable[[str], None]
STAGE_READ_TIMEOUT_S = 15.0  # a GET that blocks longer (PGs below min_size) is retried by the stage job


def lustre_layout(twin: Any, mount: Path, stripe_count: int) -> Callable[[Path], None]:
    """`lfs setstripe -c N DIR` through the MDS (new files in DIR inherit it)."""
    from services.lustre.client.core import LustreClient

    client = LustreClient.from_manifest(twin.manifest, failover_timeout=60.0)

    def set_layout(d: Path) -> None:
        client.setstripe("/" + str(d)[len(str(mount)):].strip("/"), count=stripe_count, size=0)

    return set_layout


def stage_user(name: str, twin: Any) -> tuple[str, str]:
    """The S3 user drill `name` stages with (`twin ceph user create`, through the operator port): its
    access key and secret."""
    digest = hashlib.sha1(name.encode()).hexdigest()[:10]
    key, secret = "DRILLSTAGE" + digest.upper(), "drill-stage-secret"
    exe = Path(sys.executable).with_name("twin")
    r = subprocess.run([str(exe) if exe.exists() else "twin", "ceph", "user", "create",
                        "--uid", f"drill-stage-{digest}", "--display-name", "drill staging", "--access-key", key,
                        "--secret", secret, "--run-dir", str(twin.run.path)],
                       capture_output=True, text=True, timeout=30)
    if r.returncode != 0 and "exist" not in (r.stdout + r.stderr).lower():
        raise RuntimeError(f"twin ceph user create: {(r.stderr or r.stdout).strip()[:300]}")
    return key, secret


def stage_dataset(name: str, ds: dict[str, Any], stripe_count: int, seed: int, twin: Any, mount: Path,
                  on_bytes: Callable[[int, int], None], log: Log,
                  creds: tuple[str, str] | None = None) -> dict[str, Any]:
    """Make drill `name`'s dataset `ds` (spec.DATASET_DEFAULTS' keys) in the S3 gateway (seeded), stage
    it into MOUNT/datasets/NAME, verify every file. `creds`: stage_user's, made already."""
    import boto3
    from botocore.config import Config

    from workloads.stage.job import StageJob

    rgw = gateway(twin.manifest)
    if rgw is None:
        raise RuntimeError("the drill stages from the S3 gateway: the twin runs no Ceph (`twin: {ceph: true}`)")
    key, secret = creds or stage_user(name, twin)
    s3 = boto3.client("s3", endpoint_url=rgw.s3, aws_access_key_id=key, aws_secret_access_key=secret,
                      region_name="us-east-1",
                      config=Config(retries={"max_attempts": 2, "mode": "standard"}, s3={"addressing_style": "path"},
                                    max_pool_connections=max(10, 2 * ds["workers"]), connect_timeout=5,
                                    read_timeout=STAGE_READ_TIMEOUT_S))
    try:
        s3.create_bucket(Bucket=ds["bucket"])
    except s3.exceptions.BucketAlreadyOwnedByYou:
        pass
    rng = random.Random(f"{seed}:dataset")
    size = ds["object_kib"] * 1024
    keys = [f"{ds['prefix']}shard-{i:05d}.bin" for i in range(ds["objects"])]
    md5 = {}
    w0 = time.monotonic()
    for k in keys:
        body = rng.randbytes(size)
        md5[k] = hashlib.md5(body).hexdigest()
        s3.put_object(Bucket=ds["bucket"], Key=k, Body=body)
    upload_s = time.monotonic() - w0
    total = size * len(keys)
    log(f"dataset: {len(keys)} objects x {ds['object_kib']} KiB in s3://{ds['bucket']}/{ds['prefix']} "
        f"({upload_s:.1f} s wall to upload)")
    dest = mount / "datasets" / name
    shutil.rmtree(dest, ignore_errors=True)
    dest.parent.mkdir(parents=True, exist_ok=True)
    lock = threading.Lock()
    done = [0]

    def progress(n: int) -> None:
        with lock:
            done[0] += n
            on_bytes(done[0], total)

    job = StageJob(s3, ds["bucket"], ds["prefix"], dest, workers=ds["workers"],
                   set_layout=lustre_layout(twin, mount, stripe_count), progress=progress)
    rep = job.run()
    # every staged file read back from Lustre and checked against the content's MD5 (the S3 ETag)
    bad = []
    for k in keys:
        try:
            got = hashlib.md5(job.target(k).read_bytes()).hexdigest()
        except OSError as e:
            got = f"unreadable ({e.strerror})"
        if got != md5[k]:
            bad.append(f"{k}: {got}")
    d = rep.to_dict()
    log(f"staged {d['copied']} of {d['listed']} objects ({d['bytes_copied'] / 2**20:.1f} MiB) into {dest} in "
        f"{d['seconds']:.1f} s wall, {len(d['retries'])} retries, {len(d['failed'])} failed; "
        f"{len(keys) - len(bad)} of {len(keys)} files verified against their MD5")
    return {"source": f"s3://{ds['bucket']}/{ds['prefix']}", "dest": f"LUSTRE:/{dest.relative_to(mount)}",
            "path": str(dest), "objects": len(keys),
            "bytes": total, "listed": d["listed"], "copied": d["copied"], "skipped": d["skipped"],
            "failed": d["failed"], "md5_verified": d["md5_verified"], "size_verified": d["size_verified"],
            "verified_after_stage": len(keys) - len(bad), "mismatched": bad,
            "retries": d["retries"], "retry_wait_s": round(sum(x["wait_s"] for x in d["retries"]), 3),
            "wall_s": round(d["seconds"], 3), "upload_wall_s": round(upload_s, 3),
            "note": "staging is real I/O on the twin: wall_s, retries and retry_wait_s (time lost waiting to "
                    "retry) are wall-clock facts; the objects, bytes and verification are reproducible"}


def main() -> int:
    """`python -m workloads.drill.dataset JSON`: stage_dataset in a client node's network namespace
    (under `--network netns` the gateway and Lustre are on the storage segment, which the machine's
    own namespace does not reach), as `twin stage --host` runs. JSON: run_dir, netns, name, dataset,
    stripe_count, seed, mount, key, secret. Prints the report as JSON; progress goes to stderr."""
    import json

    from emulator.client import Twin
    from emulator.procutil import enter_netns

    a = json.loads(sys.argv[1])
    enter_netns(a["netns"])   # before any socket is opened
    twin = Twin.connect(a["run_dir"])
    rep = stage_dataset(a["name"], a["dataset"], a["stripe_count"], a["seed"], twin, Path(a["mount"]),
                        lambda _d, _t: None, lambda m: print(m, file=sys.stderr, flush=True), (a["key"], a["secret"]))
    print(json.dumps(rep))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
