"""Admin client of the twin's Lustre (`twin up --lustre`): `Twin.lustre()` (services/lustre/service.py).

    lu = twin.lustre()
    lu.statfs()                         # every MDT and OST: capacity, use, state (what `lfs df` reads)
    lu.client.getattr("/ckpt/step-10")  # the filesystem's calls (services.lustre.client.core.LustreClient)
    f = lu.inject_fault("oss-kill", "oss01")    # the fault API: a LustreFault with its id
    lu.list_faults(); lu.clear_fault(f.id)
    lu.events("oss01")                  # what the OSS (or an MDS) publishes: LustreEvent, from WatchEvents
    lu.mdt_params()                     # the MDT's tunables (mdd.hot-MDT0000.atime_diff); set_mdt_param
    lu.kill_oss("oss01")                # `twin lustre fault oss-kill`: the fault, then kill -9; down until start_oss
    lu.fill_ost(0); lu.restore_ost(0)   # `twin lustre fault ost-full` / `ost-clear`
    lu.faults()                         # the active faults as dicts (id, kind, target, effect)

Faults live on the OSS daemons (their LustreOss InjectFault / ClearFault / ListFaults calls and their
stores): an oss-kill on the OSS itself, an ost-full on the OSS serving the OST. It talks to the servers'
management (OOB) addresses, which `twin` reaches from the operator port under `--network netns` too.
Data I/O as a client node does it goes through a FUSE mount (`twin lustre mount`).
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from typing import Any

import grpc

from clustertwin.v1 import lustre_pb2 as pb
from clustertwin.v1 import lustre_pb2_grpc as pb_grpc
from emulator import paging
from emulator.errors import BadInput, NotFound
from emulator.manifest import Manifest
from emulator.rundir import RunDir
from emulator.sdk import daemons
from services.lustre.manifest import LustreSection, OstInfo, servers

PAGE_SIZE = 100
CALL_TIMEOUT = 30.0   # an OSS restarting after kill_oss answers within a few seconds


class LustreAdmin:
    def __init__(self, run: RunDir, manifest: Manifest, failover_timeout: float = 10.0) -> None:
        from services.lustre.client.core import LustreClient

        self.section = LustreSection.require(manifest, run.path)
        self.run, self.manifest = run, manifest
        self.fsname = self.section.fsname
        self.osts: dict[int, OstInfo] = {o.index: o for o in self.section.osts}
        self.client = LustreClient.from_section(self.section, failover_timeout=failover_timeout, plane="admin")
        self.mds, self.oss = servers(manifest)
        self._channels: dict[str, grpc.Channel] = {}

    def close(self) -> None:
        self.client.close()
        for ch in self._channels.values():
            ch.close()

    def __enter__(self) -> LustreAdmin:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def statfs(self) -> Any:
        """`LustreMdsStatfsResponse`: the filesystem name and each MDT's and OST's space, inodes and state."""
        return self.client.statfs()

    def oss_names(self) -> list[str]:
        return sorted(self.oss)

    def events(self, server: str, since_seq: int = 0, timeout: float | None = None) -> Iterator[pb.LustreEvent]:
        """The events an MDS or OSS publishes (services/lustre/events.py), from its WatchEvents: those it
        kept after since_seq, then each new one, until the caller stops iterating, the server ends or
        `timeout` seconds have passed (grpc.RpcError DEADLINE_EXCEEDED)."""
        d = self.mds.get(server) or self.oss.get(server)
        if d is None:
            raise NotFound(f"no Lustre server named {server!r}: this twin's are "
                           f"{', '.join(sorted(self.mds) + self.oss_names())}")
        if server in self.mds:
            stub, req = pb_grpc.LustreMdsStub, pb.LustreMdsWatchEventsRequest(since_seq=since_seq)
        else:
            stub, req = pb_grpc.LustreOssStub, pb.LustreOssWatchEventsRequest(since_seq=since_seq)
        with grpc.insecure_channel(d.health_address) as ch:
            stream = stub(ch).WatchEvents(req, timeout=timeout)
            try:
                for r in stream:
                    yield r.event
            finally:
                stream.cancel()

    # ---- the MDT's tunables (lctl get_param / set_param mdd.* on the MDS node) --------------------
    def mdt_params(self) -> list[pb.LustreParam]:
        """The active MDS's tunables: mdd.<fsname>-MDT0000.atime_diff."""
        return list(self.client.mdcall("GetParams", pb.LustreMdsGetParamsRequest()).params)

    def set_mdt_param(self, name: str, value: str) -> pb.LustreParam:
        """Set one by its full name (ClientError ENOENT or EINVAL, nothing changed, for a bad one)."""
        return self.client.mdcall("SetParam", pb.LustreMdsSetParamRequest(name=name, value=value)).param

    # ---- the fault API -----------------------------------------------------------------------
    def _oss_call(self, oss: str, method: str, request: Any) -> Any:
        """One call to an OSS's management address (waiting while it restarts)."""
        if oss not in self.oss:
            raise NotFound(f"no OSS named {oss!r}: this twin's are {', '.join(self.oss_names())}")
        d = self.oss[oss]
        if oss not in self._channels:
            self._channels[oss] = grpc.insecure_channel(d.health_address)
        try:
            return getattr(pb_grpc.LustreOssStub(self._channels[oss]), method)(request, timeout=CALL_TIMEOUT,
                                                                                wait_for_ready=True)
        except grpc.RpcError as e:
            from services.lustre.client.core import ClientError
            from services.lustre.errors import errno_of

            raise ClientError(errno_of(e), f"{oss}: {e.details()}") from None

    def _ost(self, index: int) -> OstInfo:
        if index not in self.osts:
            raise NotFound(f"no OST index {index}: this filesystem has {', '.join(str(i) for i in sorted(self.osts))}")
        return self.osts[index]

    def inject_fault(self, kind: str, target: str | int) -> pb.LustreFault:
        """kind "oss-kill", target an OSS name: it serves nothing (its partner takes its OSTs) until cleared.
        kind "ost-full", target an OST index: its capacity shrinks to what it holds. Returns the fault."""
        if kind == "oss-kill":
            return self._oss_call(str(target), "InjectFault", pb.LustreOssInjectFaultRequest(kind=kind)).fault
        if kind == "ost-full":
            index = int(target)
            self._ost(index)
            req = pb.LustreOssInjectFaultRequest(kind=kind, ost=index)
            return self.client.osts[index].call("InjectFault", req).fault   # the OSS serving it now
        raise BadInput(f"unknown Lustre fault kind {kind!r}: oss-kill or ost-full")

    def list_faults(self, include_cleared: bool = False) -> list[pb.LustreFault]:
        """Every OSS's faults (active ones unless include_cleared), by OSS."""
        out: list[pb.LustreFault] = []
        for oss in self.oss_names():
            request = pb.LustreOssListFaultsRequest(include_cleared=include_cleared, page_size=PAGE_SIZE)
            out += paging.every_page(lambda r, oss=oss: self._oss_call(oss, "ListFaults", r), request, "faults")
        return out

    def clear_fault(self, fault_id: str) -> pb.LustreFault:
        holder = next((f.oss for f in self.list_faults(include_cleared=True) if f.id == fault_id), None)
        if holder is None:
            raise NotFound(f"no Lustre fault {fault_id!r} (see `twin lustre fault list`)")
        return self._oss_call(holder, "ClearFault", pb.LustreOssClearFaultRequest(id=fault_id)).fault

    # ---- shortcuts (`twin lustre fault ...`) ---------------------------------------------------
    def kill_oss(self, oss: str) -> int:
        """An oss-kill fault, then kill -9 of the OSS (it restarts and stays down); returns the pid killed."""
        if oss not in self.oss:
            raise NotFound(f"no OSS named {oss!r}: this twin's are {', '.join(self.oss_names())}")
        pid = daemons.running_pid(self.run, oss)   # before the fault: a refused kill changes nothing
        self.inject_fault("oss-kill", oss)
        os.kill(pid, signal.SIGKILL)
        return pid

    def start_oss(self, oss: str) -> None:
        """Clear kill_oss: the OSS serves again and takes its OSTs back (failback)."""
        faults = [f for f in self.list_faults() if f.oss == oss and f.kind == "oss-kill"]
        if not faults:
            raise NotFound(f"{oss} has no oss-kill fault")
        for f in faults:
            self.clear_fault(f.id)

    def _ost_state(self, index: int) -> Any:
        return next(t for t in self.client.oss_admin(index).osts if t.index == index)

    def fill_ost(self, index: int) -> Any:
        """An ost-full fault: writes that grow the OST get ENOSPC. Its new state."""
        self.inject_fault("ost-full", index)
        return self._ost_state(index)

    def restore_ost(self, index: int) -> Any:
        """Clear the OST's ost-full faults: it has its configured capacity back. Its state."""
        self._ost(index)
        for f in self.list_faults():
            if f.kind == "ost-full" and f.HasField("ost") and f.ost == index:
                self.clear_fault(f.id)
        return self._ost_state(index)

    def faults(self) -> list[dict[str, Any]]:
        """The active faults: {"id", "kind", "target" (the OSS, or the OST as OSTxxxx), "effect"}."""
        return [{"id": f.id, "kind": f.kind, "target": f"OST{f.ost:04x}" if f.HasField("ost") else f.oss,
                 "effect": f.effect} for f in self.list_faults()]

    def down_oss(self) -> set[str]:
        """The OSSs an oss-kill fault keeps down."""
        return {f.oss for f in self.list_faults() if f.kind == "oss-kill"}

