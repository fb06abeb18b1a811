"""Lossless storage vs lossy business under congestion: two senders into one receiver on each
segment, with real TCP traffic (iperf3) on shaped links."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from collections.abc import Iterator

import pytest

from emulator.network import Network, build_network, congestion
from emulator.topology import load_topology
from tests.network.conftest import unique_prefix

SCALE = 1 / 4000  # 400G Ethernet -> 100 Mbit/s: two senders overload a receiver port 2:1
SENDERS = ("gpu001", "gpu002")  # on eth-leaf01, both segments
RECEIVER = {"storage": "ceph12", "business": "k8s-cp01"}  # on eth-leaf02: traffic crosses the spine
SECONDS = 3


@pytest.fixture(scope="module")
def shaped_net(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Network]:
    if shutil.which("iperf3") is None:
        pytest.skip("needs iperf3 (apt-get install iperf3)")
    net = build_network(load_topology("mini"), prefix=unique_prefix("tc"), bandwidth_scale=SCALE,
                        state_dir=tmp_path_factory.mktemp("cong-net"))
    try:
        yield net
    finally:
        net.stop()


def overload(net: Network, segment: str) -> tuple[dict[str, int], list[int]]:
    """Two iperf3 TCP senders into one receiver for SECONDS; the segment's counters and each
    sender's retransmits."""
    rx = RECEIVER[segment]
    addr = net.address(rx, segment)
    servers = [subprocess.Popen(["ip", "netns", "exec", net.netns(rx), "iperf3", "-s", "-1", "-p", str(port)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for port in (5201, 5202)]
    try:
        time.sleep(0.3)
        before = congestion.counters(net.plan, segment)
        clients = [subprocess.Popen(["ip", "netns", "exec", net.netns(h), "iperf3", "-c", addr, "-p", str(port),
                                     "-t", str(SECONDS), "-J"], stdout=subprocess.PIPE, text=True)
                   for h, port in zip(SENDERS, (5201, 5202), strict=True)]
        results = [json.loads(c.communicate(timeout=SECONDS + 15)[0]) for c in clients]
        after = congestion.counters(net.plan, segment)
    finally:
        for s in servers:
            s.kill()
            s.wait()
    for r in results:
        assert "error" not in r, r["error"]
    return {k: after[k] - before[k] for k in after}, [r["end"]["sum_sent"]["retransmits"] for r in results]


def test_show_reports_each_segments_congestion_behaviour(shaped_net: Network) -> None:
    planes = shaped_net.show()["planes"]
    storage, business = planes["storage"]["congestion"], planes["business"]["congestion"]
    assert storage["mode"] == "lossless" and business["mode"] == "lossy"
    for seg in (storage, business):
        if not seg["applied"]:
            pytest.skip(f"this kernel cannot emulate it: {seg['why']}")
    assert "ecn set ce" in storage["ecn"] and "no drop" in storage["pfc"]
    assert "drop" in business["policer"]


def test_lossless_storage_marks_ecn_and_drops_nothing_lossy_business_drops(shaped_net: Network) -> None:
    planes = shaped_net.show()["planes"]
    for seg in ("storage", "business"):
        if not planes[seg]["congestion"]["applied"]:
            pytest.skip(f"{seg}: {planes[seg]['congestion']['why']}")
    storage, storage_retx = overload(shaped_net, "storage")
    business, business_retx = overload(shaped_net, "business")
    report = f"storage {storage} retransmits {storage_retx}; business {business} retransmits {business_retx}"
    print(report)
    assert storage["ce_marked"] > 0, report
    assert storage["policer_dropped"] == storage["queue_dropped"] == storage["link_dropped"] == 0, report
    assert business["policer_dropped"] > 0, report
    assert sum(business_retx) > 0, report
    assert sum(storage_retx) < sum(business_retx), report
