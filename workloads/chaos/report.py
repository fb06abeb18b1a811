"""The thrasher's report: report.json and one self-contained HTML page (the drill report's style and
SVG helpers): the checks, operations per kind, each fault with its time, target and recovery, what
was lost, the time `twin down` took, and what was left behind."""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

from workloads.drill.report_html import COLORS, PAD, W, _axis, _svg, _x

RECOVERY = "#ffb74d"


def write(report: dict[str, Any], out: Path) -> tuple[Path, Path]:
    out.mkdir(parents=True, exist_ok=True)
    j, h = out / "report.json", out / "report.html"
    j.write_text(json.dumps(report, indent=1, sort_keys=True, default=str))
    h.write_text(render(report))
    return j, h


def lost(report: dict[str, Any]) -> int:
    detail = report.get("checks", {}).get("every acknowledged write reads back byte-identical", {}).get("detail")
    return int(detail.get("total", 0)) if isinstance(detail, dict) else 0


def timeline_svg(r: dict[str, Any]) -> str:
    faults = [f for f in r.get("faults", []) if "injected_s" in f]
    if not faults:
        return ""
    domains = sorted({f["domain"] for f in faults})
    t_max = max(r.get("workload_s") or 0, max(f.get("cleared_s", f["injected_s"]) + (f.get("recovery_s") or 0)
                                              for f in faults)) or 1.0
    row = 22
    h = 40 + row * len(domains)
    parts = [_axis(t_max, h, "min")]
    for i, d in enumerate(domains):
        y = 10 + i * row
        parts.append(f'<text x="5" y="{y + 13}">{html.escape(d)}</text>')
        for f in (f for f in faults if f["domain"] == d):
            x0 = _x(f["injected_s"], t_max)
            end = f.get("cleared_s", f["injected_s"])
            x1 = _x(end, t_max)
            x2 = _x(end + (f.get("recovery_s") or 0), t_max)
            tip = html.escape(f"{f['id']} {f['kind']} {f['target']} at {f['injected_s']:.1f} s: "
                              f"{f.get('effect', '')}; recovered in {f.get('recovery_s', '?')} s")
            parts.append(f'<rect x="{x0:.1f}" y="{y}" width="{max(2, x1 - x0):.1f}" height="16" '
                         f'fill="{COLORS["fault"]}"><title>{tip}</title></rect>')
            parts.append(f'<rect x="{x1:.1f}" y="{y}" width="{max(0, x2 - x1):.1f}" height="16" fill="{RECOVERY}">'
                         f'<title>{tip}</title></rect>')
    return _svg("".join(parts), h)


def _table(head: list[str], rows: list[list[Any]], classes: list[str] | None = None) -> str:
    th = "".join(f"<th>{html.escape(h)}</th>" for h in head)
    body = "".join(f'<tr class="{(classes or [""] * len(rows))[i]}">'
                   + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>" for i, row in enumerate(rows))
    return f"<table><tr>{th}</tr>{body}</table>"


def render(r: dict[str, Any]) -> str:
    checks = r.get("checks", {})
    check_rows = [["PASS" if c["passed"] else "FAIL", name, json.dumps(c["detail"], default=str)[:400]]
                  for name, c in checks.items()]
    ops = r.get("workload", {}).get("operations", {})
    op_rows = [[k, *(f"{n}: {v}" for n, v in c.items())] for k, c in sorted(ops.items())]
    width = max((len(x) for x in op_rows), default=1)
    op_rows = [x + [""] * (width - len(x)) for x in op_rows]
    fault_rows = [[f["id"], f"{f.get('injected_s', f['at_s']):.1f}", f["kind"], f["target"],
                   f"{f['cleared_s']:.1f}" if "cleared_s" in f else "-",
                   f"{f['recovery_s']:.2f}" if f.get("recovery_s") is not None else "-", f.get("lag_s", "-"),
                   "; ".join(f.get("errors", [])) or f.get("effect", "")] for f in r.get("faults", [])]
    fault_classes = ["bad" if f.get("errors") or f.get("recovered") is False else "" for f in r.get("faults", [])]
    recov = [f["recovery_s"] for f in r.get("faults", []) if f.get("recovery_s") is not None]
    summary = (f"{len(r.get('faults', []))} faults, recovery median "
               f"{sorted(recov)[len(recov) // 2]:.2f} s, max {max(recov):.2f} s" if recov else "no recoveries measured")
    data = html.escape(json.dumps(r, indent=1, sort_keys=True, default=str))
    ok = r.get("passed")
    return f"""<!doctype html><html><head><meta charset="utf-8"><title>chaos seed {r['seed']}</title>
<style>body{{font-family:sans-serif;max-width:{W + 2 * PAD}px;margin:2em auto}} .ok td:first-child{{color:#2e7d32}}
.bad td{{color:#c62828}} td,th{{padding:2px 8px;vertical-align:top;text-align:left}}</style></head><body>
<h1>Chaos run, seed {r['seed']}: {"passed" if ok else "FAILED"}</h1>
<p>Topology {html.escape(r['topology'])} with fabric, Ceph, Lustre and Slurm, network {html.escape(r['network'])};
{r['minutes']:g} min of workload; plan {html.escape(str(r.get('plan_digest', '-')))}.
{html.escape(r.get('replay', ''))}.</p>
<p><b>Lost: {lost(r)}</b> acknowledged writes. <b>twin down: {r.get('down_s', '-')} s.</b>
Leftovers: {html.escape(json.dumps(r.get('leftovers', {})) if r.get('leftovers') else 'none')}.
{html.escape(r.get('error', ''))}</p>
<h2>Checks</h2>{_table(["", "check", "detail"], check_rows, ["ok" if c["passed"] else "bad" for c in checks.values()])}
<h2>Operations</h2>{_table(["kind"] + [""] * (width - 1), op_rows)}
<h2>Faults ({html.escape(summary)})</h2>
<p>Red: injected until cleared; orange: until the part was healthy again (seconds of wall time). "late": how
long after its planned time a fault's injection or clear began (each fault runs in its own thread).</p>
{timeline_svg(r)}
{_table(["id", "at s", "kind", "target", "cleared s", "recovery s", "late s", "effect"], fault_rows, fault_classes)}
<details><summary>report.json</summary><pre>{data}</pre></details></body></html>"""
