"""Admin client of the twin's Lustre (`twin up --lustre`): `Twin.lustre()`.

    lu = twin.lustre()
    lu.statfs()                         # every MDT and OST: capacity, use, state (what `lfs df` reads)
    lu.client.getattr("/ckpt/step-10")  # the filesystem's calls (services.lustre.client.core.LustreClient)
    lu.kill_oss("oss01")                # `twin lustre fault oss-kill`: down until start_oss
    lu.fill_ost(0); lu.restore_ost(0)   # `twin lustre fault ost-full` / `ost-clear`
    lu.faults()                         # the OSSs kept down

It talks to the servers' management (OOB) addresses, which `twin` reaches from the operator port
under `--network netns` too. Data I/O as a client node does it goes through a FUSE mount
(`twin lustre mount`), whose process runs on a host of the storage plane.
"""

from __future__ import annotations

import os
import signal
from typing import Any

from emulator.rundir import RunDir, RunDirError
from emulator.sdk import daemons


class LustreAdmin:
    def __init__(self, run: RunDir, manifest: dict[str, Any], failover_timeout: float = 10.0) -> None:
        from services.lustre.client.core import LustreClient

        if not manifest.get("lustre"):
            raise RunDirError(f"the twin in {run.path} runs no Lustre: start it with `twin up TOPOLOGY --lustre`")
        self.run, self.manifest = run, manifest
        self.fsname: str = manifest["lustre"]["fsname"]
        self.client = LustreClient.from_manifest(manifest, failover_timeout=failover_timeout, plane="admin")

    def close(self) -> None:
        self.client.close()

    def __enter__(self) -> LustreAdmin:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def statfs(self) -> Any:
        """`LustreStatfsReply`: the filesystem name and each MDT's and OST's space, inodes and state."""
        return self.client.statfs()

    def oss_names(self) -> list[str]:
        return sorted(d["name"] for d in self.manifest["daemons"] if d["kind"] == "lustre_oss")

    def _marker(self, oss: str) -> Any:
        from services.lustre.oss.daemon import fault_marker

        if oss not in self.oss_names():
            raise KeyError(f"no OSS named {oss!r}: this twin's are {', '.join(self.oss_names())}")
        return fault_marker(self.manifest["lustre"]["data_dir"], oss)

    def kill_oss(self, oss: str) -> int:
        """Kill an OSS and keep it down (its partner takes over its OSTs); returns the pid killed."""
        marker = self._marker(oss)
        pid = daemons.running_pid(self.run, oss)   # before the marker: a refused fault changes nothing
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.write_text("oss-kill\n")   # first: the supervisor's restart finds it and stays down
        os.kill(pid, signal.SIGKILL)
        return pid

    def start_oss(self, oss: str) -> None:
        """Clear kill_oss: the OSS serves again and takes its OSTs back (failback)."""
        marker = self._marker(oss)
        if not marker.exists():
            raise KeyError(f"{oss} has no oss-kill fault")
        marker.unlink()

    def _ost(self, index: int) -> dict[str, Any]:
        known = {o["index"]: o for o in self.manifest["lustre"]["osts"]}
        if index not in known:
            raise KeyError(f"no OST index {index}: this filesystem has {', '.join(str(i) for i in sorted(known))}")
        return known[index]

    def fill_ost(self, index: int) -> Any:
        """Shrink an OST's capacity to what it holds: writes that grow it get ENOSPC. Its new state."""
        self._ost(index)
        used = next(t for t in self.client.oss_admin(index).osts if t.index == index).used_bytes
        return next(t for t in self.client.oss_admin(index, capacity_bytes=used + 1).osts if t.index == index)

    def restore_ost(self, index: int) -> Any:
        """Give an OST its configured capacity back."""
        capacity = int(self._ost(index)["capacity_bytes"])
        return next(t for t in self.client.oss_admin(index, capacity_bytes=capacity).osts if t.index == index)

    def faults(self) -> list[dict[str, Any]]:
        """The OSSs kept down by kill_oss (`twin lustre fault oss-kill`), with the OSTs they serve."""
        out = []
        for d in self.manifest["daemons"]:
            if d["kind"] == "lustre_oss" and self._marker(d["name"]).exists():
                osts = ", ".join(f"OST{i:04x}" for i in d.get("osts", []))
                then = f"served by {d['partner']}" if d.get("partner") else "unavailable"
                out.append({"id": f"{d['name']}-down", "kind": "oss-kill", "target": d["name"],
                            "effect": f"{d['name']} kept down; {osts} {then}"})
        return out
