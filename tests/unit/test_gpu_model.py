"""The node model: identity, leases, MIG lifecycle, faults, reset, reboot, telemetry, persistence."""

from __future__ import annotations

import json
import re

import pytest

from services.gpu_node.errors import ModelError
from services.gpu_node.model import NodeModel
from services.gpu_node.spec import NodeSpec
from services.gpu_node.xid import Health


def node(**kw) -> NodeModel:
    return NodeModel(NodeSpec(name="gpu003", **kw), 0.0)


def test_identity_is_deterministic_and_faithful() -> None:
    a, b = node(), node()
    va, vb = a.list_gpus(), b.list_gpus()
    assert [v.uuid for v in va] == [v.uuid for v in vb]
    assert len({v.uuid for v in va}) == 8 and all(re.fullmatch(r"GPU-[0-9a-f-]{36}", v.uuid) for v in va)
    assert all(re.fullmatch(r"\d{13}", v.serial) for v in va) and len({v.serial for v in va}) == 8
    assert NodeModel(NodeSpec(name="gpu004"), 0.0).gpu_info(0).uuid != va[0].uuid
    v = va[5]
    assert (v.name, v.pci_device_id, v.compute_capability, v.memory_total_mib) == (
        "NVIDIA H100 80GB HBM3", "0x233010DE", "9.0", 81559)
    assert (v.power_limit_w, v.persistence_mode, v.compute_mode, v.mig_enabled) == (700.0, True, "Default", False)
    assert [g.numa_node for g in va] == [0, 0, 0, 0, 1, 1, 1, 1]
    assert len(v.nvlinks) == 18 and {link.nvswitch for link in v.nvlinks} == {0, 1, 2, 3}
    assert all(link.up and link.bandwidth_gbytes == 26.562 for link in v.nvlinks)
    assert 25 <= v.temperature_c <= 42 and v.power_w == 70.0 and v.sm_clock_mhz == 345
    n = a.node_info(10.0)
    assert (n.gpu_count, n.cpu_threads, n.cpu_sockets, n.memory_bytes, n.boot_id) == (8, 224, 2, 2 * 1024**4, 1)


def test_spec_from_dict_ignores_unknown_keys() -> None:
    spec = NodeSpec.from_dict({"name": "gpu001", "rack": "r01", "leaf_pair": ["l1", "l2"], "color": "red",
                               "mig_layout": None, "pci_bus_ids": [f"00000000:{i:02X}:00.0" for i in range(8)]})
    assert spec.leaf_pair == ("l1", "l2") and spec.pci_bus_ids[3] == "00000000:03:00.0"
    assert spec.mig_uuid(0, 7, 0, "1g.10gb") == spec.mig_uuid(0, 7, 0, "1g.10gb")


def test_whole_gpu_lease_env_and_exclusivity() -> None:
    m = node()
    lease = m.acquire("job-1", 1.0, count=3, utilization=80)
    assert [d.gpu for d in lease.devices] == [0, 1, 2]
    assert lease.env["NVIDIA_VISIBLE_DEVICES"] == ",".join(m.gpu_info(i).uuid for i in range(3))
    assert lease.env["CUDA_VISIBLE_DEVICES"] == "0,1,2"
    explicit = m.acquire("job-2", 1.0, gpus=[6, 4])
    assert explicit.env["CUDA_VISIBLE_DEVICES"] == "0,1"
    before = m.to_state()
    with pytest.raises(ModelError) as e:
        m.acquire("job-3", 2.0, gpus=[3, 1])
    assert e.value.code == "FAILED_PRECONDITION" and lease.id in e.value.message and "GPU 1" in e.value.message
    with pytest.raises(ModelError) as e:
        m.acquire("job-3", 2.0, count=4)  # 3 free: takes nothing
    assert e.value.code == "RESOURCE_EXHAUSTED"
    for bad in ({"gpus": [9]}, {"count": 0}, {"gpus": [3, 3]}, {"count": 1, "utilization": 101}):
        with pytest.raises(ModelError):
            m.acquire("job-3", 2.0, **bad)
    with pytest.raises(ModelError) as e:
        m.acquire("", 2.0, count=1)
    assert e.value.code == "INVALID_ARGUMENT"
    assert m.to_state() == before
    released = m.release(lease.id, 3.0)
    assert not released.active and released.end_reason == "released"
    assert m.release(lease.id, 4.0).ended_at == 3.0  # idempotent
    assert m.acquire("job-3", 5.0, count=4).devices[0].gpu == 0


def test_mig_lease() -> None:
    m = node(mig_layout="all-balanced")
    lease = m.acquire("infer", 1.0, mig_profile="1g.10gb", count=3)
    assert all(d.is_mig and d.mig_profile == "1g.10gb" for d in lease.devices)
    assert lease.env["NVIDIA_VISIBLE_DEVICES"].startswith("MIG-")
    assert lease.env["CUDA_VISIBLE_DEVICES"] == "0,1,2"
    assert [(d.gpu, d.gi_id) for d in lease.devices] == [(0, 7), (0, 8), (1, 7)]
    with pytest.raises(ModelError) as e:
        m.acquire("x", 2.0, mig_profile="5g.40gb", count=1)
    assert e.value.code == "INVALID_ARGUMENT"
    with pytest.raises(ModelError) as e:
        m.acquire("x", 2.0, count=1)  # every GPU is in MIG mode
    assert e.value.code == "RESOURCE_EXHAUSTED"
    with pytest.raises(ModelError) as e:
        m.acquire("x", 2.0, mig_profile="3g.40gb", count=9)
    assert e.value.code == "RESOURCE_EXHAUSTED" and "8 free" in e.value.message
    # MIG reconfiguration refuses to pull a device from under a job.
    with pytest.raises(ModelError) as e:
        m.destroy_compute_instance(0, 7, 0, 3.0)
    assert e.value.code == "FAILED_PRECONDITION" and lease.id in e.value.message
    with pytest.raises(ModelError) as e:
        m.set_mig_mode(0, False, 3.0)
    assert e.value.code == "FAILED_PRECONDITION"


def test_mig_lifecycle_and_mode_rules() -> None:
    m = node()
    with pytest.raises(ModelError) as e:
        m.create_gpu_instance(0, "1g.10gb", 1.0)
    assert e.value.code == "FAILED_PRECONDITION" and "MIG mode is disabled" in e.value.message
    lease = m.acquire("j", 1.0, gpus=[0])
    with pytest.raises(ModelError):
        m.set_mig_mode(0, True, 1.0)  # leased
    m.release(lease.id, 2.0)
    assert m.set_mig_mode(0, True, 2.0).mig_enabled
    gi = m.create_gpu_instance(0, "7g.80gb", 3.0)
    assert gi.id == 0 and gi.placement_size == 8 and gi.compute_instances == []
    ci = m.create_compute_instance(0, 0, 3, 4.0)
    assert ci.profile == "3c.7g.80gb" and ci.uuid.startswith("MIG-")
    with pytest.raises(ModelError) as e:
        m.set_mig_mode(0, False, 5.0)
    assert e.value.code == "FAILED_PRECONDITION" and "GPU instances exist" in e.value.message
    with pytest.raises(ModelError) as e:
        m.destroy_gpu_instance(0, 0, 5.0)
    assert "compute instances" in e.value.message
    with pytest.raises(ModelError) as e:
        m.destroy_gpu_instance(0, 5, 5.0)
    assert e.value.code == "NOT_FOUND"
    m.destroy_compute_instance(0, 0, ci.id, 6.0)
    m.destroy_gpu_instance(0, 0, 6.0)
    assert not m.set_mig_mode(0, False, 7.0).mig_enabled
    profiles = {p.name: p for p in m.mig_profiles(0)}
    assert profiles["1g.10gb"].free_instances == 0  # MIG disabled


def test_reset_loses_mig_layout_and_is_refused_while_leased() -> None:
    m = node(mig_layout="all-balanced")
    lease = m.acquire("j", 1.0, mig_profile="2g.20gb", gpus=[4])
    with pytest.raises(ModelError) as e:
        m.reset_gpu(4, 2.0)
    assert e.value.code == "FAILED_PRECONDITION" and lease.id in e.value.message
    m.release(lease.id, 3.0)
    m.inject_fault("ECC_DBE", 4, 3.5)
    assert m.gpu_info(4).ecc.row_remap_pending
    view = m.reset_gpu(4, 4.0)
    assert view.mig_enabled and m.gpu_instances(4) == []
    assert not view.ecc.row_remap_pending and view.ecc.volatile_dbe == 0 and view.ecc.aggregate_dbe == 1
    assert view.ecc.uncorrectable_remapped_rows == 1 and view.health == Health.PASS
    assert {p.name: p.free_instances for p in m.mig_profiles(4)}["1g.10gb"] == 7
    assert len(m.gpu_instances(3)) == 4  # other GPUs keep theirs


def test_reboot_restores_lost_gpu_and_layout() -> None:
    m = node(mig_layout="all-3g.40gb")
    lease = m.acquire("j", 1.0, mig_profile="3g.40gb", count=2)
    m.inject_fault("XID", 0, 2.0, xid=79)
    assert not m.lease(lease.id).active
    m.destroy_compute_instance(1, 1, 0, 2.5)
    m.destroy_gpu_instance(1, 1, 2.5)
    assert m.node_info(3.0).gpu_count == 7 and m.node_info(3.0).health == Health.FAIL
    with pytest.raises(ModelError):
        m.clear_fault(m.faults()[0].id, 3.0)
    other = m.acquire("k", 3.0, mig_profile="3g.40gb", count=1)
    seq = m.last_seq
    info = m.reboot(10.0)
    assert (info.boot_id, info.gpu_count, info.health, info.active_leases) == (2, 8, Health.PASS, 0)
    assert m.lease(other.id).end_reason == "node reboot"
    assert m.faults() == [] and m.kernel_log() == []
    assert len(m.gpu_instances(0)) == 2 and len(m.gpu_instances(1)) == 2
    kinds = [e["kind"] for e in m.drain_events() if e["seq"] > seq]
    assert kinds[0] == "node_reboot" and "lease_end" in kinds and "fault_clear" in kinds and "health" in kinds


def test_busy_gpu_heats_and_draws_power() -> None:
    m = node()
    idle = m.gpu_info(1)
    lease = m.acquire("train", 0.0, gpus=[0], utilization=100)
    temps, powers = [], []
    for t in range(1, 181):
        m.tick(float(t))
        temps.append(m.gpu_info(0).temperature_c)
        powers.append(m.gpu_info(0).power_w)
    busy = m.gpu_info(0)
    assert temps == sorted(temps) and powers == sorted(powers)
    assert 600 < busy.power_w <= 700 and 70 <= busy.temperature_c <= 80
    assert temps[9] < 60  # first-order lag: not hot after 10 s
    assert busy.sm_clock_mhz == 1980 and busy.mem_clock_mhz == 2619 and busy.gpu_util == 100
    assert busy.memory_used_mib > 70000 and busy.lease_ids == [lease.id]
    assert busy.total_energy_mj > 180 * 600 * 1000 * 0.9
    still_idle = m.gpu_info(1)
    assert still_idle.power_w == pytest.approx(idle.power_w) and still_idle.temperature_c == idle.temperature_c
    m.release(lease.id, 180.0)
    m.tick(400.0)
    assert m.gpu_info(0).power_w < 75 and m.gpu_info(0).temperature_c < 45


def test_thermal_slowdown() -> None:
    m = node()
    m.acquire("train", 0.0, gpus=[2], utilization=100)
    m.tick(60.0)
    fault = m.inject_fault("THERMAL_SLOWDOWN", 2, 61.0)
    v = m.gpu_info(2)
    assert v.temperature_c >= 88 and v.sm_clock_mhz < 1980 and "SW_THERMAL_SLOWDOWN" in v.clock_throttle_reasons
    assert v.health == Health.WARN
    with pytest.raises(ModelError) as e:
        m.inject_fault("THERMAL_SLOWDOWN", 2, 62.0)
    assert e.value.code == "ALREADY_EXISTS"
    m.tick(120.0)
    assert "HW_THERMAL_SLOWDOWN" in m.gpu_info(2).clock_throttle_reasons
    m.clear_fault(fault.id, 121.0)
    m.tick(300.0)
    v = m.gpu_info(2)
    assert v.clock_throttle_reasons == [] and v.sm_clock_mhz == 1980 and v.health == Health.PASS


def test_ecc_and_nvlink_faults() -> None:
    m = node()
    m.inject_fault("ECC_SBE", 1, 1.0, count=50)
    v = m.gpu_info(1)
    assert v.ecc.volatile_sbe == 50 and v.last_xid == 0 and v.health == Health.PASS
    f = m.inject_fault("ECC_SBE", 1, 2.0, count=60)
    v = m.gpu_info(1)
    assert f.xid == 92 and v.last_xid == 92 and v.health == Health.PASS and v.ecc.aggregate_sbe == 110
    lease = m.acquire("j", 3.0, gpus=[6])
    f = m.inject_fault("ECC_DBE", 6, 4.0)
    v = m.gpu_info(6)
    assert f.xid == 48 and v.health == Health.FAIL and v.ecc.volatile_dbe == 1
    assert v.ecc.uncorrectable_remapped_rows == 1 and not m.lease(lease.id).active
    with pytest.raises(ModelError) as e:
        m.acquire("k", 5.0, gpus=[6])
    assert e.value.code == "FAILED_PRECONDITION" and "unhealthy" in e.value.message
    f = m.inject_fault("NVLINK_DOWN", 3, 5.0, link=7)
    v = m.gpu_info(3)
    assert f.xid == 74 and not v.nvlinks[7].up and v.nvlinks[6].up and v.health == Health.FAIL
    assert "link 7" in m.kernel_log()[-1]
    row = next(r for r in m.topology().rows if r.label == "GPU3")
    assert row.cells[0] == "NV17"
    for bad, code in (({"link": 7}, "ALREADY_EXISTS"), ({"link": 18}, "INVALID_ARGUMENT")):
        with pytest.raises(ModelError) as e:
            m.inject_fault("NVLINK_DOWN", 3, 6.0, **bad)
        assert e.value.code == code
    m.clear_fault(f.id, 7.0)
    assert m.gpu_info(3).nvlinks[7].up and m.gpu_info(3).health == Health.PASS


def test_state_round_trip_and_seq_continues() -> None:
    m = node(mig_layout="all-balanced")
    m.acquire("a", 1.0, mig_profile="1g.10gb", count=2, utilization=60)
    m.acquire("b", 1.5, mig_profile="3g.40gb", gpus=[2])
    m.inject_fault("XID", 3, 2.0, xid=79)
    m.inject_fault("XID", 4, 2.5, xid=94)
    m.inject_fault("NVLINK_DOWN", 5, 2.6, link=2)
    m.inject_fault("THERMAL_SLOWDOWN", 6, 2.7)
    m.inject_fault("ECC_SBE", 7, 2.8, count=3)
    for t in range(3, 40):
        m.tick(float(t))
    m.drain_events()
    state = m.to_state()
    restored = NodeModel.from_state(m.spec, json.loads(json.dumps(state)), 100.0)
    assert restored.to_state() == state
    assert restored.list_gpus() == m.list_gpus()
    assert restored.node_info(50.0) == m.node_info(50.0)
    assert restored.leases(True) == m.leases(True) and restored.faults(True) == m.faults(True)
    assert restored.kernel_log() == m.kernel_log()
    assert restored.events_after(0) == m.events_after(0)
    assert {k for k in state} >= {"gpus", "leases", "faults", "events", "seq", "boot_id", "kernel_log"}
    last = m.last_seq
    restored.acquire("c", 41.0, mig_profile="2g.20gb", count=1)
    assert restored.drain_events()[0]["seq"] == last + 1
    # Undrained events survive a restore as still pending.
    m.release(m.leases()[0].id, 42.0)
    again = NodeModel.from_state(m.spec, m.to_state(), 43.0)
    assert [e["kind"] for e in again.drain_events()] == ["lease_end"]


def test_failed_operations_change_nothing() -> None:
    m = node(mig_layout="all-1g.10gb")
    m.acquire("a", 1.0, mig_profile="1g.10gb", count=1)
    before = m.to_state()
    attempts = [
        lambda: m.create_gpu_instance(0, "1g.10gb", 2.0),
        lambda: m.create_compute_instance(0, 7, 1, 2.0),
        lambda: m.destroy_gpu_instance(0, 7, 2.0),
        lambda: m.inject_fault("XID", 0, 2.0, xid=94, lease_id="nope"),
        lambda: m.inject_fault("BOGUS", 0, 2.0),
        lambda: m.inject_fault("XID", 8, 2.0, xid=13),
        lambda: m.clear_fault("nope", 2.0),
        lambda: m.report_load("nope", 5, 2.0),
        lambda: m.set_pid("nope", 1234, 2.0),
        lambda: m.set_pid(m.leases()[0].id, 0, 2.0),
        lambda: m.reset_gpu(0, 2.0),
    ]
    for attempt in attempts:
        with pytest.raises(ModelError) as e:
            attempt()
        assert e.value.message.startswith("gpu003")
    assert m.to_state() == before


def test_nvml_mig_mode_is_pending_while_in_use_until_a_reset_or_reboot() -> None:
    """nvmlDeviceSetMigMode (request_mig_mode): an idle GPU takes the mode at once; one in use (a lease,
    or GPU instances when disabling) keeps it pending, persisted, until a reset or reboot applies it."""
    m = node()
    assert m.request_mig_mode(0, True, 1.0) and m.mig_mode(0) == (True, True)
    m.create_gpu_instance(0, "3g.40gb", 2.0, placement_start=4)
    assert not m.request_mig_mode(0, False, 3.0) and m.mig_mode(0) == (True, False)   # GPU instances
    lease = m.acquire("job-1", 4.0, gpus=[1])
    assert m.request_mig_mode(1, True, 4.5) is False and m.request_mig_mode(1, False, 4.6)   # cancelled
    assert m.mig_mode(1) == (False, False)
    assert not m.request_mig_mode(1, True, 5.0) and m.mig_mode(1) == (False, True)     # leased
    assert not m.gpu_info(1).mig_enabled
    with pytest.raises(ModelError):
        m.create_gpu_instance(1, "1g.10gb", 6.0)   # still disabled
    restored = NodeModel.from_state(m.spec, json.loads(json.dumps(m.to_state())), 7.0)
    assert restored.mig_mode(0) == (True, False) and restored.mig_mode(1) == (False, True)
    m.reset_gpu(0, 8.0)   # the layout is lost, then the pending disable applies
    assert m.mig_mode(0) == (False, False) and m.gpu_instances_raw(0) == []
    m.release(lease.id, 9.0)
    m.reboot(10.0)
    assert m.mig_mode(1) == (True, True)


def test_a_compute_instance_at_a_placement() -> None:
    m = node()
    m.set_mig_mode(0, True, 1.0)
    gi = m.create_gpu_instance(0, "3g.40gb", 2.0, placement_start=0)
    assert m.create_compute_instance(0, gi.id, 1, 3.0, placement_start=2).id == 2
    with pytest.raises(ModelError) as bad:
        m.create_compute_instance(0, gi.id, 1, 4.0, placement_start=3)   # a 3g's 1c starts: 0, 1, 2
    assert bad.value.code == "INVALID_ARGUMENT"
    with pytest.raises(ModelError) as taken:
        m.create_compute_instance(0, gi.id, 1, 5.0, placement_start=2)
    assert taken.value.code == "RESOURCE_EXHAUSTED"
    assert [c.id for c in m.gpu_instances(0)[0].compute_instances] == [2]


def test_a_clock_change_is_a_clocks_event_at_the_next_tick() -> None:
    """nvmlEventTypeClock's source: busy, a thermal slowdown, idle each change GPU 2's SM clock; a power
    limit does not lower clocks in the model, so it is no event; GPU 3 (idle throughout) has none."""
    m = node()
    m.drain_events()

    def clock_events(now: float) -> list[str]:
        m.tick(now)
        return [e["message"] for e in m.drain_events() if e["kind"] == "clocks"]

    lease = m.acquire("job-1", 1.0, gpus=[2], utilization=100)
    assert clock_events(2.0) == ["GPU 2: clocks SM 345 -> 1980 MHz, memory 2619 -> 2619 MHz"]
    m.set_power_limit(2, 300.0, 3.0)
    assert clock_events(4.0) == []
    m.inject_fault("THERMAL_SLOWDOWN", 2, 5.0)
    slow = m.gpu_info(2).sm_clock_mhz
    assert slow < 1980
    assert clock_events(6.0) == [f"GPU 2: clocks SM 1980 -> {slow} MHz, memory 2619 -> 2619 MHz"]
    assert clock_events(7.0) == []   # unchanged since the last tick
    restored = NodeModel.from_state(m.spec, json.loads(json.dumps(m.to_state())), 7.5)
    restored.tick(8.0)
    assert not [e for e in restored.drain_events() if e["kind"] == "clocks"]   # the restored node is the baseline
    m.release(lease.id, 8.0)
    assert clock_events(9.0) == [f"GPU 2: clocks SM {slow} -> 345 MHz, memory 2619 -> 2619 MHz"]


def test_a_lease_takes_its_jobs_pid() -> None:
    """A lease taken before its job had a process (a Slurm Prolog) is given the job's pid later: NVML's
    running process and the Xid lines name it; an ended lease takes none."""
    m = node()
    lease = m.acquire("slurm-7", 1.0, gpus=[2])
    assert m.set_pid(lease.id, 4242, 2.0).pid == 4242 == m.lease(lease.id).pid
    m.inject_fault("XID", 2, 3.0, xid=13)
    assert "pid=4242" in m.kernel_log()[-1]
    m.release(lease.id, 4.0)
    with pytest.raises(ModelError, match="has ended"):
        m.set_pid(lease.id, 4243, 5.0)
