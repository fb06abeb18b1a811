"""What NVML's set calls change in the node model: the power limit (held to the constraints, capping
the thermal model), persistence mode, the ECC mode (pending until a reset or reboot) and the
application clocks; a refused change changes nothing; the state survives a save and restore; a
reboot restores the defaults."""

from __future__ import annotations

import json

import pytest

from services.gpu_node.errors import ModelError
from services.gpu_node.model import NodeModel
from services.gpu_node.spec import NodeSpec


def node() -> NodeModel:
    return NodeModel(NodeSpec(name="gpu003"), 0.0)


def test_power_limit_within_constraints_caps_the_draw() -> None:
    m = node()
    for bad in (199.0, 701.0):
        with pytest.raises(ModelError, match="outside 200-700 W") as e:
            m.set_power_limit(2, bad, 1.0)
        assert e.value.code == "INVALID_ARGUMENT"
    assert m.gpu_info(2).power_limit_w == 700.0 and not m.has_pending_events
    assert m.set_power_limit(2, 300.0, 1.0).power_limit_w == 300.0
    assert [e["kind"] for e in m.drain_events()] == ["settings"]
    m.set_power_limit(2, 300.0, 1.5)
    assert not m.has_pending_events   # unchanged: no event
    m.acquire("job", 2.0, gpus=[2, 3], utilization=100)
    m.tick(60.0)
    assert m.gpu_info(2).power_w == pytest.approx(300.0, abs=0.5) and m.gpu_info(3).power_w > 600
    assert "SW_POWER_CAP" in m.gpu_info(2).clock_throttle_reasons
    assert "SW_POWER_CAP" not in m.gpu_info(3).clock_throttle_reasons


def test_application_clocks_are_a_supported_pair() -> None:
    m = node()
    for mem, sm in ((2619, 1981), (1000, 1410), (2619, 330)):
        with pytest.raises(ModelError, match="not supported"):
            m.set_app_clocks(4, mem, sm, 1.0)
    assert m.app_clocks(4) == (1980, 2619) and not m.has_pending_events
    m.set_app_clocks(4, 1593, 1410, 1.0)
    m.acquire("job", 2.0, gpus=[4], utilization=50)
    v = m.gpu_info(4)
    assert (v.sm_clock_mhz, v.mem_clock_mhz) == (1410, 1593)
    assert "APPLICATIONS_CLOCKS_SETTING" in v.clock_throttle_reasons
    m.reboot(3.0)
    assert m.app_clocks(4) == (1980, 2619)


def test_persistence_and_ecc_mode() -> None:
    m = node()
    assert m.set_persistence(1, False, 1.0).persistence_mode is False
    m.set_ecc_mode(1, False, 1.0)
    assert m.ecc_mode(1) == (True, False)   # pending
    m.reset_gpu(1, 2.0)
    assert m.ecc_mode(1) == (False, False)
    m.set_ecc_mode(1, True, 3.0)
    restored = NodeModel.from_state(m.spec, json.loads(json.dumps(m.to_state())), 4.0)
    assert restored.ecc_mode(1) == (False, True) and restored.gpu_info(1).persistence_mode is False
    restored.set_power_limit(1, 450.0, 5.0)
    restored.reboot(6.0)
    g = restored.gpu_info(1)
    assert (g.power_limit_w, g.persistence_mode, restored.ecc_mode(1)) == (700.0, True, (True, True))
