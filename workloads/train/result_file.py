"""`twin train --result-file`: the job's result document, written whole (a temporary name, then
renamed), so that whoever waits for it (a drill, a Slurm batch script) never reads half of one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def write_result(path: Path | None, doc: dict[str, Any]) -> None:
    if path is None:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(doc, indent=1, default=str))
    tmp.replace(path)
