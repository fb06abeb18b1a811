"""The bench's table: one row per figure, its value, its target and whether it met it."""

from __future__ import annotations


def report(rows: list[tuple[str, str, str, bool]]) -> None:
    width = max(len(r[0]) for r in rows)
    for name, value, target, ok in rows:
        print(f"  {name:<{width}}  {value:<40} target {target:<12} {'ok' if ok else 'MISSED'}", flush=True)
