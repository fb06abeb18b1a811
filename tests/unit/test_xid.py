"""Xid consequences: health, device plugin, recovery action, which leases end, lost GPU, kernel line."""

from __future__ import annotations

import re

import pytest

from services.gpu_node.errors import ModelError
from services.gpu_node.model import NodeModel
from services.gpu_node.spec import NodeSpec
from services.gpu_node.xid import XID_TABLE, Health, RecoveryAction, kernel_line, kernel_pci, xid_info

# FIDELITY.md §2: xid → (DCGM health, device plugin healthy, leases that end, GPU lost)
EXPECTED = {
    13: (Health.PASS, True, "affected", False),
    31: (Health.PASS, True, "affected", False),
    43: (Health.PASS, True, "affected", False),
    45: (Health.PASS, True, "affected", False),
    68: (Health.PASS, True, "affected", False),
    109: (Health.PASS, True, "affected", False),
    48: (Health.FAIL, False, "all", False),
    63: (Health.WARN, False, "none", False),
    64: (Health.WARN, False, "none", False),
    74: (Health.FAIL, False, "all", False),
    79: (Health.FAIL, False, "all", True),
    92: (Health.PASS, False, "none", False),
    94: (Health.FAIL, False, "affected", False),
    95: (Health.FAIL, False, "all", False),
    119: (Health.FAIL, False, "all", False),
    120: (Health.FAIL, False, "all", False),
    140: (Health.FAIL, False, "all", False),
}
RECOVERY = {79: RecoveryAction.NODE_REBOOT, 48: RecoveryAction.DRAIN_AND_RESET, 74: RecoveryAction.DRAIN_P2P,
            92: RecoveryAction.NONE}


def test_table_covers_fidelity_list() -> None:
    assert set(XID_TABLE) == set(EXPECTED)


def test_unknown_xid_rejected() -> None:
    with pytest.raises(ModelError) as e:
        xid_info(99)
    assert e.value.code == "INVALID_ARGUMENT" and "Xid 99" in e.value.message and "79" in e.value.message
    m = NodeModel(NodeSpec(name="gpu001"), 0.0)
    before = m.to_state()
    with pytest.raises(ModelError):
        m.inject_fault("XID", 0, 1.0, xid=99)
    assert m.to_state() == before


def two_jobs_on_gpu0() -> tuple[NodeModel, str, str]:
    """Two leases sharing GPU 0 through MIG, so 'affected' and 'all' differ."""
    m = NodeModel(NodeSpec(name="gpu001", mig_layout="all-1g.10gb"), 0.0)
    a = m.acquire("job-a", 1.0, mig_profile="1g.10gb", gpus=[0]).id
    b = m.acquire("job-b", 1.0, mig_profile="1g.10gb", gpus=[0]).id
    return m, a, b


@pytest.mark.parametrize("xid", sorted(EXPECTED))
def test_consequences(xid: int) -> None:
    health, dp_ok, ends, lost = EXPECTED[xid]
    m, a, b = two_jobs_on_gpu0()
    m.drain_events()
    fault = m.inject_fault("XID", 0, 5.0, xid=xid, lease_id=b)
    assert fault.xid == xid and fault.lease_id == b
    active = {lease.id for lease in m.leases()}
    expected_active = {"none": {a, b}, "affected": {a}, "all": set()}[ends]
    assert active == expected_active
    for lease in m.leases(include_ended=True):
        if not lease.active:
            assert lease.end_reason == f"xid {xid} on GPU 0"
    view = next(v for v in m.list_gpus() if v.index == 0)
    assert (view.health, view.device_plugin_healthy, view.lost, view.last_xid) == (health, dp_ok, lost, xid)
    assert view.recovery_action == RECOVERY.get(xid, view.recovery_action)
    if health == Health.PASS and dp_ok:
        assert view.recovery_action == RecoveryAction.NONE
    else:
        assert view.health_reason.startswith(f"Xid {xid}")
    kinds = [e["kind"] for e in m.drain_events()]
    assert "xid" in kinds and kinds[0] == "fault"
    assert ("gpu_lost" in kinds) == lost
    assert kinds.count("lease_end") == 2 - len(expected_active)
    line = m.kernel_log()[-1]
    assert re.fullmatch(rf"\[\s*\d+\.\d{{6}}\] NVRM: Xid \(PCI:0000:18:00\): {xid}, pid=(\d+|'<unknown>'), .+", line)
    if lost:
        assert m.node_info(6.0).gpu_count == 7
        with pytest.raises(ModelError) as e:
            m.gpu_info(0)
        assert e.value.code == "FAILED_PRECONDITION" and "GPU_IS_LOST" in e.value.message
    # Other GPUs are untouched.
    assert m.gpu_info(1).health == Health.PASS


def test_kernel_line_format() -> None:
    assert kernel_pci("00000000:1A:00.0") == "0000:1a:00"
    assert (kernel_line(79, "00000000:1A:00.0", 1234)
            == "NVRM: Xid (PCI:0000:1a:00): 79, pid='<unknown>', GPU has fallen off the bus.")
    assert kernel_line(13, "00000000:1A:00.0", 1234).startswith("NVRM: Xid (PCI:0000:1a:00): 13, pid=1234, ")
    assert "pid='<unknown>'" in kernel_line(13, "00000000:1A:00.0", None)


def test_app_xid_names_the_job_pid_and_gpu_stays_healthy() -> None:
    m = NodeModel(NodeSpec(name="gpu001"), 0.0)
    lease = m.acquire("train", 1.0, gpus=[3])
    m.inject_fault("XID", 3, 2.0, xid=13)
    assert not m.lease(lease.id).active
    assert m.gpu_info(3).health == Health.PASS and m.gpu_info(3).device_plugin_healthy
    assert re.search(r": 13, pid=\d+, Graphics SM Warp Exception", m.kernel_log()[-1])
    # The GPU can be leased again straight away.
    assert m.acquire("next", 3.0, gpus=[3]).devices[0].gpu == 3


def test_fault_on_lost_gpu_refused_and_reset_clears_xid_health() -> None:
    m = NodeModel(NodeSpec(name="gpu001"), 0.0)
    m.inject_fault("XID", 2, 1.0, xid=79)
    before = m.to_state()
    for call in (lambda: m.inject_fault("XID", 2, 2.0, xid=95), lambda: m.reset_gpu(2, 2.0)):
        with pytest.raises(ModelError) as e:
            call()
        assert e.value.code == "FAILED_PRECONDITION" and "GPU_IS_LOST" in e.value.message
    assert m.to_state() == before
    m.inject_fault("XID", 5, 3.0, xid=95)
    assert m.gpu_info(5).recovery_action == RecoveryAction.GPU_RESET
    view = m.reset_gpu(5, 4.0)
    assert (view.health, view.last_xid, view.recovery_action) == (Health.PASS, 0, RecoveryAction.NONE)
