"""The one fault API (`Twin.faults()`, `twin fault inject|clear|list`) against one real loopback twin:
mini with the fabric manager, Ceph and Lustre, and Slurm started on it. Network faults need a netns
twin: tests/integration/test_fault_network.py.

Per subsystem, a fault goes in and out through the SDK and through the CLI: the subsystem shows it
applied, `twin fault list` shows it with its id, the bus carries its `fault` and `fault_clear` events
(each valid against emulator/events.py), and clearing undoes it. Bad requests are refused with one
clear line and change nothing: not the log, not a subsystem.
"""

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
from services.lustre.manifest import LustreSection
from services.lustre.manifest import servers as lustre_servers
from services.slurm.cluster import APT_PACKAGES, missing_tools
from tests.conftest import skip_reason, stopped_at_exit
from tests.waiting import wait_for

REASON = skip_reason("fault API tests (fabric manager, Lustre, Slurm as root)", fabric_missing() + missing_tools(),
                     ["ibsim-utils", "opensm", "infiniband-diags", *APT_PACKAGES])
pytestmark = pytest.mark.skipif(bool(REASON), reason=REASON or "n/a")


@pytest.fixture(scope="module")
def twin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Twin]:
    t = Twin.up("mini", run_dir=tmp_path_factory.mktemp("faults") / "run", fabric=True, ceph=True, lustre=True,
                clock_scale=50.0, timeout=120)
    with stopped_at_exit(t.run, lambda: (t.slurm().down(), t.down())):
        t.slurm().up(health_interval=0)   # no health check: it would resume a node set down by hand
        yield t


def cli(twin: Twin, *args: str, code: int = 0) -> str:
    r = CliRunner().invoke(app, [*args, "--run-dir", str(twin.run.path)])
    assert r.exit_code == code, (args, r.output)
    return r.output


def listed(twin: Twin) -> list[dict[str, Any]]:
    """`twin fault list --all --json`."""
    return json.loads(cli(twin, "fault", "list", "--all", "--json"))


# --- what each subsystem shows of a fault: (applied, healthy) --------------------------------------

def gpu_xid(twin: Twin) -> bool:
    return any(f.xid == 13 and f.gpu == 2 for f in twin.gpu_node("gpu001").faults())


def osd_in(twin: Twin) -> bool:
    with twin.ceph() as ceph:
        return getattr(next(o for o in ceph.osd_tree().osds if o.id == 2), "in")


def port_state(twin: Twin) -> str:
    with twin.fabric() as fabric:
        return next(p for p in fabric.call("ListPorts", system="ib-leaf01").ports if p.number == 1).logical_state


def ost_capacity(twin: Twin) -> int:
    with twin.lustre() as lu:
        return next(t for t in lu.client.oss_admin(1).osts if t.index == 1).capacity_bytes   # the OSS's own view


def slurm_state(twin: Twin) -> str:
    return twin.slurm().nodes()["gpu002"]["state"]


def configured(twin: Twin, ost: int) -> int:
    """The OST's capacity as the twin was started with it (its manifest)."""
    return LustreSection.require(twin.manifest, twin.run.path).osts[ost].capacity_bytes


CASES = {   # subsystem: (target, kind, params, CLI options, "is it applied?")
    "gpu": ("gpu001", "xid", {"gpu": 2, "xid": 13}, ["--gpu", "2", "--xid", "13"], gpu_xid),
    "ceph": ("osd.2", "out", {}, [], lambda t: not osd_in(t)),
    "fabric": ("ib-leaf01/1", "port-down", {}, [], lambda t: port_state(t) == "Down"),
    "lustre": ("OST0001", "ost-full", {}, [], lambda t: ost_capacity(t) < configured(t, 1)),
    "slurm": ("gpu002", "drain", {"reason": "bad DIMM"}, ["--reason", "bad DIMM"],
              lambda t: "drain" in slurm_state(t)),
}


def _event(sub: Any, kind: str, fault_id: str) -> dict[str, Any]:
    msg = sub.wait_for(lambda m: m.get("kind") == kind and m.get("fault", {}).get("id") == fault_id, timeout=20)
    topic = msg.pop("_topic")
    events.validate_message(topic, msg)
    assert topic.endswith(f"/events/twin/{kind}") and msg["subsystem"] == "twin"
    return msg


@pytest.mark.parametrize("via", ["sdk", "cli"])
@pytest.mark.parametrize("subsystem", list(CASES))
def test_inject_list_clear_round_trip(twin: Twin, subsystem: str, via: str) -> None:
    target, kind, params, options, applied = CASES[subsystem]
    assert not applied(twin)
    with twin.events("events/twin/#") as sub:
        if via == "sdk":
            fault_id = twin.faults().inject(subsystem, target, kind, **params).id
        else:
            out = cli(twin, "fault", "inject", subsystem, target, kind, *options)
            fault_id = re.search(r"^fault (fault-\d+) ", out).group(1)
        assert applied(twin)
        raised = _event(sub, "fault", fault_id)
        assert (raised["fault"]["subsystem"], raised["fault"]["target"], raised["fault"]["kind"]) == \
            (subsystem, target, kind) and raised["fault"]["active"]
        mine = [f for f in listed(twin) if f["id"] == fault_id]
        assert [(f["subsystem"], f["target"], f["kind"], f["active"]) for f in mine] == \
            [(subsystem, target, kind, True)]
        assert [f.id for f in twin.faults().list() if f.subsystem == subsystem] == [fault_id]
        if via == "sdk":
            twin.faults().clear(fault_id)
        else:
            assert f"fault {fault_id} " in cli(twin, "fault", "clear", fault_id)
        wait_for(f"{subsystem} {kind} undone", lambda: not applied(twin))
        assert not _event(sub, "fault_clear", fault_id)["fault"]["active"]
    assert [f["active"] for f in listed(twin) if f["id"] == fault_id] == [False]
    assert not twin.faults().list(subsystem=subsystem)


def _state(twin: Twin) -> tuple[Any, ...]:
    """Everything a refused request must leave as it was."""
    with twin.ceph() as ceph:
        osds = [(o.id, o.up, getattr(o, "in")) for o in ceph.osd_tree().osds]
        ceph_faults = [f.id for f in ceph.osd_faults(include_cleared=True)]
    with twin.fabric() as fabric:
        down = [p.name for p in fabric.call("ListPorts").ports if p.logical_state == "Down"]
    gpu = [f.id for n in twin.gpu_nodes() for f in n.faults(include_cleared=True)]
    return listed(twin), osds, ceph_faults, down, gpu, twin.slurm().nodes()


BAD = [   # CLI arguments, the error's words
    (["inject", "disk", "sda", "fail"], "no subsystem 'disk'"),
    (["inject", "gpu", "gpu099", "xid", "--gpu", "1", "--xid", "79"], "no GPU server 'gpu099'"),
    (["inject", "gpu", "gpu001", "xid", "--gpu", "9", "--xid", "79"], "gpu must be 0..7"),
    (["inject", "gpu", "gpu001", "melt", "--gpu", "1"], "gpu has no fault kind 'melt'"),
    (["inject", "gpu", "gpu001", "xid", "--gpu", "1"], "needs xid"),
    (["inject", "ceph", "osd.99", "out"], "no OSD 'osd.99'"),
    (["inject", "ceph", "osd.1", "slow", "--factor", "1"], "factor=F with F > 1"),
    (["inject", "ceph", "osd.1", "out", "--reason", "x"], "ceph faults take factor, object, pool; not 'reason'"),
    (["inject", "fabric", "ib-leaf01/99", "port-down"], "no cabled port 'ib-leaf01/99'"),
    (["inject", "fabric", "ib-leaf01", "port-down"], "SYSTEM/PORT"),
    (["inject", "fabric", "ib-nowhere", "switch-down"], "no system 'ib-nowhere'"),
    (["inject", "lustre", "oss09", "oss-kill"], "no OSS named 'oss09'"),
    (["inject", "lustre", "OST0063", "ost-full"], "no OST 'OST0063'"),
    (["inject", "slurm", "gpu099", "drain"], "Slurm has no node 'gpu099'"),
    (["inject", "slurm", "gpu001", "reboot"], "slurm has no fault kind 'reboot'"),
    (["inject", "network", "gpu001", "node-cut"], "network faults need `twin up --network netns`"),
    (["inject", "gpu777"], "say which subsystem 'gpu777' is in"),
    (["clear", "fault-999"], "no fault 'fault-999'"),
    (["clear", "f-1"], "no fault 'f-1'"),
    (["clear", "gpu001", "gpu001-fault-999"], "no fault 'gpu001-fault-999' on gpu001"),
    (["list", "--subsystem", "disk"], "no subsystem 'disk'"),
]


def test_bad_requests_are_refused_and_change_nothing(twin: Twin) -> None:
    f = twin.faults().inject("gpu", "gpu002", "thermal", gpu=0)
    twin.faults().clear(f.id)
    before = _state(twin)
    for args, words in [*BAD, (["clear", f.id], f"fault {f.id} is already cleared")]:
        out = cli(twin, "fault", *args, code=2)
        assert words in " ".join(out.split()) and "Traceback" not in out, (args, out)
    with pytest.raises(FaultError, match="no subsystem 'disk'"):
        twin.faults().inject("disk", "sda", "fail")
    with pytest.raises(FaultError, match="gpu faults take gpu, xid, link, count, lease; not 'colour'"):
        twin.faults().inject("gpu", "gpu001", "xid", gpu=1, xid=79, colour="red")
    assert _state(twin) == before


def test_faults_made_elsewhere_are_adopted_and_closed_where_they_end(twin: Twin) -> None:
    """A GPU server's own fault API and Lustre's own oss-kill: both show in the one list with a log id
    and an event; the Xid 79 a reboot ends, and the OSS started by Lustre's own call, are closed."""
    node = twin.gpu_node("gpu002")
    with twin.events("events/twin/#") as sub:
        own = node.inject_xid(gpu=4, xid=79)
        with twin.lustre() as lu:
            oss = lu.oss_names()[0]
            lu.kill_oss(oss)
        found = {(f.subsystem, f.target): f for f in twin.faults().list()}
        gpu, lustre = found["gpu", "gpu002"], found["lustre", oss]
        assert gpu.backend_id == f"gpu002/{own.id}" and lustre.backend_id   # the subsystems' own ids
        assert (gpu.subsystem, gpu.target, gpu.kind, gpu.params) == ("gpu", "gpu002", "xid", {"gpu": 4, "xid": 79})
        assert (lustre.subsystem, lustre.target, lustre.kind) == ("lustre", oss, "oss-kill")
        for f in (gpu, lustre):
            _event(sub, "fault", f.id)
        with pytest.raises(FaultError, match="only a node reboot clears it"):
            twin.faults().clear(gpu.id)
        node.reboot()
        with twin.lustre() as lu:
            lu.start_oss(oss)
        assert not twin.faults().list(subsystem="gpu") and not twin.faults().list(subsystem="lustre")
        for f in (gpu, lustre):
            assert "ended in the" in _event(sub, "fault_clear", f.id)["fault"]["effect"]
    assert len([f for f in listed(twin) if f["backend_id"] == f"gpu002/{own.id}"]) == 1   # adopted once


def test_legacy_shortcuts_reach_the_same_log(twin: Twin) -> None:
    """`twin fault inject gpu001 --gpu 3 --xid 13` and `twin fault inject osd.4 --kind slow --factor 10`,
    cleared by `twin fault clear NODE THE-SUBSYSTEM'S-ID`."""
    out = cli(twin, "fault", "inject", "gpu001", "--gpu", "3", "--xid", "13")
    gpu = twin.faults().get(re.search(r"^fault (fault-\d+) ", out).group(1))
    out = cli(twin, "fault", "inject", "osd.4", "--kind", "slow", "--factor", "10")
    osd = twin.faults().get(re.search(r"^fault (fault-\d+) ", out).group(1))
    assert (gpu.subsystem, gpu.kind, gpu.params) == ("gpu", "xid", {"gpu": 3, "xid": 13})
    assert (osd.subsystem, osd.target, osd.kind, osd.params) == ("ceph", "osd.4", "slow", {"factor": 10.0})
    cli(twin, "fault", "clear", "gpu001", gpu.backend_id.partition("/")[2])
    cli(twin, "fault", "clear", "osd.4", osd.backend_id)
    assert not twin.faults().get(gpu.id).active and not twin.faults().get(osd.id).active
    assert not twin.faults().list()


def test_an_oss_kill_keeps_it_down_until_cleared(twin: Twin) -> None:
    """The fault takes Lustre's own id (the OSS keeps it across the kill -9), the partner serves the
    OSTs meanwhile, and clearing brings the OSS back to serve them again."""
    oss = next(d for d in lustre_servers(twin.manifest)[1].values() if d.partner)
    mine = set(oss.osts)

    def servers() -> dict[int, str]:
        with twin.lustre() as lu:
            return {t.index: t.server for t in lu.statfs().osts if t.active and t.index in mine}

    f = twin.faults().inject("lustre", oss.name, "oss-kill")
    assert f.backend_id and "killed (pid" in f.effect
    wait_for("failover to the partner", lambda: set(servers().values()) == {oss.partner}, timeout=90)
    assert [x.id for x in twin.faults().list(subsystem="lustre")] == [f.id]   # not adopted a second time
    with pytest.raises(FaultError, match="already kept down"):
        twin.faults().inject("lustre", oss.name, "oss-kill")
    twin.faults().clear(f.id)
    wait_for("failback", lambda: set(servers().values()) == {oss.name}, timeout=90)
    assert not twin.faults().list(subsystem="lustre")
