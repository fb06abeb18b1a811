"""A drill report as one self-contained HTML page: inline SVG plots, no scripts, no external files.

Plots: the timeline (job states, faults, reactions, checkpoints) over modelled time; training
progress (step against modelled time, across attempts); time lost per failure, by cause; where
the elapsed time went (useful, checkpoints, lost); for a study, goodput against checkpoint interval
with Young's and Daly's optima.
"""

from __future__ import annotations

import html
import json
from typing import Any

W, H, PAD = 860, 200, 50
COLORS = {"useful": "#2e7d32", "checkpoint": "#1565c0", "lost": "#c62828", "fault": "#c62828",
          "reaction": "#ef6c00", "down": "#bdbdbd"}


def _x(t: float, t_max: float) -> float:
    return PAD + (W - 2 * PAD) * (t / t_max if t_max else 0)


def _svg(body: str, h: int = H) -> str:
    return f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{h}" font-family="sans-serif" ' \
           f'font-size="11">{body}</svg>'


def _axis(t_max: float, h: int, unit: str = "h") -> str:
    div = 3600 if unit == "h" else 60
    out = [f'<line x1="{PAD}" y1="{h - 25}" x2="{W - PAD}" y2="{h - 25}" stroke="#444"/>']
    for i in range(6):
        t = t_max * i / 5
        out.append(f'<text x="{_x(t, t_max):.1f}" y="{h - 10}" text-anchor="middle">{t / div:.1f} {unit}</text>')
    return "".join(out)


def timeline_svg(r: dict[str, Any]) -> str:
    t_max = max((r.get("metrics") or {}).get("wall_s", 0.0), max((e["t_s"] for e in r["timeline"]), default=1.0))
    parts = [_axis(t_max, H), '<text x="5" y="45">job</text>', '<text x="5" y="85">faults</text>',
             '<text x="5" y="125">reactions</text>']
    for a in r.get("attempts", []):
        x0, x1 = _x(a["start_s"], t_max), _x(a["start_s"] + a["modelled_s"], t_max)
        color = COLORS["useful"] if a["status"] == "completed" else "#66bb6a"
        parts.append(f'<rect x="{x0:.1f}" y="30" width="{max(1, x1 - x0):.1f}" height="22" fill="{color}">'
                     f'<title>attempt {a["attempt"]}: steps {a["first_step"]}..{a["last_step"]} ({a["status"]})'
                     f'</title></rect>')
    for e in r["timeline"]:
        x = _x(e["t_s"], t_max)
        if e["kind"] == "checkpoint":
            parts.append(f'<line x1="{x:.1f}" y1="28" x2="{x:.1f}" y2="54" stroke="{COLORS["checkpoint"]}">'
                         f'<title>checkpoint step {e.get("step")}</title></line>')
        elif e["kind"] == "fault":
            parts.append(f'<path d="M{x:.1f},70 l6,12 l-12,0 z" fill="{COLORS["fault"]}"><title>'
                         f'{html.escape(e["name"])}: {html.escape(e["detail"])}</title></path>'
                         f'<text x="{x + 8:.1f}" y="82">{html.escape(e["name"])}</text>')
        elif e["kind"] in ("reaction", "failed", "resumed"):
            label = e.get("detail") or e.get("reason") or f"resumed at step {e.get('step')}"
            parts.append(f'<circle cx="{x:.1f}" cy="120" r="5" fill="{COLORS["reaction"]}"><title>'
                         f'{html.escape(e["kind"])}: {html.escape(str(label))}</title></circle>')
    return _svg("".join(parts))


def progress_svg(r: dict[str, Any]) -> str:
    pts = [p for a in r.get("attempts", []) for p in a.get("progress", [])]
    if not pts:
        return ""
    t_max = max(p[1] for p in pts) or 1.0
    s_max = max(p[0] for p in pts) or 1
    parts = [_axis(t_max, H), f'<text x="5" y="20">step (max {s_max})</text>']
    for a in r["attempts"]:
        path = " ".join(f"{_x(t, t_max):.1f},{H - 30 - (H - 60) * s / s_max:.1f}" for s, t in a["progress"])
        if path:
            parts.append(f'<polyline points="{path}" fill="none" stroke="{COLORS["useful"]}" stroke-width="2"/>')
    return _svg("".join(parts))


def losses_svg(r: dict[str, Any]) -> str:
    fails = r.get("failures", [])
    if not fails:
        return ""
    keys = ("lost_work_s", "detect_s", "requeue_s", "reboot_s", "restore_s")
    colors = ("#c62828", "#ad1457", "#ef6c00", "#6d4c41", "#1565c0")
    top = max(sum(f.get(k) or 0 for k in keys) for f in fails) or 1.0
    parts, y = [], 20
    for f in fails:
        x = 160.0
        parts.append(f'<text x="5" y="{y + 14}">{html.escape(f["fault"])} (step {f["step"]})</text>')
        for k, c in zip(keys, colors, strict=True):
            w = (W - 220) * (f.get(k) or 0) / top
            parts.append(f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="18" fill="{c}"><title>{k}: '
                         f'{(f.get(k) or 0) / 60:.1f} min</title></rect>')
            x += w
        parts.append(f'<text x="{x + 5:.1f}" y="{y + 14}">{sum(f.get(k) or 0 for k in keys) / 60:.1f} min</text>')
        y += 26
    legend = "".join(f'<rect x="{160 + i * 120}" y="{y + 5}" width="10" height="10" fill="{c}"/>'
                     f'<text x="{175 + i * 120}" y="{y + 14}">{k[:-2].replace("_", " ")}</text>'
                     for i, (k, c) in enumerate(zip(keys, colors, strict=True)))
    return _svg("".join(parts) + legend, y + 30)


def budget_svg(r: dict[str, Any]) -> str:
    m = r.get("metrics")
    if not m or not m.get("wall_s"):
        return ""
    useful, ck = m["useful_s"], m["checkpoint_s"]
    other = max(0.0, m["wall_s"] - useful - ck)
    parts, x = [], float(PAD)
    for name, v, c in (("useful", useful, COLORS["useful"]), ("checkpoints", ck, COLORS["checkpoint"]),
                       ("lost / down", other, COLORS["lost"])):
        w = (W - 2 * PAD) * v / m["wall_s"]
        parts.append(f'<rect x="{x:.1f}" y="10" width="{w:.1f}" height="30" fill="{c}"><title>{name}: '
                     f'{v / 3600:.2f} h</title></rect>')
        x += w
    parts.append(f'<text x="{PAD}" y="60">goodput {m["goodput"]:.3f} · checkpoint overhead '
                 f'{m["checkpoint_overhead"]:.3%} · time lost to failures {m["time_lost_s"] / 60:.1f} min</text>')
    return _svg("".join(parts), 70)


def study_svg(s: dict[str, Any]) -> str:
    pts = s["points"]
    t_max = max(max(p["interval_s"] for p in pts), s["daly_s"], s["young_s"]) * 1.05
    g_min = min(min(p["goodput_model"], p["goodput_simulated"]) for p in pts)
    lo = max(0.0, g_min - 0.02)

    def y(g: float) -> float:
        return H - 30 - (H - 60) * (g - lo) / (1 - lo) if lo < 1 else H - 30

    parts = [_axis(t_max, H, "min"), f'<text x="5" y="20">goodput ({lo:.2f}..1)</text>']
    line = " ".join(f"{_x(p['interval_s'], t_max):.1f},{y(p['goodput_model']):.1f}" for p in pts)
    parts.append(f'<polyline points="{line}" fill="none" stroke="{COLORS["useful"]}" stroke-width="2"/>')
    for p in pts:
        parts.append(f'<circle cx="{_x(p["interval_s"], t_max):.1f}" cy="{y(p["goodput_simulated"]):.1f}" r="3" '
                     f'fill="#555"><title>simulated {p["goodput_simulated"]:.4f} at {p["interval_s"] / 60:g} min'
                     f'</title></circle>')
    for name, t, c in (("Young", s["young_s"], "#1565c0"), ("Daly", s["daly_s"], "#c62828")):
        x = _x(t, t_max)
        parts.append(f'<line x1="{x:.1f}" y1="25" x2="{x:.1f}" y2="{H - 25}" stroke="{c}" stroke-dasharray="4"/>'
                     f'<text x="{x + 3:.1f}" y="35" fill="{c}">{name} {t / 60:.1f} min</text>')
    return _svg("".join(parts))


def render(r: dict[str, Any]) -> str:
    ok = r.get("passed")
    rows = "".join(f'<tr class="{"ok" if x["passed"] else "bad"}"><td>{"PASS" if x["passed"] else "FAIL"}</td>'
                   f'<td>{html.escape(x["expectation"])}: {html.escape(json.dumps(x["value"]))}</td>'
                   f'<td>{html.escape(x["why"])}</td></tr>' for x in r.get("expectations", []))
    sections = [("Timeline (faults, reactions, job states; modelled time)", timeline_svg(r) if r["timeline"] else ""),
                ("Training progress", progress_svg(r)), ("Where the time went", budget_svg(r)),
                ("Time lost per failure", losses_svg(r))]
    if r.get("study"):
        s = r["study"]
        sections.append((f"Checkpoint interval study: MTBF {s['mtbf_s'] / 3600:g} h, checkpoint "
                         f"{s['checkpoint_write_s']:.1f} s, restart {s['restart_s'] / 60:g} min", study_svg(s)))
    body = "".join(f"<h2>{html.escape(t)}</h2>{svg}" for t, svg in sections if svg)
    faults = "".join(f"<li><b>{html.escape(f['name'])}</b> at {f['t_s'] / 60:.1f} min (step {f['step']}): "
                     f"{html.escape(f['effect'])}</li>" for f in r.get("faults", []))
    st = r.get("stage")
    if st:
        retries = "".join(f"<li>{html.escape(x['key'])} attempt {x['attempt']}: {html.escape(x['error'][:200])} "
                          f"(waited {x['wait_s']:.1f} s)</li>" for x in st["retries"])
        body = (f"<h2>Dataset staging (before training; wall-clock)</h2><p>{html.escape(st['source'])} &rarr; "
                f"{html.escape(st['dest'])}: {st['copied']} of {st['objects']} objects copied "
                f"({st['bytes'] / 2**20:.1f} MiB) in {st['wall_s']:.1f} s, {st['verified_after_stage']} verified "
                f"against their MD5, {len(st['failed'])} failed, {len(st['retries'])} retries "
                f"({st['retry_wait_s']:.1f} s lost waiting)</p>" + (f"<ul>{retries}</ul>" if retries else "") + body)
    data = html.escape(json.dumps({k: v for k, v in r.items() if k != "wall"}, indent=1, sort_keys=True))
    return f"""<!doctype html><html><head><meta charset="utf-8"><title>drill {html.escape(r['drill'])}</title>
<style>body{{font-family:sans-serif;max-width:900px;margin:2em auto}} .ok td:first-child{{color:#2e7d32}}
.bad td:first-child{{color:#c62828;font-weight:bold}} td{{padding:2px 8px;vertical-align:top}}</style></head><body>
<h1>Drill {html.escape(r['drill'])}: {"passed" if ok else "FAILED"}</h1>
<p>{html.escape(r.get('description', ''))}</p>
<p>Seed {r['seed']}, topology {html.escape(r['topology'])}. {html.escape(r['modelled'])}.</p>
<h2>Expectations</h2><table>{rows}</table><h2>Faults</h2><ul>{faults or '<li>none</li>'}</ul>{body}
<details><summary>report.json (without wall-clock fields)</summary><pre>{data}</pre></details></body></html>"""
