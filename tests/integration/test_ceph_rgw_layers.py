"""The RGW modules import one way (issue 14): the store below the operations, the operations below the
gateway, and the gateway imported by the HTTP front and the daemon alone. Read from the modules' own
import statements (TYPE_CHECKING ones included: a type-only import is still an arrow back up)."""

from __future__ import annotations

import ast
from pathlib import Path

RGW = Path(__file__).resolve().parents[2] / "services" / "ceph" / "rgw"
PACKAGE = "services.ceph.rgw"
OPERATIONS = {"buckets", "objects", "multipart", "copy_object", "delete_multi", "versioning", "tagging",
              "lifecycle", "authz", "object_lock"}


def imports() -> dict[str, set[str]]:
    """Each RGW module → the RGW modules it imports."""
    out: dict[str, set[str]] = {}
    for path in RGW.glob("*.py"):
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module == PACKAGE:
                found |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(PACKAGE + "."):
                found.add(node.module.removeprefix(PACKAGE + ".").split(".")[0])
        out[path.stem] = found
    return out


def test_no_import_cycle() -> None:
    graph = imports()
    done: set[str] = set()

    def visit(m: str, path: list[str]) -> None:
        assert m not in path, f"import cycle: {' -> '.join([*path[path.index(m):], m])}"
        if m in done:
            return
        for n in graph.get(m, ()):
            visit(n, [*path, m])
        done.add(m)

    for m in graph:
        visit(m, [])


def test_gateway_is_imported_by_the_front_alone() -> None:
    assert {m for m, deps in imports().items() if "gateway" in deps} == {"http", "daemon"}


def test_store_is_below_every_operation() -> None:
    graph = imports()
    assert not graph["store"] & (OPERATIONS | {"gateway"}), "the store imports no operation"
    assert all("store" in graph[op] for op in OPERATIONS), "every operation works through the store"
