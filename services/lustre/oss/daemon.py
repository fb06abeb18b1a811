"""The OSS daemon: gRPC `clustertwin.v1.LustreOss` on the twin's server skeleton (emulator/daemon.py,
through services/lustre/server.py: grpc.aio, health, reflection), serving the objects of its OSTs.

    python -m services.lustre.oss.daemon CONFIG.json      # normally forked by the supervisor

DaemonConfig fields read:
    name, grpc, store_url   the store keeps the OSS's faults (services/lustre/oss/faults.py)
    spec.fsname
    spec.osts            [{"index", "capacity_bytes", "dir"}]: the OSTs it serves and each one's data
                            directory (the OST's "disk"; its failover partner mounts the same one)
    spec.partner         the failover partner OSS (or None) and spec.partner_osts its OSTs
    spec.admin          a second address for the same server: the host's OOB (management) one, `grpc`
                            (and the bulk port, `grpc` + 1) being its storage-network address
    spec.nvme_scale     the NVMe time model (services.lustre.ost.NvmeModel) applied as call
                            duration x this factor: 1.0 as modelled, 0 off. The environment variable
                            TWIN_LUSTRE_NVME_SCALE overrides it (tests and the bench turn it off).

Failover (services/lustre/oss/targets.py): each OSS takes its own OSTs; it also watches its partner's
and takes one over as soon as nobody holds its lock (the partner died or went down), publishing
`oss_failover`, and hands it back when the owner asks (`oss_failback`). An `oss-kill` fault (InjectFault)
keeps the OSS down, across restarts, until it is cleared: it serves no OST, its service's health says
NOT_SERVING, and it answers only the admin calls. Clients see ENODEV/UNAVAILABLE from an OSS that does
not serve an OST and try the other server of the pair (services.lustre.client.core.Target).

Each Read/Write takes at least the time the OST's NVMe model gives for its size and the number
of requests in flight on that OST; the real file I/O time counts towards it.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time

from clustertwin.v1 import lustre_pb2_grpc as pb_grpc
from emulator.daemon import main
from emulator.daemon_config import DaemonConfig
from services.lustre.bulk import BulkServer
from services.lustre.daemon_spec import OssSpec
from services.lustre.errors import LustreError
from services.lustre.events import EventPublisher
from services.lustre.oss.faults import FaultLog, OssFault
from services.lustre.oss.objects import ObjectStore
from services.lustre.oss.servicer import OssServicer, timed
from services.lustre.oss.targets import OstTarget
from services.lustre.server import LustreDaemon
from services.lustre.wire import OSS_FRAMED_OFFSET

log = logging.getLogger("lustre.oss")

SERVICE_NAME = "clustertwin.v1.LustreOss"
TAKEOVER_GRACE_S = 2.0   # at start-up each OSS first takes its own OSTs; only then a free one is a dead partner's


def nvme_scale(cfg: DaemonConfig) -> float:
    env = os.environ.get("TWIN_LUSTRE_NVME_SCALE")
    return float(env) if env not in (None, "") else OssSpec.of(cfg).nvme_scale


class OssDaemon(LustreDaemon):
    def __init__(self, cfg: DaemonConfig) -> None:
        super().__init__(cfg)
        self.name = cfg.name
        spec = OssSpec.of(cfg)
        self.targets = [OstTarget(o.model_dump(), True) for o in spec.osts] + \
                       [OstTarget(o.model_dump(), False) for o in spec.partner_osts]
        self.partner = spec.partner
        self.stores: dict[int, ObjectStore] = {}
        self.scale = nvme_scale(cfg)
        self.events = EventPublisher(cfg.twin, cfg.name, cfg.broker_host, cfg.broker_port, cfg.clock.now)
        self.faults = FaultLog(cfg.store_url, cfg.name)
        self.down = bool(self.faults.active("oss-kill"))   # restarted while a fault keeps it down: a state
        self.managing = threading.Lock()
        self.started = time.monotonic()
        self.bulk: BulkServer | None = None

    # ---- what the servicer reads -------------------------------------------------------------
    def served(self, ost: int) -> ObjectStore | None:
        s = self.stores.get(ost)
        return s if s is not None and s.served else None

    def stores_now(self) -> list[ObjectStore]:
        return [s for _, s in sorted(self.stores.items())]

    # ---- targets and failover ----------------------------------------------------------------
    def _serve(self, t: OstTarget) -> None:
        st = ObjectStore(t.index, t.dir, t.capacity, self.name)
        if self.faults.active("ost-full", t.index):
            st.state.capacity_bytes = st.state.used_bytes + 1
        self.stores[t.index] = st

    def _drop(self, t: OstTarget) -> None:
        st = self.stores.pop(t.index, None)
        if st is not None:
            st.served = False
        t.unlock()

    def manage_once(self) -> None:
        """Take, keep, hand over and take back OSTs; go down or up as the oss-kill fault says."""
        with self.managing:
            down = bool(self.faults.active("oss-kill"))
            if down != self.down:
                self._go(down)
            if not self.down:
                for t in self.targets:
                    self._manage_target(t)

    def _go(self, down: bool) -> None:
        self.down = down
        if down:
            for t in self.targets:
                self._drop(t)
                if t.own:
                    t.want_path.unlink(missing_ok=True)
            self.events.publish("oss_down", f"{self.name} is down (fault): it serves no OST", oss=self.name)
        else:
            self.events.publish("oss_up", f"{self.name} is up again", oss=self.name)
        if self.loop is not None:   # (before the servers start, start_service reads self.down)
            asyncio.run_coroutine_threadsafe(self.set_serving(not down), self.loop)

    def _manage_target(self, t: OstTarget) -> None:
        name, partner = self.name, self.partner
        served = t.index in self.stores
        if t.own and not served:
            if t.try_lock():
                self._serve(t)
                t.want_path.unlink(missing_ok=True)
                log.info("%s serving its OST%04x", name, t.index)
            else:   # the partner has it (it took over while we were down): ask for it back
                t.want_back(name)
        elif not t.own and served and t.owner_wants_it():
            self._drop(t)
            self.events.publish("oss_failback", f"OST{t.index:04x} goes back from {name} to {partner}",
                                ost=t.index, **{"from": name, "to": partner})
        elif not t.own and not served and not t.owner_wants_it() \
                and time.monotonic() - self.started > TAKEOVER_GRACE_S and t.try_lock():   # nobody holds it
            self._serve(t)
            self.events.publish("oss_failover", f"{name} took over OST{t.index:04x} from {partner}",
                                ost=t.index, **{"from": partner, "to": name})

    async def manager(self) -> None:
        while True:
            try:
                await asyncio.to_thread(self.manage_once)
            except Exception:  # noqa: BLE001 - keep managing
                log.exception("%s: target manager", self.name)
            await asyncio.sleep(0.1)

    # ---- faults (the LustreOss fault RPCs) ---------------------------------------------------
    def inject_fault(self, kind: str, ost: int | None) -> OssFault:
        if kind == "ost-full":
            return self._fill(ost)
        if ost is not None:
            raise LustreError("EINVAL", f"an {kind} fault takes no OST")
        osts = ", ".join(f"OST{t.index:04x}" for t in self.targets if t.own)
        then = f"served by {self.partner}" if self.partner else "unavailable (no failover partner)"
        f = self.faults.add(kind, None, self.clock.now(), f"{self.name} kept down; {osts} {then}")
        self.events.publish_fault(f.doc(), f"{f.id}: {f.effect}")
        self.manage_once()   # down before the call is answered
        # ...and its events at the broker: `twin lustre fault oss-kill` kills the process the moment
        # this returns, which lost `oss_down` when it still waited in the MQTT client's queue.
        self.events.flush(timeout=2.0)
        return f

    def _fill(self, ost: int | None) -> OssFault:
        if ost is None:
            raise LustreError("EINVAL", "an ost-full fault needs an OST")
        s = self.served(ost)
        if s is None:
            raise LustreError("ENODEV", f"{self.name} does not serve OST{ost:04x}")
        with s.lock:
            used = s.state.used_bytes
            f = self.faults.add("ost-full", ost, self.clock.now(),
                                f"OST{ost:04x} full ({used} bytes): writes that grow it get ENOSPC, new files avoid it")
            s.state.capacity_bytes = used + 1
        self.events.publish_fault(f.doc(), f"{f.id}: {f.effect}")
        return f

    def clear_fault(self, fault_id: str) -> OssFault:
        f = self.faults.clear(fault_id, self.clock.now())
        self.events.publish_fault(f.doc(), f"{f.id} cleared")
        if f.kind == "ost-full" and (s := self.served(f.ost)) is not None:
            with s.lock:
                s.state.capacity_bytes = next(t.capacity for t in self.targets if t.index == f.ost)
        self.manage_once()
        return f

    def list_faults(self, include_cleared: bool) -> list[OssFault]:
        return self.faults.list(include_cleared)

    # ---- the daemon ----------------------------------------------------------------------------
    async def start(self) -> None:
        if self.down:
            log.info("%s restarted while an oss-kill fault keeps it down: it serves no OST", self.name)
        else:
            await asyncio.to_thread(self.manage_once)   # take our own OSTs before answering anyone
        await self.start_service(pb_grpc.add_LustreOssServicer_to_server, OssServicer(self), SERVICE_NAME,
                                 serving=not self.down, framed_offset=OSS_FRAMED_OFFSET)
        try:
            self.bulk = BulkServer(self.cfg.grpc, self.served, lambda st, n, fn: timed(st, "read", n, self.scale, fn))
            self.bulk.start()
        except OSError as e:   # clients fall back to reads over gRPC
            self.bulk = None
            log.warning("%s: no bulk port next to %s: %s", self.name, self.cfg.grpc, e)
        self.background(self.manager(), "targets")
        log.info("%s serving OSTs %s on %s (NVMe model x%.3g; partner %s)", self.name,
                 ", ".join(f"OST{i:04x}" for i in self.stores), self.cfg.grpc, self.scale, self.partner)

    async def close(self) -> None:
        await self.close_framed()
        if self.bulk is not None:
            self.bulk.close()
        with self.managing:
            for t in self.targets:
                self._drop(t)
        self.faults.close()
        self.events.close()


run = OssDaemon.run


if __name__ == "__main__":
    main("services.lustre.oss.daemon", run)
