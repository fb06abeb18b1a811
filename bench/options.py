"""What the bench programs' command lines share: options from keyword defaults, figures one a line."""

from __future__ import annotations

import argparse
from typing import Any


def parse_options(doc: str | None, **defaults: Any) -> argparse.Namespace:
    """The program's options: `--stage-mib N` for `stage_mib=N`, typed as its default; --help prints `doc`
    (the module's docstring, its usage line kept as written)."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    for name, default in defaults.items():
        ap.add_argument("--" + name.replace("_", "-"), type=type(default), default=default)
    return ap.parse_args()


def print_figures(figures: dict[str, float]) -> None:
    """One `name value` line a figure, the values aligned."""
    width = max(map(len, figures), default=0)
    for name, value in figures.items():
        print(f"{name:{width}s} {value:.3f}")
