"""`twin stage s3://BUCKET/PREFIX /MOUNT/PATH`: copy a dataset from the twin's Ceph S3 gateway into its
Lustre mount (workloads/stage/job.py: parallel workers, per-object checksums, resume, retries)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from emulator.cli.common import DEFAULT, RunDirOption, fail
from emulator.manifest import Manifest
from emulator.rundir import RunDir, RunDirError

if TYPE_CHECKING:
    from workloads.stage.job import StageReport


def _parse_url(src: str) -> tuple[str, str]:
    if not src.startswith("s3://") or len(src) <= 5:
        fail(f"{escape(repr(src))}: the source must be s3://BUCKET/PREFIX", 2)
    bucket, _, prefix = src[5:].partition("/")
    if not bucket:
        fail(f"{escape(repr(src))}: no bucket", 2)
    return bucket, prefix


def stage(
    src: Annotated[str, typer.Argument(help="s3://BUCKET/PREFIX: every object under the prefix.")],
    dest: Annotated[str, typer.Argument(help="A directory under a `twin lustre mount` (created if missing).")],
    workers: Annotated[int, typer.Option("--workers", "-w", help="Objects copied in parallel.")] = 8,
    stripe_count: Annotated[int | None, typer.Option(
        "--stripe-count", "-c", help="lfs setstripe -c on the destination (-1: all OSTs).")] = None,
    stripe_size: Annotated[str | None, typer.Option("--stripe-size", "-S", help="lfs setstripe -S (e.g. 4M).")] = None,
    endpoint: Annotated[str | None, typer.Option(help="S3 endpoint URL (default: the twin's ceph-rgw).")] = None,
    access_key: Annotated[str | None, typer.Option(envvar="AWS_ACCESS_KEY_ID", help="S3 access key.")] = None,
    secret_key: Annotated[str | None, typer.Option(envvar="AWS_SECRET_ACCESS_KEY", help="S3 secret key.")] = None,
    attempts: Annotated[int, typer.Option(help="Tries per object before it counts as failed.")] = 8,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
    host: Annotated[str | None, typer.Option(help="--network netns: the client node the job runs on, as a "
                                             "data-preparation job does (default: the first GPU server).")] = None,
    run_dir: RunDirOption = DEFAULT,
) -> None:
    """Stage s3://BUCKET/PREFIX into a Lustre directory: parallel, verified, resumable."""
    import boto3
    from botocore.config import Config
    from botocore.exceptions import BotoCoreError, ClientError
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn, TransferSpeedColumn

    from workloads.stage.job import StageError, StageJob

    bucket, prefix = _parse_url(src)
    manifest, endpoint = _endpoint(run_dir, endpoint)
    if not access_key or not secret_key:
        fail("S3 credentials: give --access-key and --secret-key (or AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY); "
             "`twin ceph user create` makes a user")

    if manifest is not None and manifest.network == "netns":
        # the gateway and Lustre are on the storage segment, which the operator port does not reach:
        # run where a data-preparation job runs, on a client node (before any socket is opened)
        from emulator.procutil import enter_netns
        from services.lustre.client.mount import MountError, client_host

        try:
            enter_netns(client_host(manifest, host)[1] or "")
        except (MountError, OSError) as e:
            fail(f"--network netns: {e}")

    set_layout = None
    if stripe_count is not None or stripe_size is not None:
        set_layout = _layout_setter(run_dir, manifest, dest, stripe_count or 0, stripe_size or "0")

    s3 = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=access_key, aws_secret_access_key=secret_key,
                      region_name="us-east-1",
                      config=Config(retries={"max_attempts": 2, "mode": "standard"}, s3={"addressing_style": "path"},
                                    max_pool_connections=max(10, workers * 2), connect_timeout=5, read_timeout=60))
    progress = Progress(TextColumn("staging"), BarColumn(), DownloadColumn(), TransferSpeedColumn(),
                        TimeRemainingColumn(), disable=quiet or as_json, transient=False)
    task = progress.add_task("stage", total=None)
    job = StageJob(s3, bucket, prefix, os.path.abspath(dest), workers=workers, set_layout=set_layout,
                   attempts=attempts, progress=lambda n: progress.advance(task, n),
                   on_total=lambda n, b: progress.update(task, total=b))
    try:
        with progress:
            report = job.run()
    except StageError as e:
        fail(str(e))
    except ClientError as e:
        fail(f"S3: {e.response.get('Error', {}).get('Code')}: {e.response.get('Error', {}).get('Message', e)}", 1)
    except (BotoCoreError, OSError) as e:
        fail(f"{type(e).__name__}: {e}", 1)
    if as_json:
        print(json.dumps(report.to_dict(), indent=1))
    else:
        _print_report(report, f"s3://{bucket}/{prefix}", dest)
    if report.failed:
        raise typer.Exit(1)


def _endpoint(run_dir: Path, endpoint: str | None) -> tuple[Manifest | None, str]:
    """The twin's manifest (None without a twin) and the S3 endpoint: the one given, else the twin's gateway."""
    from services.ceph.manifest import gateway

    manifest = None
    try:
        manifest = RunDir(run_dir).load_manifest()
    except RunDirError as e:
        if endpoint is None:
            fail(f"{e} (or give --endpoint)")
    if endpoint is None:
        rgw = gateway(manifest) if manifest is not None else None
        if rgw is None:
            fail("this twin runs no Ceph gateway: start it with `twin up TOPOLOGY --ceph`, or give --endpoint")
        endpoint = rgw.s3
    return manifest, endpoint


def _print_report(report: StageReport, src: str, dest: str) -> None:
    mib = report.bytes_copied / 2**20
    print(f"staged {src} -> {dest}: {report.listed} objects listed, {report.copied} copied "
          f"({mib:.1f} MiB in {report.seconds:.1f} s, {mib / max(report.seconds, 1e-9):.1f} MiB/s), "
          f"{report.skipped} already there; verified: {report.md5_verified} by MD5, {report.size_verified} "
          "by size only (multipart without a stored MD5)")
    if report.retries:
        print(f"{len(report.retries)} retries:")
        for r in report.retries:
            print(f"  {r.key} attempt {r.attempt}: {r.error} (waited {r.wait_s:.1f} s)")
    for key, err in report.failed:
        print(f"FAILED {key}: {err}", file=sys.stderr)


def _layout_setter(run_dir: Path, manifest: Manifest | None, dest: str, count: int, size_text: str):  # noqa: ANN202
    """`lfs setstripe -c COUNT -S SIZE DIR` for the destination and the directories staging makes."""
    from services.lustre.client.core import ClientError, LustreClient
    from services.lustre.client.mount import records
    from services.lustre.errors import LustreError
    from services.lustre.layout import StripeSpec, parse_size
    from services.lustre.manifest import LustreSection

    lustre = LustreSection.of(manifest) if manifest is not None else None
    if lustre is None:
        fail("--stripe-count/--stripe-size need the twin's Lustre (`twin up TOPOLOGY --lustre`)")
    try:
        size = parse_size(size_text, "stripe size")
        StripeSpec(count, size, -1).validate(len(lustre.osts))
    except LustreError as e:
        fail(f"lfs setstripe: {e.message}: {e.strerror}", e.errno)
    p = os.path.abspath(dest)
    mount = next((r["mountpoint"] for r in sorted(records(RunDir(run_dir).path), key=lambda r: -len(r["mountpoint"]))
                  if p == r["mountpoint"] or p.startswith(r["mountpoint"].rstrip("/") + "/")), None)
    if mount is None:
        fail(f"{dest} is not under a Lustre mount of this twin (`twin lustre mount MOUNTPOINT` first)", 22)
    client = LustreClient.from_section(lustre, failover_timeout=60.0)

    def set_layout(d: Path) -> None:
        inner = "/" + str(d)[len(mount):].strip("/")
        try:
            client.setstripe(inner, count=count, size=size)
        except ClientError as e:
            raise OSError(e.errno, f"lfs setstripe {d}: {e.strerror}") from None

    return set_layout
