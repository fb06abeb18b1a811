"""Which twin devices the Prolog leases for SLURM_JOB_GPUS (services/slurm/job_leases.py), from the
gres.conf the twin renders: pure, no Slurm. The index order (gres.conf's lines, then each line's
units) is what slurmd 22.05 gave jobs on the netns rack twin: 1g.10gb 0-15, 2g.20gb 16-23, 3g.40gb 24-31."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from emulator.topology import load_topology
from services.slurm.config import make_config, render_gres_conf
from services.slurm.job_leases import install, mig_visible, node_units, parse_indexes, wanted


@pytest.fixture(scope="module")
def gres_conf() -> str:
    topo = load_topology("rack")
    cfg = make_config(topo, Path("/run/x"), hostname="h", ctld_port=1, slurmd_ports=[2, 3, 4, 5])
    return render_gres_conf(cfg)


def test_slurm_job_gpus_parsed() -> None:
    assert parse_indexes("0,1") == [0, 1]
    assert parse_indexes("2-4,7") == [2, 3, 4, 7]
    assert parse_indexes("") == []


def test_whole_gpu_indexes_are_gpus(gres_conf: str) -> None:
    units = node_units(gres_conf, "gpu001")
    assert units == [("h100", k) for k in range(8)]
    assert wanted(units, [3, 5]) == ([3, 5], {})


def test_mig_indexes_are_the_kth_slice_of_their_profile(gres_conf: str) -> None:
    units = node_units(gres_conf, "gpu004")
    assert len(units) == 32
    assert wanted(units, [16, 17]) == ([], {"2g.20gb": [0, 1]})
    assert wanted(units, [0, 24, 31]) == ([], {"1g.10gb": [0], "3g.40gb": [0, 7]})
    with pytest.raises(ValueError, match="beyond"):
        wanted(units, [32])


def test_install_names_the_wrappers(tmp_path: Path) -> None:
    lines = install(tmp_path, Path("/run/twin"))
    assert lines == {"Prolog": str(tmp_path / "prolog.sh"), "Epilog": str(tmp_path / "epilog.sh"),
                     "TaskProlog": str(tmp_path / "task-prolog.sh"), "PrologFlags": "Alloc"}
    assert "services.slurm.job_leases epilog --run-dir /run/twin" in (tmp_path / "epilog.sh").read_text()


def _mig(gpu: int, gi: int, ci: int, profile: str) -> SimpleNamespace:
    return SimpleNamespace(is_mig=True, gpu=gpu, gi_id=gi, ci_id=ci, mig_profile=profile,
                           uuid=f"MIG-{gpu}-{gi}-{ci}")


def test_a_mig_tasks_devices_are_the_slices_its_job_holds_in_order(gres_conf: str) -> None:
    """Slurm's GRES indexes 24 and 25 (two 3g.40gb units) name the two 3g.40gb slices the job's lease
    holds, in (GPU, GI, CI) order, whatever order the daemon listed them in; a step given only index
    25 sees only the second; a whole-GPU job's indexes are left alone."""
    units = node_units(gres_conf, "gpu004")
    held = [_mig(3, 2, 0, "3g.40gb"), _mig(1, 1, 0, "3g.40gb")]
    assert mig_visible(units, [24, 25], [24, 25], held) == ["MIG-1-1-0", "MIG-3-2-0"]
    assert mig_visible(units, [24, 25], [25], held) == ["MIG-3-2-0"]
    both = [*held, _mig(0, 5, 0, "1g.10gb")]
    assert mig_visible(units, [0, 24, 25], [0, 24, 25], both) == ["MIG-0-5-0", "MIG-1-1-0", "MIG-3-2-0"]
    # a slice the lease could not take (another holder) is left out rather than named wrongly
    assert mig_visible(units, [24, 25], [24, 25], held[:1]) == ["MIG-3-2-0"]
    assert mig_visible(node_units(gres_conf, "gpu001"), [3, 5], [3, 5], []) == []
