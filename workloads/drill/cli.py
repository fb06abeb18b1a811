"""`twin drill run FILE --seed N --out DIR`: run a failure drill and write its report.

Exit status: 0 when every expectation holds, 1 when one fails (the report says which and why),
2 on a bad drill file or twin (nothing started or injected).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Annotated

import typer

from emulator.cli.common import console, err_console, fail, user_errors
from workloads.drill import report_html
from workloads.drill import runner as drill_runner
from workloads.drill.spec import DrillError, load
from workloads.train.runner import TrainError

app = typer.Typer(no_args_is_help=True, help=__doc__)


def write_report(report: dict, out: Path) -> float:
    """Write report.json and report.html; returns the seconds the HTML took to render."""
    (out / "report.json").write_text(json.dumps(report, indent=1, sort_keys=True))
    t0 = time.perf_counter()
    page = report_html.render(report)
    took = time.perf_counter() - t0
    (out / "report.html").write_text(page)
    return took


@app.command("run")
def run(
    file: Annotated[Path, typer.Argument(help="A drill file, e.g. topologies/drills/gpu_falls_off_bus.yaml.")],
    seed: Annotated[int, typer.Option(help="Seed of every random choice (same seed, same report).")] = 0,
    out: Annotated[Path, typer.Option(help="Directory for report.json, report.html, checkpoints.")] = Path("drill-out"),
    run_dir: Annotated[Path | None, typer.Option(help="Use this running twin instead of starting one.")] = None,
) -> None:
    """Run a drill: start the twin (or join --run-dir), run the workload and its faults, check, report."""
    from workloads.train import real_drill

    if real_drill.is_real(file):  # `workload: {real: true}`: real torchrun ranks, its own runner (issue 18)
        _run_real(file, out, run_dir)
        return
    try:
        drill = load(file)
    except DrillError as e:
        fail(str(e))
    with user_errors():
        try:
            report = drill_runner.run(drill, seed, out, run_dir=run_dir,
                                      log=lambda m: console.print(m, highlight=False))
        except (TrainError, DrillError) as e:
            fail(str(e))
    render_s = write_report(report, out)
    for x in report["expectations"]:
        mark = "[green]PASS[/]" if x["passed"] else "[bold red]FAIL[/]"
        console.print(f"{mark} {x['expectation']} {json.dumps(x['value'])}: {x['why']}", highlight=False)
    m = report.get("metrics")
    if m:
        console.print(f"goodput {m['goodput']:.4f}, checkpoint overhead {m['checkpoint_overhead']:.3%}, "
                      f"{m['failures']} failure(s), {m['time_lost_s'] / 60:.1f} min lost (all modelled)")
    console.print(f"report: {out / 'report.json'}, {out / 'report.html'} (rendered in {render_s:.3f} s)")
    if not report["passed"]:
        err_console.print(f"[bold red]drill {drill.name} failed[/]", highlight=False)
        raise typer.Exit(1)


def _run_real(file: Path, out: Path, run_dir: Path | None) -> None:
    """A real-job drill (workloads/train/real_drill.py): report.json only, the same PASS/FAIL lines."""
    from workloads.train import real_drill
    from workloads.train.real_cli import summary

    with user_errors():
        report = real_drill.run(file, out, run_dir, log=lambda m: console.print(m, highlight=False))
    for line in summary(report["result"]):
        console.print(line, highlight=False)
    for x in report["expectations"]:
        mark = "[green]PASS[/]" if x["passed"] else "[bold red]FAIL[/]"
        console.print(f"{mark} {x['expectation']} {json.dumps(x['value'])}: {x['why']}", highlight=False)
    console.print(f"report: {out / 'report.json'}")
    if not report["passed"]:
        err_console.print(f"[bold red]drill {report['drill']} failed[/]", highlight=False)
        raise typer.Exit(1)
