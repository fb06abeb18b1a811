"""No hand-written function is over 80 lines (issue 14): a longer one is split into named steps.

Generated code (protos/gen), tests and hidden directories (.venv, run dirs) are left out."""

from __future__ import annotations

import ast
import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MOST = 80
SKIP = {ROOT / "protos" / "gen", ROOT / "tests"}


def hand_written() -> list[Path]:
    found = []
    for folder, dirs, files in os.walk(ROOT):
        here = Path(folder)
        dirs[:] = [d for d in dirs if not d.startswith(".") and here / d not in SKIP]  # .venv is not walked
        found += [here / f for f in files if f.endswith(".py")]
    return sorted(found)


def too_long(path: Path, root: Path = ROOT) -> list[str]:
    """FILE:LINE NAME (N lines) for each function in `path` over the limit."""
    tree = ast.parse(path.read_text(), filename=str(path))
    return [f"{path.relative_to(root)}:{node.lineno} {node.name} ({node.end_lineno - node.lineno + 1} lines)"
            for node in ast.walk(tree)
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            and node.end_lineno is not None and node.end_lineno - node.lineno + 1 > MOST]


def test_the_walk_reads_the_code_and_leaves_out_generated_and_tests() -> None:
    files = {str(p.relative_to(ROOT)) for p in hand_written()}
    assert "emulator/network/plan.py" in files and "workloads/drill/runner.py" in files
    assert not [f for f in files if f.startswith(("protos/gen/", "tests/", ".venv/"))]


def test_a_function_over_the_limit_is_named(tmp_path: Path) -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(MOST))
    long = tmp_path / "long.py"
    long.write_text(f"def fine():\n    pass\n\n\ndef sprawling():\n{body}\n")
    assert too_long(long, tmp_path) == ["long.py:5 sprawling (81 lines)"]


def test_no_hand_written_function_is_over_80_lines() -> None:
    offenders = [line for path in hand_written() for line in too_long(path)]
    assert not offenders, "split these into named steps:\n" + "\n".join(offenders)
