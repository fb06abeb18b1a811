"""Network faults through the one fault API (`Twin.faults()`, `twin fault`) on a real `--network netns`
twin with the fabric manager: a compute cable goes down in the InfiniBand fabric, the others in the
namespaces; each fault is in `twin fault list` with its id and on the bus, and clearing undoes it.
Run under `flock /tmp/clustertwin-netns.lock` (one netns twin per machine)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
from typer.testing import CliRunner

from emulator import events
from emulator.cli.main import app
from emulator.client import Twin
from emulator.sdk.faults import FaultError
from services.fabric.subnet import missing_tools as fabric_missing
from tests.conftest import netns_skip_reason, skip_reason, stopped_at_exit

REASON = netns_skip_reason("network fault API tests") or skip_reason(
    "network fault API tests (the fabric manager)", fabric_missing(), ["ibsim-utils", "opensm", "infiniband-diags"])
pytestmark = pytest.mark.skipif(bool(REASON), reason=REASON or "n/a")


@pytest.fixture(scope="module")
def twin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Twin]:
    t = Twin.up("mini", run_dir=tmp_path_factory.mktemp("net-faults") / "run", network="netns", fabric=True,
                timeout=90)
    with stopped_at_exit(t.run, t.down):
        yield t


def cli(twin: Twin, *args: str, code: int = 0) -> str:
    r = CliRunner().invoke(app, [*args, "--run-dir", str(twin.run.path)])
    assert r.exit_code == code, (args, r.output)
    return r.output


def down_ports(twin: Twin) -> list[str]:
    with twin.fabric() as fabric:
        return [f"{p.node}/{p.number}" for p in fabric.call("GetHealth").down_ports]


def net_faults(twin: Twin, kind: str) -> list[Any]:
    """The network's own fault log (the supervisor's): active faults of this kind."""
    return [f for f in twin.network().faults() if f.kind == kind]


CASES = {   # kind: (target, params, CLI options, "is it applied?")
    "link-down": ("ib-leaf01:ib-spine01:0", {}, [], lambda t: bool(down_ports(t))),   # through the fabric
    "loss": ("eth-leaf01:eth-spine01:0", {"percent": 20.0}, ["--percent", "20"], lambda t: bool(net_faults(t, "loss"))),
    "switch-down": ("eth-leaf02", {}, [], lambda t: bool(net_faults(t, "switch-down"))),
    "node-cut": ("gpu002", {}, [], lambda t: bool(net_faults(t, "node-cut"))),
    "partition": ("gpu001|gpu002", {}, [], lambda t: bool(net_faults(t, "partition"))),
}


@pytest.mark.parametrize("via", ["sdk", "cli"])
@pytest.mark.parametrize("kind", list(CASES))
def test_network_fault_round_trip(twin: Twin, kind: str, via: str) -> None:
    target, params, options, applied = CASES[kind]
    assert not applied(twin)
    with twin.events("events/twin/#") as sub:
        if via == "sdk":
            fault_id = twin.faults().inject("network", target, kind, **params).id
        else:
            out = cli(twin, "fault", "inject", "network", target, kind, *options)
            fault_id = re.search(r"^fault (fault-\d+) ", out).group(1)
        assert applied(twin)
        listed = json.loads(cli(twin, "fault", "list", "--json"))
        assert [(f["subsystem"], f["target"], f["kind"]) for f in listed if f["id"] == fault_id] == \
            [("network", target, kind)]
        assert len(listed) == 1   # the network's own record of it is the same fault, not a second one
        if via == "sdk":
            twin.faults().clear(fault_id)
        else:
            cli(twin, "fault", "clear", fault_id)
        assert not applied(twin) and not twin.faults().list()
        for name, active in (("fault", True), ("fault_clear", False)):
            msg = sub.wait_for(lambda m, n=name: m.get("kind") == n and m["fault"]["id"] == fault_id, timeout=20)
            events.validate_message(msg.pop("_topic"), msg)
            assert msg["fault"]["active"] is active and msg["fault"]["subsystem"] == "network"


def test_a_twin_net_fault_is_adopted_with_an_id(twin: Twin) -> None:
    """A fault made with the network's own command shows in `twin fault list` and clears through it."""
    own = twin.network().cut_off("gpu001")
    mine = [f for f in twin.faults().list() if f.backend_id == own.id]
    assert [(f.subsystem, f.target, f.kind) for f in mine] == [("network", "gpu001", "node-cut")]
    twin.faults().clear(mine[0].id)
    assert not net_faults(twin, "node-cut") and not twin.faults().list()


BAD = [
    (["inject", "network", "ib-leaf01", "link-down"], "a cable is END1:END2 or END1:END2:INDEX"),
    (["inject", "network", "gpu099", "node-cut"], "gpu099"),
    (["inject", "network", "nowhere01:ib-spine01", "link-down"], "nowhere01"),
    (["inject", "network", "eth-leaf01:eth-spine01", "loss"], "needs percent"),
    (["inject", "network", "eth-leaf01:eth-spine01", "loss", "--percent", "150"], "percent must be in (0, 100]"),
    (["inject", "network", "gpu001", "partition"], "a partition is HOST,HOST|HOST,HOST"),
    (["inject", "network", "gpu001", "flood"], "network has no fault kind 'flood'"),
]


def test_bad_network_requests_change_nothing(twin: Twin) -> None:
    before = (twin.faults().list(include_cleared=True), twin.network().faults(include_cleared=True),
              down_ports(twin))
    for args, words in BAD:
        out = cli(twin, "fault", *args, code=2)
        assert words in " ".join(out.split()) and "Traceback" not in out, (args, out)
    with pytest.raises(FaultError, match="network faults take percent; not 'index'"):
        twin.faults().inject("network", "ib-leaf01:ib-spine01", "link-down", index=0)
    assert (twin.faults().list(include_cleared=True), twin.network().faults(include_cleared=True),
            down_ports(twin)) == before
