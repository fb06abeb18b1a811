#!/usr/bin/env python3
"""Write the compose sandbox's configs: one DaemonConfig JSON per GPU server of a topology (mini),
a mosquitto.conf for the broker service, and a manifest.json for client code in the toolbox.

    .venv/bin/python docker/compose/make_configs.py            # writes docker/compose/*.json
    .venv/bin/python docker/compose/make_configs.py --check    # exit 1 if the files are stale

The configs come from emulator.plan.make_plan with an addressing in which every host's address on
a plane is the network alias `<host>.<plane>` that docker/compose.yaml gives the container on that
plane's network only. A daemon therefore binds its gRPC API and metrics to its oob interface (not
0.0.0.0): a container on `storage` that resolves `gpu001` gets gpu001's storage address, where
nothing listens, so the planes stay apart as on the real cluster. The broker is named by its
compose service name (`broker`); state is SQLite in the container's /run/twin (gone with `down`).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from emulator import addressing  # noqa: E402
from emulator.options import Options  # noqa: E402
from emulator.plan import MQTT_PORT, make_plan  # noqa: E402
from emulator.topology import load_topology  # noqa: E402
from services.gpu_node.plan import GPU_NODE_GRPC_PORT  # noqa: E402

TOPOLOGY = "mini"
TWIN = "mini"
BROKER = "broker"            # the compose service name of the broker
STATE_DIR = "/run/twin"      # owned by the image's `twin` user


@dataclasses.dataclass(frozen=True)
class ComposeAddressing:
    """A host's address on a plane is its network alias there: `<host>.<plane>`."""

    def addresses(self, host: str, index: int) -> dict[str, str]:
        return {plane: f"{host}.{plane}" for plane in addressing.PLANES}

    def netns(self, host: str) -> str | None:
        return None


MOSQUITTO_CONF = f"""# written by docker/compose/make_configs.py: the sandbox's broker on the oob network
listener {MQTT_PORT} 0.0.0.0
allow_anonymous true
persistence false
log_dest stdout
log_type error
log_type warning
log_type notice
max_queued_messages 100000
max_inflight_messages 0
"""


def render(topology: str = TOPOLOGY) -> dict[str, str]:
    topo = load_topology(topology)
    opts = Options(twin=TWIN, network="compose", broker_url=f"mqtt://{BROKER}:{MQTT_PORT}")
    plan = make_plan(topo, 0, Path(STATE_DIR), opts, hosts=ComposeAddressing())
    files: dict[str, str] = {}
    for cfg in plan.daemons:
        cfg = dataclasses.replace(cfg, store_url=f"sqlite:///{STATE_DIR}/{cfg.name}.db", log_file=None,
                                  spec=cfg.spec | {"topology_file": f"/opt/clustertwin/topologies/{topology}.yaml"}
                                  if "topology_file" in cfg.spec else cfg.spec)
        files[f"{cfg.name}.json"] = json.dumps(cfg.to_dict(), indent=1, sort_keys=True) + "\n"
    # What client code in the toolbox (on oob) uses: the service names resolve to oob addresses.
    doc = plan.manifest.dump()
    manifest = dict(doc, run_dir=STATE_DIR, topology_file=f"/opt/clustertwin/topologies/{topology}.yaml")
    manifest["daemons"] = [dict(d, grpc=f"{d['name']}:{GPU_NODE_GRPC_PORT}",
                                metrics=d["metrics"].replace(f"{d['name']}.oob", d["name"]))
                           for d in doc["daemons"] if d["kind"] == "gpu_node"]
    files["manifest.json"] = json.dumps(manifest, indent=1, sort_keys=True) + "\n"
    files["mosquitto.conf"] = MOSQUITTO_CONF
    return files


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="exit 1 if a file differs from what would be written")
    ap.add_argument("--out", type=Path, default=HERE)
    args = ap.parse_args()
    stale = []
    for name, text in render().items():
        path = args.out / name
        if args.check:
            if not path.exists() or path.read_text() != text:
                stale.append(name)
            continue
        path.write_text(text)
        path.chmod(0o644)   # read by the image's non-root user
    if stale:
        print(f"stale: {', '.join(stale)}; run {Path(__file__).name}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
