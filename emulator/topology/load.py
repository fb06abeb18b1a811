"""Load a topology by name (a file under <repo>/topologies/) or by path, or say exactly why not."""

from __future__ import annotations

from pathlib import Path

import yaml
from pydantic import ValidationError

from emulator.topology import consistency, locate
from emulator.topology.errors import Problem, TopologyError, TopologyNotFound
from emulator.topology.schema import TopologySpec
from emulator.topology.topology import Topology

TOPOLOGIES_DIR = Path(__file__).resolve().parents[2] / "topologies"


def available_topologies() -> list[str]:
    return sorted(p.stem for p in TOPOLOGIES_DIR.glob("*.yaml"))


def resolve(name_or_path: str | Path) -> Path:
    """An existing file as given, else `<name>[.yaml]` under TOPOLOGIES_DIR."""
    given = Path(name_or_path)
    if given.is_file():
        return given
    if given.is_dir():
        raise TopologyNotFound(f"{given}: is a directory, not a topology file")
    is_name = isinstance(name_or_path, str) and "/" not in name_or_path
    if is_name:
        for candidate in (TOPOLOGIES_DIR / name_or_path, TOPOLOGIES_DIR / f"{name_or_path}.yaml"):
            if candidate.is_file():
                return candidate
        known = ", ".join(available_topologies()) or "none"
        raise TopologyNotFound(
            f"unknown topology {str(name_or_path)!r}: no such file or name (available: {known})"
        )
    raise TopologyNotFound(f"{given}: no such file")


def display(path: Path) -> str:
    """The path as a user would type it: relative to the working directory when inside it."""
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def load_topology(name_or_path: str | Path) -> Topology:
    path = resolve(name_or_path)
    shown = display(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise TopologyError(f"{shown}: cannot read: {exc}") from None
    root, data = _parse(text, shown)
    spec, problems = _validate(data, root)
    if spec is not None:
        problems = consistency.check(spec)
    if problems:
        lines = [
            f"{shown}:{locate.line_of(root, p.loc) or 1}: {p.path or '(top level)'}: {p.message}"
            for p in problems
        ]
        raise TopologyError("\n".join(lines), lines)
    assert spec is not None
    return Topology(spec=spec, source=path)


def _parse(text: str, shown: str) -> tuple[yaml.Node, object]:
    loader = yaml.SafeLoader(text)
    try:
        root = loader.get_single_node()
        if root is None:
            raise TopologyError(f"{shown}:1: empty file, expected a topology mapping")
        data = loader.construct_document(root)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else 1
        what = exc.problem or exc.context
        if exc.problem and exc.context and exc.context_mark:  # where the unclosed thing began
            what += f" ({exc.context} started on line {exc.context_mark.line + 1})"
        raise TopologyError(f"{shown}:{line}: invalid YAML: {what}") from None
    except yaml.YAMLError as exc:
        raise TopologyError(f"{shown}: invalid YAML: {exc}") from None
    finally:
        loader.dispose()
    dups = locate.duplicate_keys(root)
    if dups:
        lines = [f"{shown}:{line}: {key}: key given twice" for line, key in dups]
        raise TopologyError("\n".join(lines), lines)
    if not isinstance(data, dict):
        raise TopologyError(f"{shown}:1: expected a mapping of sections, got {type(data).__name__}")
    return root, data


def _validate(data: object, root: yaml.Node) -> tuple[TopologySpec | None, list[Problem]]:
    try:
        return TopologySpec.model_validate(data), []
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            allowed = locate.fields_at(TopologySpec, tuple(err["loc"][:-1]))
            problems.append(locate.problem_from_pydantic(err, allowed))
        return None, problems
