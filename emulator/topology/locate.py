"""From a field path back to the YAML line it came from, and pydantic errors into plain words.

The YAML is composed into nodes first (they carry marks), then constructed; a path such as
("compute", "leaf_radix") is walked down the node tree. A path that stops early (a missing key)
gets the line of the deepest key it reached, which is where the fix goes.
"""

from __future__ import annotations

import inspect
from typing import Any, get_args

import yaml
from pydantic import BaseModel
from pydantic_core import ErrorDetails

from emulator.topology.errors import Loc, Problem


def line_of(root: yaml.Node | None, loc: Loc) -> int | None:
    """1-based line of `loc` in the document, or None if even the root is unknown."""
    if root is None:
        return None
    node, line = root, root.start_mark.line + 1
    for part in loc:
        if isinstance(node, yaml.MappingNode) and isinstance(part, str):
            match = [(k, v) for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == part]
            if not match:
                break
            key, node = match[-1]  # PyYAML keeps the last of duplicated keys
            line = key.start_mark.line + 1
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
            node = node.value[part]
            line = node.start_mark.line + 1
        else:
            break
    return line


def duplicate_keys(root: yaml.Node | None) -> list[tuple[int, str]]:
    """(line, field path) of keys given twice in one mapping: PyYAML would keep the last."""
    found: list[tuple[int, str]] = []
    stack: list[tuple[yaml.Node, str]] = [(root, "")] if root is not None else []
    while stack:
        node, path = stack.pop()
        if isinstance(node, yaml.MappingNode):
            seen: set[str] = set()
            for key, value in node.value:
                child = f"{path}.{key.value}" if path else str(key.value)
                if isinstance(key, yaml.ScalarNode):
                    if key.value in seen:
                        found.append((key.start_mark.line + 1, child))
                    seen.add(key.value)
                stack.append((value, child))
        elif isinstance(node, yaml.SequenceNode):
            stack.extend((item, f"{path}[{i}]") for i, item in enumerate(node.value))
    return sorted(found)


def fields_at(model: type[BaseModel], loc: Loc) -> list[str] | None:
    """Field names of the section at `loc`, to list what an unknown key could have been."""
    current: type[BaseModel] | None = model
    for part in loc:
        if isinstance(part, int):
            continue  # a list item: `current` is already the item's model
        info = current.model_fields.get(part) if current else None
        current = _model_in(info.annotation) if info else None
    return list(current.model_fields) if current else None


def _model_in(annotation: Any) -> type[BaseModel] | None:
    if inspect.isclass(annotation) and issubclass(annotation, BaseModel):
        return annotation
    for arg in get_args(annotation):  # list[X], X | None, Annotated[X, ...]
        if found := _model_in(arg):
            return found
    return None


def _shown(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return {True: "true", False: "false", None: "null"}[value]  # as YAML spells them
    return repr(value) if isinstance(value, str) else str(value)


def problem_from_pydantic(error: ErrorDetails, allowed: list[str] | None) -> Problem:
    """A pydantic error as `must be ..., got X`, `unknown field`, `required field missing`."""
    loc = tuple(p for p in error["loc"] if not (isinstance(p, str) and "[" in p))  # drop union tags
    kind, msg = error["type"], error["msg"]
    if kind == "extra_forbidden":
        hint = f" (allowed: {', '.join(allowed)})" if allowed else ""
        return Problem(loc, f"unknown field{hint}")
    if kind == "missing":
        return Problem(loc, "required field missing")
    msg = msg.removeprefix("Value error, ")
    ctx = error.get("ctx", {})
    if kind == "too_short":
        least, got = ctx.get("min_length"), ctx.get("actual_length")
        return Problem(loc, f"must have at least {least} item(s), got {got}")
    if kind in ("model_type", "dict_type"):
        msg = "must be a mapping"
    elif msg.startswith("Input should be "):
        msg = "must be " + msg.removeprefix("Input should be ")
    elif msg.startswith("String should match pattern"):
        msg = "must match " + msg.removeprefix("String should match pattern ")
    else:
        msg = msg[:1].lower() + msg[1:]
    value = error.get("input")
    if value is None or isinstance(value, str | int | float | bool):
        msg += f", got {_shown(value)}"
    elif isinstance(value, list | dict):
        msg += f", got a {'list' if isinstance(value, list) else 'mapping'}"
    return Problem(loc, msg)
