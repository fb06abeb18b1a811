"""protos/lint.py: each rule catches its violation in a .proto compiled by protoc, a clean file passes,
and the cleaned protos of the repository pass (what `make lint` runs)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from protos import lint

REPO = Path(__file__).resolve().parents[2]

# A file that follows every rule; each case below breaks exactly one.
CLEAN = """
syntax = "proto3";
package clustertwin.v1;

enum WidgetColor { WIDGET_COLOR_UNSPECIFIED = 0; WIDGET_COLOR_RED = 1; }
message Widget { string id = 1; WidgetColor color = 2; optional uint32 size = 3; }
message WidgetListWidgetsRequest { int32 page_size = 1; string page_token = 2; }
message WidgetListWidgetsResponse { repeated Widget widgets = 1; string next_page_token = 2; }
message WidgetGetWidgetRequest { string id = 1; }
message WidgetGetWidgetResponse { Widget widget = 1; }
message WidgetEvent { uint64 seq = 1; }
message WidgetWatchEventsRequest { uint64 after_seq = 1; }
message WidgetWatchEventsResponse { WidgetEvent event = 1; }

service WidgetService {
  rpc ListWidgets(WidgetListWidgetsRequest) returns (WidgetListWidgetsResponse);
  rpc GetWidget(WidgetGetWidgetRequest) returns (WidgetGetWidgetResponse);
  rpc WatchEvents(WidgetWatchEventsRequest) returns (stream WidgetWatchEventsResponse);
}
"""

CASES = {
    "rpc name": (
        ("rpc GetWidget(WidgetGetWidgetRequest) returns (WidgetGetWidgetResponse);",
         "rpc GetWidget(WidgetGetWidgetRequest) returns (WidgetGetWidgetReply);"),
        ("message WidgetGetWidgetResponse {", "message WidgetGetWidgetReply {"),
        "widget.proto:WidgetGetWidgetReply: RPC WidgetService.GetWidget uses WidgetGetWidgetReply; "
        "its own message is named WidgetGetWidgetResponse",
    ),
    "shared request": (
        ("rpc GetWidget(WidgetGetWidgetRequest)", "rpc GetWidget(WidgetListWidgetsRequest)"),
        "widget.proto:WidgetListWidgetsRequest: serves several RPCs (ListWidgets, GetWidget)",
    ),
    "prefix": (
        ("message WidgetEvent {", "message Event {"),
        ("WidgetEvent event = 1;", "Event event = 1;"),
        "widget.proto:Event: name does not start with the component prefix 'Widget'",
    ),
    "enum value prefix": (
        ("WIDGET_COLOR_RED = 1", "RED = 1"),
        "widget.proto:WidgetColor: value RED does not start with WIDGET_COLOR_",
    ),
    "has_ bool": (
        ("optional uint32 size = 3;", "bool has_size = 3; uint32 size = 4;"),
        "widget.proto:Widget: bool has_size marks presence",
    ),
    "page_size": (
        ("int32 page_size = 1; ", ""),
        "widget.proto:WidgetListWidgetsRequest: List RPC ListWidgets has no `int32 page_size`",
    ),
    "page_token": (
        ("string page_token = 2;", ""),
        "widget.proto:WidgetListWidgetsRequest: List RPC ListWidgets has no `string page_token`",
    ),
    "next_page_token": (
        ("string next_page_token = 2;", ""),
        "widget.proto:WidgetListWidgetsResponse: List RPC ListWidgets has no `string next_page_token`",
    ),
    "rendered text": (
        ("optional uint32 size = 3;", "optional uint32 size = 3; string text = 4;"),
        "widget.proto:Widget: string text carries pre-rendered text",
    ),
    "WatchEvents": (
        ("rpc WatchEvents(", "rpc Follow("),
        ("WidgetWatchEventsRequest)", "WidgetFollowRequest)"),
        ("WidgetWatchEventsResponse)", "WidgetFollowResponse)"),
        ("message WidgetWatchEventsRequest", "message WidgetFollowRequest"),
        ("message WidgetWatchEventsResponse", "message WidgetFollowResponse"),
        "widget.proto:WidgetService: service has no server-streaming WatchEvents RPC",
    ),
    "WatchEvents not streaming": (
        ("returns (stream WidgetWatchEventsResponse)", "returns (WidgetWatchEventsResponse)"),
        "widget.proto:WidgetService: service has no server-streaming WatchEvents RPC",
    ),
}


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "widget.proto"
    path.write_text(text)
    return path


def problems(tmp_path: Path, text: str) -> list[str]:
    path = write(tmp_path, text)
    return [p.replace(str(path), "widget.proto") for p in lint.lint([str(path)], root=tmp_path)]


def test_clean_file_passes(tmp_path: Path) -> None:
    assert problems(tmp_path, CLEAN) == []


@pytest.mark.parametrize("case", CASES)
def test_each_rule_catches_its_violation(tmp_path: Path, case: str) -> None:
    *edits, expected = CASES[case]
    text = CLEAN
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new)
    found = problems(tmp_path, text)
    assert found and all(p.startswith(expected.split(": ")[0]) for p in found), found
    assert any(p.startswith(expected) for p in found), found


def test_prefix_is_the_file_names_first_word() -> None:
    assert [lint.prefix_of(f"{n}.proto") for n in ("gpu_node", "fabric", "ceph", "lustre")] == \
        ["Gpu", "Fabric", "Ceph", "Lustre"]


def test_command_prints_violations_and_exits_1(tmp_path: Path) -> None:
    path = write(tmp_path, CLEAN.replace("message WidgetEvent {", "message Event {").replace(
        "WidgetEvent event", "Event event"))
    run = subprocess.run([sys.executable, str(REPO / "protos/lint.py"), str(path)], cwd=tmp_path,
                         capture_output=True, text=True)
    assert run.returncode == 1
    assert run.stdout == f"{path}:Event: name does not start with the component prefix 'Widget'\n"


def test_every_repository_proto_passes_and_make_lint_lints_them_all() -> None:
    """`make lint` runs the lint on $(PROTOS), every .proto of the repository, and each passes."""
    makefile = (REPO / "Makefile").read_text()
    assert re.search(r"^PROTOS\s*:=\s*\$\(wildcard protos/clustertwin/v1/\*\.proto\)$", makefile, re.M)
    assert re.search(r"^\t\$\(BIN\)/python protos/lint.py \$\(PROTOS\)$", makefile, re.M), "make lint lints no protos"
    files = sorted((REPO / "protos/clustertwin/v1").glob("*.proto"))
    assert {f.name for f in files} >= {"gpu_node.proto", "fabric.proto", "ceph.proto", "lustre.proto"}
    assert lint.lint([str(f) for f in files]) == []


def renamed(text: str, rpcs: tuple[str, ...], prefix: str) -> str:
    """`text` with the request/response pair of each of `rpcs` named <prefix><Rpc>Request/Response."""
    for rpc in rpcs:
        text = text.replace(f"Widget{rpc}Re", f"{prefix}{rpc}Re")
    return text


def two_services(first: str) -> str:
    """CLEAN with a second service WidgetAdmin that has a GetWidget and a WatchEvents of its own (CLEAN's
    messages and rpc lines of those two, its pairs named WidgetAdmin<Rpc>); CLEAN's service's pairs renamed
    <first><Rpc>."""
    shared = ("GetWidget", "WatchEvents")
    lines = [line for line in CLEAN.splitlines() if any(f"Widget{rpc}Re" in line for rpc in shared)]
    admin = ["", *(line for line in lines if line.startswith("message"))] + \
        ["", "service WidgetAdmin {", *(line for line in lines if line.lstrip().startswith("rpc")), "}", ""]
    return renamed(CLEAN, ("ListWidgets", *shared), first) + renamed("\n".join(admin), shared, "WidgetAdmin")


def test_a_file_of_several_services_names_each_pair_after_its_service(tmp_path: Path) -> None:
    """Two services with an RPC of the same name (lustre.proto's LustreMds.Getattr and LustreOss.Getattr, and
    WatchEvents on each) cannot both use <Prefix><Rpc>Request: there each pair is <Service><Rpc>Request."""
    assert problems(tmp_path, two_services("WidgetService")) == []
    found = problems(tmp_path, two_services("Widget"))
    assert "widget.proto:WidgetGetWidgetRequest: RPC WidgetService.GetWidget uses WidgetGetWidgetRequest; its own " \
           "message is named WidgetServiceGetWidgetRequest" in found, found
    # one service: still <Prefix><Rpc>Request
    single = CLEAN.replace("WidgetGetWidgetRequest", "WidgetServiceGetWidgetRequest")
    assert any("its own message is named WidgetGetWidgetRequest" in p for p in problems(tmp_path, single))
