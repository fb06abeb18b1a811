"""Proto lint: the house conventions for clustertwin's gRPC contracts, checked on compiled descriptors.

    python protos/lint.py protos/clustertwin/v1/gpu_node.proto [...]

Each file named is compiled with grpc_tools.protoc (include path: protos/ and the well-known types)
and checked; every violation prints as `file:message: rule`, and the exit status is 1 if any.

The rules:
- every RPC `R` takes `<Prefix>RRequest` and returns `<Prefix>RResponse` (a server-streaming Watch
  returns a stream of its response message); in a file of several services, `<Service>RRequest`;
- no request or response message serves two RPCs;
- every top-level message and enum starts with the file's component prefix, and every enum value
  with the enum's name in UPPER_SNAKE (so values of two files never collide in the shared package).
  The prefix is the file name's first word, capitalised: gpu_node.proto -> `Gpu`, fabric.proto ->
  `Fabric`, ceph.proto -> `Ceph`, lustre.proto -> `Lustre`;
- no `has_*` bool: presence is proto3 `optional`;
- every List* RPC has `page_size` and `page_token` in its request and `next_page_token` in its response;
- no response (or message inside one) carries pre-rendered text: a string field named `text`,
  `rendered`, or ending in `_text`/`_rendered`. The CLI renders structured values;
- every service has a server-streaming `WatchEvents` RPC.
"""

from __future__ import annotations

import re
import sys
import tempfile
from collections.abc import Iterable, Iterator
from importlib import resources
from pathlib import Path

from google.protobuf import descriptor_pb2
from grpc_tools import protoc

PROTO_ROOT = Path(__file__).resolve().parent
F = descriptor_pb2.FieldDescriptorProto
TEXT_FIELD = re.compile(r"^(text|rendered)$|_(text|rendered)$")


def prefix_of(path: str) -> str:
    """gpu_node.proto -> Gpu: the component prefix every message of the file starts with."""
    return Path(path).stem.split("_")[0].capitalize()


def upper_snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).upper()


def compile_files(paths: list[str], root: Path = PROTO_ROOT) -> list[descriptor_pb2.FileDescriptorProto]:
    """The descriptors of `paths` (under `root`, or compiled from their own directory), in order."""
    root = root.resolve()
    includes, names = [root], []
    for p in (Path(x).resolve() for x in paths):
        base = root if p.is_relative_to(root) else p.parent   # a file outside protos/ compiles from its directory
        includes += [] if base in includes else [base]
        names.append(str(p.relative_to(base)))
    includes.append(Path(str(resources.files("grpc_tools") / "_proto")))
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "set.pb"
        argv = ["protoc", *(f"-I{i}" for i in includes), f"--descriptor_set_out={out}", *names]
        if protoc.main(argv) != 0:
            raise SystemExit(f"protoc failed on {' '.join(paths)}")
        fds = descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes())
    return list(fds.file)


def _short(type_name: str, package: str) -> str:
    return type_name.removeprefix(f".{package}.")


def check_rpcs(fd: descriptor_pb2.FileDescriptorProto) -> Iterator[tuple[str, str]]:
    prefix, users = prefix_of(fd.name), dict[str, list[str]]()
    for svc in fd.service:
        methods = {m.name: m for m in svc.method}
        watch = methods.get("WatchEvents")
        if watch is None or not watch.server_streaming:
            yield svc.name, "service has no server-streaming WatchEvents RPC"
        for m in svc.method:
            req, resp = _short(m.input_type, fd.package), _short(m.output_type, fd.package)
            # a file with several services may name the pair after the service (LustreMdsGetattrRequest,
            # LustreOssGetattrRequest): their RPCs' names can be the same
            owner = svc.name if len(fd.service) > 1 and svc.name.startswith(prefix) else prefix
            for got, want in ((req, f"{owner}{m.name}Request"), (resp, f"{owner}{m.name}Response")):
                if got != want:
                    yield got, f"RPC {svc.name}.{m.name} uses {got}; its own message is named {want}"
                users.setdefault(got, []).append(m.name)
            if m.name.startswith("List"):
                yield from _check_paging(fd, m.name, req, resp)
    for name, rpcs in users.items():
        if len(rpcs) > 1:
            yield name, f"serves several RPCs ({', '.join(rpcs)}); each RPC has its own request and response"


def _messages(fd: descriptor_pb2.FileDescriptorProto) -> dict[str, descriptor_pb2.DescriptorProto]:
    """Every message of the file by its name inside the package (nested ones as Outer.Inner)."""
    out: dict[str, descriptor_pb2.DescriptorProto] = {}

    def walk(msgs: Iterable[descriptor_pb2.DescriptorProto], scope: str) -> None:
        for m in msgs:
            out[scope + m.name] = m
            walk(m.nested_type, f"{scope}{m.name}.")

    walk(fd.message_type, "")
    return out


def _check_paging(fd: descriptor_pb2.FileDescriptorProto, rpc: str, req: str,
                  resp: str) -> Iterator[tuple[str, str]]:
    msgs = _messages(fd)
    want = ((req, "page_size", F.TYPE_INT32), (req, "page_token", F.TYPE_STRING),
            (resp, "next_page_token", F.TYPE_STRING))
    for msg, field, ftype in want:
        fields = {f.name: f.type for f in msgs[msg].field} if msg in msgs else {}
        if fields.get(field) != ftype:
            kind = "int32" if ftype == F.TYPE_INT32 else "string"
            yield msg, f"List RPC {rpc} has no `{kind} {field}`: lists are paginated"


def check_messages(fd: descriptor_pb2.FileDescriptorProto) -> Iterator[tuple[str, str]]:
    prefix = prefix_of(fd.name)
    for t in [*fd.message_type, *fd.enum_type]:
        if not t.name.startswith(prefix):
            yield t.name, f"name does not start with the component prefix {prefix!r}"
    for e in fd.enum_type:
        want = upper_snake(e.name) + "_"
        for v in e.value:
            if not v.name.startswith(want):
                yield e.name, f"value {v.name} does not start with {want}"
    for name, m in _messages(fd).items():
        for f in m.field:
            if f.name.startswith("has_") and f.type == F.TYPE_BOOL:
                yield name, f"bool {f.name} marks presence: use proto3 `optional` on the field itself"


def check_text(fd: descriptor_pb2.FileDescriptorProto) -> Iterator[tuple[str, str]]:
    """Strings named like pre-rendered text in any message a response reaches."""
    msgs = _messages(fd)
    todo = [_short(m.output_type, fd.package) for s in fd.service for m in s.method]
    seen: set[str] = set()
    while todo:
        name = todo.pop()
        if name in seen or name not in msgs:
            continue
        seen.add(name)
        for f in msgs[name].field:
            if f.type == F.TYPE_MESSAGE:
                todo.append(_short(f.type_name, fd.package))
            elif f.type == F.TYPE_STRING and TEXT_FIELD.search(f.name):
                yield name, f"string {f.name} carries pre-rendered text: return structured values, render in the CLI"


def lint(paths: list[str], root: Path = PROTO_ROOT) -> list[str]:
    """Every violation in `paths`, as `file:message: rule` lines."""
    out = []
    for path, fd in zip(paths, compile_files(paths, root), strict=True):
        for check in (check_rpcs, check_messages, check_text):
            out += [f"{path}:{where}: {rule}" for where, rule in check(fd)]
    return out


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: python protos/lint.py FILE.proto ...", file=sys.stderr)
        return 2
    problems = lint(argv)
    for line in problems:
        print(line)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
