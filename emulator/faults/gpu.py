"""GPU faults on an emulated HGX H100 server, through its GpuNode API (emulator/sdk/gpu_node.py).

    inject("gpu", "gpu001", "xid", gpu=3, xid=79)      # an Xid as the driver logs it (NVRM: Xid ...)
    inject("gpu", "gpu001", "ecc-dbe", gpu=2)          # also thermal, ecc-sbe (count=N), nvlink-down (link=N)

Clearing a lost GPU (Xid 79) is refused by the server: only a reboot brings it back; the fault list
then shows it cleared.
"""

from __future__ import annotations

from typing import Any

from clustertwin.v1 import gpu_node_pb2 as pb
from emulator.errors import TwinRpcError
from emulator.events import FaultPayload
from emulator.faults.backend import Backend, FaultError, Native, need

GPUS_PER_SERVER = 8
NATIVE_TIMEOUT_S = 3.0   # a server that does not answer in this is left out of a listing


class GpuFaults(Backend):
    subsystem = "gpu"
    kinds = {"xid": "an Xid (xid=N: 13, 31, 48, 63, 64, 74, 79, 94, 95, 119, 120, ...)",
             "thermal": "thermal slowdown", "ecc-sbe": "correctable ECC errors (count=N)",
             "ecc-dbe": "an uncorrectable ECC error (Xid 48)", "nvlink-down": "an NVLink down (link=N; Xid 74)"}
    params = {"gpu": int, "xid": int, "link": int, "count": int, "lease": str}

    def present(self) -> str:
        return "" if self.twin.gpu_nodes else "this twin runs no GPU servers"

    def check(self, target: str, kind: str, params: dict[str, Any]) -> dict[str, Any]:
        out = super().check(target, kind, params)
        if target not in self.twin.gpu_nodes:
            names = self.twin.gpu_nodes
            raise FaultError(f"no GPU server {target!r} in this twin ({names[0]}..{names[-1]})")
        if not 0 <= need(out, "gpu", kind) < GPUS_PER_SERVER:
            raise FaultError(f"gpu must be 0..{GPUS_PER_SERVER - 1}, not {out['gpu']}")
        if kind == "xid" and not need(out, "xid", kind):
            raise FaultError("an xid fault needs xid=N (N > 0)")
        return out

    def inject(self, target: str, kind: str, params: dict[str, Any]) -> tuple[str, str]:
        f = self.twin.gpu_node(target).inject_fault(kind, params["gpu"], xid=params.get("xid", 0),
                                                    link=params.get("link", 0), count=params.get("count", 0),
                                                    lease_id=params.get("lease", ""))
        return f"{target}/{f.id}", f"GPU {f.gpu}: {f.effect}"

    def clear(self, fault: FaultPayload) -> str:
        node, _, fid = fault.backend_id.partition("/")
        client = self.twin.gpu_node(node)
        mine = {f.id: f for f in client.faults(include_cleared=True)}.get(fid)
        if mine is None or not mine.active:
            return "already cleared on the server"
        try:
            client.clear_fault(fid)
        except TwinRpcError as e:
            raise FaultError(e.details) from None
        return "cleared"

    def native(self) -> list[Native]:
        out = []
        for name in self.twin.gpu_nodes:
            sdk = self.twin.gpu_node(name)
            client = type(sdk)(name, sdk.address, timeout=NATIVE_TIMEOUT_S)   # the SDK's client, a short timeout
            try:
                found = client.faults()
            except TwinRpcError:   # cut off or restarting: its faults stay as the log has them
                self.unknown.add(name)
                continue
            finally:
                client.close()
            for f in found:
                kind = pb.GpuFaultKind.Name(f.kind).removeprefix("GPU_FAULT_KIND_").lower().replace("_", "-")
                kind = {"thermal-slowdown": "thermal"}.get(kind, kind)
                params = {"gpu": f.gpu} | ({"xid": f.xid} if f.xid and kind == "xid" else {})
                out.append(Native(f"{name}/{f.id}", name, kind, f"GPU {f.gpu}: {f.effect}", params))
        return out
