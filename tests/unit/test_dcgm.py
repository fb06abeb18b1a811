"""dcgm-exporter shaped metrics: parse as Prometheus text, carry the names and labels."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from services.gpu_node import dcgm
from services.gpu_node.model import NodeModel
from services.gpu_node.spec import NodeSpec

DEFAULT_SET = {
    "DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_MEM_CLOCK", "DCGM_FI_DEV_MEMORY_TEMP", "DCGM_FI_DEV_GPU_TEMP",
    "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "DCGM_FI_DEV_PCIE_REPLAY_COUNTER",
    "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_MEM_COPY_UTIL", "DCGM_FI_DEV_ENC_UTIL", "DCGM_FI_DEV_DEC_UTIL",
    "DCGM_FI_DEV_XID_ERRORS", "DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_RESERVED",
    "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS",
    "DCGM_FI_DEV_ROW_REMAP_FAILURE", "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
    "DCGM_FI_PROF_DRAM_ACTIVE", "DCGM_FI_PROF_PCIE_TX_BYTES", "DCGM_FI_PROF_PCIE_RX_BYTES",
    "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
}


def parse(text: str) -> dict[str, list]:
    return {f.name: f for f in text_string_to_metric_families(text)}


def test_names_types_and_labels() -> None:
    m = NodeModel(NodeSpec(name="gpu007"), 0.0)
    m.acquire("train", 0.0, gpus=[1], utilization=100)
    m.inject_fault("XID", 2, 1.0, xid=63)
    m.tick(60.0)
    text = dcgm.render(m)
    assert "# HELP DCGM_FI_DEV_GPU_TEMP GPU temperature (in C).\n# TYPE DCGM_FI_DEV_GPU_TEMP gauge\n" in text
    fams = parse(text)
    assert DEFAULT_SET <= set(fams)
    assert any("NVLINK" in name for name in fams)
    assert fams["DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"].type == "counter"
    assert fams["DCGM_FI_DEV_POWER_USAGE"].type == "gauge"
    temps = fams["DCGM_FI_DEV_GPU_TEMP"].samples
    assert len(temps) == 8
    labels = temps[1].labels
    assert labels == {
        "gpu": "1", "UUID": m.gpu_info(1).uuid, "pci_bus_id": "00000000:2A:00.0", "device": "nvidia1",
        "modelName": "NVIDIA H100 80GB HBM3", "Hostname": "gpu007", "DCGM_FI_DRIVER_VERSION": "550.90.07",
    }
    by_gpu = {s.labels["gpu"]: s.value for s in fams["DCGM_FI_DEV_POWER_USAGE"].samples}
    assert by_gpu["1"] > 500 and by_gpu["0"] < 100
    assert {s.labels["gpu"]: s.value for s in fams["DCGM_FI_DEV_XID_ERRORS"].samples}["2"] == 63
    assert {s.labels["gpu"]: s.value for s in fams["DCGM_FI_DEV_GPU_UTIL"].samples}["1"] == 100


def test_lost_gpu_has_no_series_and_mig_series_carry_instance_labels() -> None:
    m = NodeModel(NodeSpec(name="gpu007", mig_layout="all-balanced"), 0.0)
    m.inject_fault("XID", 5, 1.0, xid=79)
    fams = parse(dcgm.render(m))
    for fam in fams.values():
        assert all(s.labels["gpu"] != "5" for s in fam.samples)
    samples = fams["DCGM_FI_DEV_FB_USED"].samples
    assert len(samples) == 7 * 4
    first = [s.labels for s in samples if s.labels["gpu"] == "0"]
    assert [(x["GPU_I_PROFILE"], x["GPU_I_ID"]) for x in first] == [
        ("1g.10gb", "7"), ("1g.10gb", "8"), ("2g.20gb", "4"), ("3g.40gb", "2")]
