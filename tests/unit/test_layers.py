"""The layers of docs/ARCHITECTURE.md, checked on the code's own imports (every import statement,
those inside functions and under TYPE_CHECKING too): the emulator imports no service and no
workload, services import neither the CLI nor the workloads, and no module imports itself back
through others (no cycle)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("emulator", "services", "workloads", "bench")


def modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def imports(path: Path, name: str, mods: dict[str, Path]) -> set[str]:
    """The project modules `path` imports: `from pkg import sub` is the submodule, `from pkg import name`
    the package (its __init__)."""
    out = set()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(up + ([base] if base else []))
            subs = {f"{base}.{a.name}" for a in node.names} & set(mods)
            out |= subs or {base}
    return {m for m in out if m.split(".")[0] in PACKAGES}


def face(path: Path) -> bool:
    """A package's __init__ that defines nothing and only hands names on (not a room of its own)."""
    tree = ast.parse(path.read_text())
    return path.name == "__init__.py" and not any(
        isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Assign)) for n in tree.body)


def graph() -> dict[str, set[str]]:
    mods = modules()
    rooms = {name for name, path in mods.items() if not face(path)}
    return {name: {m for m in imports(path, name, mods) if m in rooms and m != name}
            for name, path in mods.items() if name in rooms}


def core(name: str) -> bool:
    return name.split(".")[0] == "emulator"


def test_the_emulator_imports_no_service_and_no_workload() -> None:
    wrong = sorted(f"{m} -> {t}" for m, ts in graph().items() if core(m) for t in ts
                   if t.split(".")[0] in ("services", "workloads"))
    assert not wrong, "the emulator reaches up into a service or a workload:\n" + "\n".join(wrong)


def test_services_import_neither_the_cli_nor_the_client_nor_workloads() -> None:
    """A service's own sub-app may use the CLI's toolkit (emulator.cli.common), nothing else of the CLI."""
    wrong = sorted(f"{m} -> {t}" for m, ts in graph().items() if m.startswith("services.") for t in ts
                   if t.startswith(("workloads", "emulator.cli", "emulator.client")) and t != "emulator.cli.common")
    assert not wrong, "a service reaches up:\n" + "\n".join(wrong)


def test_no_import_cycle() -> None:
    g = graph()
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(v: str) -> None:   # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in g[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in g:
        if v not in index:
            visit(v)
    assert not cycles, "modules that import each other: " + "; ".join(" <-> ".join(c) for c in cycles)


def test_the_checks_see_what_they_check() -> None:
    g = graph()
    assert "emulator.service" in g["emulator.plan"] and "emulator.manifest" in g["emulator.plan"]
    assert any(t.startswith("emulator.") for t in g["services.gpu_node.daemon"])
