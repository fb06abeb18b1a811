"""Network tests build real namespaces: they need root, iproute2, nftables and ping."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from emulator.network import Network, build_network, clean_network
from emulator.network.kernel import missing_tools
from emulator.topology import load_topology
from tests.conftest import skip_reason

_reason = skip_reason("network tests (network namespaces)",
                      missing_tools() + [t for t in ("ping",) if shutil.which(t) is None],
                      ["iproute2", "nftables", "iputils-ping"])


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not _reason:
        return
    here = Path(__file__).parent
    for item in items:
        if here in Path(item.fspath).parents:
            item.add_marker(pytest.mark.skip(reason=_reason))


def unique_prefix(tag: str) -> str:
    return f"{tag}{os.getpid() % 100000}"


@pytest.fixture(scope="module")
def rack_net(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Network]:
    state = tmp_path_factory.mktemp("rack-net")
    net = build_network(load_topology("rack"), prefix=unique_prefix("tr"), state_dir=state)
    try:
        yield net
    finally:
        net.stop()
        clean_network(net.prefix)


def reachable(net: Network, src: str, pairs: list[tuple[str | None, str]], tries: int = 1) -> dict[str, bool]:
    """Ping each (interface or None, address) once from `src`, all at once in one shell; retry failures
    `tries` times (ARP after a reroute). Returns address -> reached."""
    result: dict[str, bool] = {}
    todo = list(pairs)
    for _ in range(max(1, tries)):
        script = "".join(
            f"(if ping -n -q -c 1 -W 1 {'-I ' + dev if dev else ''} {addr} >/dev/null 2>&1; "
            f"then echo ok {dev or '-'} {addr}; else echo no {dev or '-'} {addr}; fi) &\n"
            for dev, addr in todo) + "wait\n"
        out = net.exec(src, ["sh", "-c", script], timeout=10 + 3 * len(todo)).stdout.split()
        got = {(out[i + 1], out[i + 2]): out[i] == "ok" for i in range(0, len(out), 3)}
        for dev, addr in todo:
            result[f"{dev or '-'} {addr}"] = got.get((dev or "-", addr), False)
        todo = [(d, a) for d, a in todo if not result[f"{d or '-'} {a}"]]
        if not todo:
            break
    return result
