"""`services.slurm.config`: slurm.conf and gres.conf rendered from the topologies (pure)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from emulator.topology import load_topology
from services.slurm.config import expand_brackets, make_config, mig_type, render_gres_conf, render_slurm_conf
from tests.fake_manifest import fake_manifest


def _config(name: str, auth: str = "munge"):
    topo = load_topology(name)
    n = len(topo.gpu_servers)
    return topo, make_config(topo, Path("/run/twin/slurm"), hostname="host", ctld_port=6817,
                             slurmd_ports=list(range(7000, 7000 + n)), auth=auth)


def _kv(line: str) -> dict[str, str]:
    return dict(re.findall(r"(\w+)=(\S+)", line))


def test_every_gpu_server_is_a_node_with_its_own_port() -> None:
    topo, cfg = _config("su-1024")
    conf = render_slurm_conf(cfg)
    nodes = [_kv(ln) for ln in conf.splitlines() if ln.startswith("NodeName=")]
    assert [n["NodeName"] for n in nodes] == [s.name for s in topo.gpu_servers]
    assert len(nodes) == 128 and len({n["Port"] for n in nodes}) == 128
    for n in nodes:
        assert n["NodeAddr"] == "127.0.0.1" and n["NodeHostname"] == "host"
        assert (n["CPUs"], n["Sockets"], n["CoresPerSocket"], n["ThreadsPerCore"]) == \
            ("224", "2", "56", "2")
        assert int(n["RealMemory"]) >= 2_000_000
    for needle in ("SlurmctldHost=host(127.0.0.1)", "SlurmctldPort=6817", "GresTypes=gpu",
                   "SelectType=select/cons_tres", "PreemptType=preempt/partition_prio",
                   "PreemptMode=REQUEUE", "ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none",
                   "AuthType=auth/munge", "AuthInfo=socket=/run/twin/slurm/munge/munge.socket,cred_expire=10",
                   "SlurmdSpoolDir=/run/twin/slurm/spool/%n", "SlurmdParameters=config_overrides"):
        assert needle in conf.splitlines(), needle


def test_partitions_mirror_the_seed_queues() -> None:
    topo, cfg = _config("rack")
    parts = {p["PartitionName"]: p for p in
             (_kv(ln) for ln in render_slurm_conf(cfg).splitlines() if ln.startswith("PartitionName="))}
    names = ",".join(s.name for s in topo.gpu_servers)
    assert parts["exploratory"]["Nodes"] == names and parts["exploratory"]["Default"] == "YES"
    assert parts["regression"]["Nodes"] == names
    assert int(parts["regression"]["PriorityTier"]) > int(parts["exploratory"]["PriorityTier"])
    assert parts["exploratory"]["PreemptMode"] == "REQUEUE"
    assert parts["dev"]["Nodes"] == topo.gpu_servers[-1].name  # the MIG server


def test_mig_servers_offer_typed_slices_and_gres_conf_names_a_file_per_unit() -> None:
    topo, cfg = _config("mini")
    whole, mig = cfg.nodes
    assert whole.gres_spec == "gpu:h100:8"
    # all-balanced: 2 x 1g.10gb + 2g.20gb + 3g.40gb on each of 8 GPUs
    assert mig.gres_spec == ",".join([f"gpu:{mig_type('1g.10gb')}:16", f"gpu:{mig_type('2g.20gb')}:8",
                                      f"gpu:{mig_type('3g.40gb')}:8"])
    assert mig_type("1g.10gb") == "nvidia_h100_80gb_hbm3_1g.10gb"
    gres = render_gres_conf(cfg).splitlines()
    assert "AutoDetect=off" in gres
    lines = [_kv(ln) for ln in gres if ln.startswith("NodeName=")]
    counts = {(ln["NodeName"], ln["Type"]): len(expand_brackets(ln["File"])) for ln in lines}
    assert counts == {("gpu001", "h100"): 8, ("gpu002", mig_type("1g.10gb")): 16,
                      ("gpu002", mig_type("2g.20gb")): 8, ("gpu002", mig_type("3g.40gb")): 8}
    files = cfg.device_files()
    assert len(files) == len(set(files)) == 40
    assert all(str(f).startswith("/run/twin/slurm/dev/") for f in files)


def test_auth_none_and_bad_arguments() -> None:
    _, cfg = _config("mini", auth="none")
    conf = render_slurm_conf(cfg)
    assert "AuthType=auth/none" in conf and "AuthInfo" not in conf
    topo = load_topology("mini")
    with pytest.raises(ValueError, match="2 GPU servers need 2 slurmd ports"):
        make_config(topo, Path("/x"), hostname="h", ctld_port=1, slurmd_ports=[2])
    with pytest.raises(ValueError, match="auth"):
        make_config(topo, Path("/x"), hostname="h", ctld_port=1, slurmd_ports=[2, 3], auth="jwt")


def test_netns_placement_puts_slurmctld_and_each_slurmd_on_their_oob_addresses() -> None:
    from services.slurm.daemon import placement
    topo = load_topology("rack")
    servers = [s.name for s in topo.gpu_servers]
    daemons = [{"name": n, "kind": "gpu_node", "grpc": f"10.103.0.{i + 1}:50051", "netns": f"ct0-{n}",
                "addresses": {"oob": f"10.103.0.{i + 1}"}} for i, n in enumerate(servers)]
    manifest = fake_manifest(Path("/nonexistent"), daemons, network="netns", management={
        "host": "k8s-cp01", "netns": "ct0-k8s-cp01", "addresses": {"oob": "10.103.0.21"}})
    assert placement(manifest.model_copy(update={"network": "loopback"})) == {}
    cfg = make_config(topo, Path("/run/twin/slurm"), hostname="host", ctld_port=6817,
                      slurmd_ports=list(range(7000, 7000 + len(servers))), **placement(manifest))
    conf = render_slurm_conf(cfg)
    assert "SlurmctldHost=host(10.103.0.21)" in conf.splitlines()
    assert cfg.ctld_netns == "ct0-k8s-cp01"
    nodes = {n["NodeName"]: n for n in (_kv(ln) for ln in conf.splitlines() if ln.startswith("NodeName="))}
    assert {n: v["NodeAddr"] for n, v in nodes.items()} == {n: f"10.103.0.{i + 1}" for i, n in enumerate(servers)}
    assert {n.name: n.netns for n in cfg.nodes} == {n: f"ct0-{n}" for n in servers}
    # loopback stays as it was
    _, plain = _config("rack")
    assert "SlurmctldHost=host(127.0.0.1)" in render_slurm_conf(plain)
    assert all(n.addr == "127.0.0.1" and n.netns is None for n in plain.nodes)
