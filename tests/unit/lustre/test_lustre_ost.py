"""OST state and the NVMe bandwidth/latency model."""

from __future__ import annotations

import pytest

from services.lustre.errors import LustreError
from services.lustre.ost import GiB, NvmeModel, OstState, TiB, target_name


def test_nvme_time_model() -> None:
    m = NvmeModel()
    assert m.transfer_time(0, "read") == 0.0
    one = m.transfer_time(GiB, "read")
    assert one == pytest.approx(100e-6 + GiB / 3.0e9)  # a lone stream is capped by its own bandwidth
    assert m.aggregate_bandwidth("read", 4) == 12.0e9  # four streams saturate the target
    assert m.transfer_time(GiB, "read", 8) == pytest.approx(100e-6 + GiB / 1.5e9)  # fair share beyond that
    assert m.transfer_time(GiB, "write") > one
    custom = NvmeModel(read_bw=1e9, stream_read_bw=1e9, read_latency=0.0)
    assert custom.transfer_time(10**9, "read") == pytest.approx(1.0)
    for bad in (lambda: m.transfer_time(-1, "read"), lambda: m.stream_bandwidth("read", 0),
                lambda: NvmeModel(read_bw=0)):
        with pytest.raises(LustreError) as e:
            bad()
        assert e.value.name == "EINVAL"


def test_ost_space_and_full() -> None:
    o = OstState(3, "oss2", TiB)
    assert target_name("testfs", "OST", 10) == "testfs-OST000a_UUID" and o.name("testfs") == "testfs-OST0003_UUID"
    assert o.usable_for_new_objects and not o.full
    o.grow(TiB - 100)
    assert o.full and not o.usable_for_new_objects
    with pytest.raises(LustreError) as e:
        o.grow(200)
    assert e.value.name == "ENOSPC" and e.value.strerror == "No space left on device"
    with pytest.raises(LustreError):
        OstState(0, "oss1", 0)
