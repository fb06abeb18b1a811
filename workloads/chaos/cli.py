"""`twin chaos --seed N --minutes M --out DIR`: thrash the whole twin under a verifying workload.

Starts `rack --fabric --ceph --lustre` and Slurm (on --network netns by default, as root), runs S3,
Lustre, Slurm and GPU-lease workloads while a seeded schedule kills daemons, takes cables down,
cuts hosts, stops OSDs, kills an OSS and injects Xids, then checks that every acknowledged write
reads back byte-identical, every part is healthy, no fault is left, `twin down` takes at most 15 s
and nothing is left behind. Writes DIR/report.json and DIR/report.html.

Exit status: 0 when every check passes, 1 when one fails (named on stderr), 2 on bad options.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from emulator.cli.common import console, err_console, fail


def chaos(
    seed: Annotated[int, typer.Option(help="Seed of the fault schedule (same seed, same schedule).")] = 1,
    minutes: Annotated[float, typer.Option(help="Minutes of workload under faults (faults end at 3/4).")] = 10.0,
    out: Annotated[Path, typer.Option(help="Directory for report.json, report.html and the workload's files.")
                   ] = Path("chaos-report"),
    network: Annotated[str, typer.Option(help="netns (root; faults on links and hosts too) or loopback.")
                       ] = "netns",
    run_dir: Annotated[Path | None, typer.Option(help="Run directory of the twin it starts (default OUT/run).")
                       ] = None,
) -> None:
    """Thrash the whole twin (rack, fabric, Ceph, Lustre, Slurm) under a seeded fault schedule while a
    workload checks every byte; report; exit 1 if any check fails."""
    import os

    from workloads.chaos import report as chaos_report
    from workloads.chaos import run as chaos_run

    if not 0.5 <= minutes <= 240:
        fail(f"--minutes must be between 0.5 and 240, not {minutes:g}")
    if network not in ("netns", "loopback"):
        fail(f"--network must be netns or loopback, not {network!r}")
    if os.geteuid() != 0:
        fail("twin chaos needs root: it runs the fabric (OpenSM), Lustre's FUSE mounts and Slurm")
    out = out.resolve()
    report = chaos_run.run(seed, minutes, out, network=network, run_dir=run_dir.resolve() if run_dir else None,
                           log=lambda m: console.print(m, highlight=False, soft_wrap=True))
    paths = chaos_report.write(report, out)
    ops = report.get("workload", {}).get("operations", {})
    console.print("operations: " + ", ".join(f"{k} {c.get('ok', c.get('leased', 0))}" for k, c in sorted(ops.items())),
                  highlight=False, soft_wrap=True)
    recov = [f["recovery_s"] for f in report.get("faults", []) if f.get("recovery_s") is not None]
    console.print(f"faults {len(report.get('faults', []))}, recoveries {len(recov)}"
                  + (f" (max {max(recov):.1f} s)" if recov else "")
                  + f", lost {chaos_report.lost(report)}, twin down {report.get('down_s')} s", highlight=False)
    console.print(f"report: {paths[0]}, {paths[1]}", highlight=False)
    failed = [name for name, c in report.get("checks", {}).items() if not c["passed"]]
    if failed or not report.get("passed"):
        err_console.print("[bold red]chaos run failed:[/] " + "; ".join(failed or ["see the report"]),
                          highlight=False, soft_wrap=True)
        raise typer.Exit(1)
