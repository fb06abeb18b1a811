"""A real Prometheus scrapes the GPU servers' dcgm-exporter endpoints."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from emulator.client import Twin

PROMETHEUS = shutil.which("prometheus")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def query(base: str, promql: str) -> list[dict]:
    url = f"{base}/api/v1/query?{urllib.parse.urlencode({'query': promql})}"
    try:
        with urllib.request.urlopen(url, timeout=2) as reply:
            return json.loads(reply.read())["data"]["result"]
    except OSError:
        return []


@pytest.mark.skipif(PROMETHEUS is None, reason="needs Debian's prometheus (make install installs it)")
def test_prometheus_scrapes_dcgm_metrics_from_every_server(mini_twin: Twin, tmp_path: Path) -> None:
    targets = [d.metrics.removeprefix("http://").removesuffix("/metrics") for d in mini_twin.daemons("gpu_node")]
    config = tmp_path / "prometheus.yml"
    config.write_text("global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: dcgm\n"
                      f"    static_configs:\n      - targets: {json.dumps(targets)}\n")
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen([PROMETHEUS, f"--config.file={config}", f"--storage.tsdb.path={tmp_path / 'data'}",
                             f"--web.listen-address=127.0.0.1:{port}"],
                            stdout=subprocess.DEVNULL, stderr=open(tmp_path / "prometheus.log", "wb"))
    try:
        deadline = time.monotonic() + 60
        temps: list[dict] = []
        while time.monotonic() < deadline:
            up = query(base, 'up{job="dcgm"} == 1')
            temps = query(base, "DCGM_FI_DEV_GPU_TEMP")
            if len(up) == len(targets) and {t["metric"].get("Hostname") for t in temps} == {"gpu001", "gpu002"}:
                break
            time.sleep(0.25)
        else:
            log = (tmp_path / "prometheus.log").read_text()[-2000:]
            pytest.fail(f"Prometheus did not scrape both servers in time; log:\n{log}")
        whole = [t for t in temps if t["metric"]["Hostname"] == "gpu001"]
        assert sorted(int(t["metric"]["gpu"]) for t in whole) == list(range(8))
        assert all(t["metric"]["modelName"] == "NVIDIA H100 80GB HBM3" for t in whole)
        assert all(25 <= float(t["value"][1]) <= 90 for t in whole)
        assert query(base, 'DCGM_FI_DEV_FB_FREE{Hostname="gpu001"}'), "memory series missing"
    finally:
        proc.terminate()
        proc.wait(timeout=10)
