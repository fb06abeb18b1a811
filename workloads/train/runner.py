"""The training job as a process on the twin: lease GPUs, step through modelled time, checkpoint,
feel faults, fail as a real job fails.

Why it looks like this:
- It leases its GPUs from the GPU servers (gang: all or nothing) and reports its load, so the
  twin's telemetry shows a training job.
- Each step's time is the model's (step.py) over the fabric as the job sees it (fabric_probe.py);
  wall time only paces it (`time_scale` modelled seconds per wall second).
- Faults reach it the way they reach a real job: its lease ends when one of its GPUs takes a fatal
  Xid (the GPU server's event on the bus), its collectives cannot run when a server of the job has
  no compute rail up. A drill that injects a fault at a step boundary tells the job to look at
  once (`Hooks.before_step` returns what it touched), which keeps drills deterministic; faults
  injected from outside are noticed from the bus at the next step boundary.
- Checkpoints are real files (checkpoint_store.py) with a modelled write time; `resume` starts
  from the last complete one. On the twin's Lustre mount they are real writes through the FUSE
  client (a failing OSS blocks them until its partner serves its OSTs; without one they fail with
  EIO and so does the job), and with `checkpoint_storage: lustre` the modelled write time is
  services/lustre/estimate.py's, with the twin's live OSS/OST faults applied.
- A `dataset` directory is read as a data loader reads it: before each step, files sampled from it
  (seeded by job and step) are read whole; an I/O error (an OST lost without failover) fails the job.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from emulator.errors import UserError
from emulator.manifest import Manifest
from workloads.train import checkpoint_store, fabric_probe
from workloads.train.checkpoint_model import StorageModel, write_time
from workloads.train.config import GPUS_PER_SERVER, TrainConfig
from workloads.train.loss import loss_at
from workloads.train.step import StepTime, step_time

Log = Callable[[str], None]

# Modelled delays between a fault and the job's death: a lost GPU kills the process in seconds
# (CUDA error, the launcher tears the job down); lost fabric paths hang NCCL until its watchdog
# (PyTorch's default timeout is 10 minutes).
DETECT_XID_S = 30.0
DETECT_FABRIC_S = 600.0
DETECT_STORAGE_S = 30.0  # an I/O error (EIO) kills the rank that got it, the launcher the job


class TrainError(UserError, RuntimeError):
    """The job cannot start as asked (nothing was leased, or what was leased is released)."""


class _Failed(Exception):
    """The running job found itself dead: `kind` ("xid", "lease", "fabric", "storage"), the server
    it is blamed on ("" for none) and why; `TrainJob._run` turns it into the failed JobResult."""

    def __init__(self, kind: str, server: str, reason: str) -> None:
        super().__init__(reason)
        self.kind, self.server, self.reason = kind, server, reason


@dataclass(frozen=True)
class Touched:
    """What a drill's injection touched, so that the job checks it before the next step."""

    servers: tuple[str, ...] = ()
    fabric: bool = False


@dataclass
class Hooks:
    """Callbacks a drill passes in. `before_step(job, step, t)` runs before step `step` starts at
    modelled job time `t` (seconds since this attempt started)."""

    before_step: Callable[[TrainJob, int, float], Touched | None] | None = None
    on_event: Callable[[dict[str, Any]], None] | None = None
    # during_checkpoint(job, step, t): half of checkpoint `step`'s data is written, at modelled time t
    during_checkpoint: Callable[[TrainJob, int, float], None] | None = None


@dataclass
class JobResult:
    status: str  # "completed" or "failed"
    reason: str
    failure_kind: str  # "", "xid", "fabric", "lease", "storage"
    failed_server: str
    first_step: int  # the first step this run computed (resumed from first_step - 1)
    last_step: int  # the last step completed
    resumed_from: int | None
    modelled_s: float  # this run, modelled: restore + steps + checkpoints + failure detection
    useful_s: float  # modelled step time of the steps computed
    checkpoint_s: float
    restore_s: float
    detect_s: float
    events: list[dict[str, Any]] = field(default_factory=list)
    checkpoints: list[int] = field(default_factory=list)
    step_time: dict[str, Any] = field(default_factory=dict)
    servers: list[str] = field(default_factory=list)
    progress: list[tuple[int, float]] = field(default_factory=list)  # (step, modelled end time)
    wall_s: float = 0.0
    dataset_reads: int = 0  # files of the dataset read (real I/O)
    dataset_bytes: int = 0

    def as_dict(self) -> dict[str, Any]:
        d = dict(self.__dict__)
        d["modelled"] = "every *_s time except wall_s is modelled"
        return d


def whole_gpus(node: Any) -> None:
    """MIG off on every GPU of a GPU server (its compute and GPU instances destroyed first), as
    `--take-mig` needs: the job leases whole GPUs."""
    for g in node.gpus():
        if not g.mig_enabled:
            continue
        for gi in node.gpu_instances(g.index):
            for ci in gi.compute_instances:
                node.destroy_compute_instance(g.index, gi.id, ci.id)
            node.destroy_gpu_instance(g.index, gi.id)
        node.set_mig(g.index, False)


class _Bus:
    """Publishes the job's progress under the twin's prefix (best effort: no broker, no messages)."""

    def __init__(self, manifest: Manifest | None, job_id: str) -> None:
        from emulator import bus
        from emulator.clock import Clock

        self.pub: bus.SyncPublisher | None = None
        if manifest is None:
            return
        twin = manifest.twin
        self.clock = Clock(epoch=manifest.clock.epoch, scale=manifest.clock.scale)
        self.topic = lambda kind: bus.train_topic(twin, job_id, kind)
        try:
            self.pub = bus.SyncPublisher(manifest.broker.host, manifest.broker.port, twin, "train", wait=True,
                                         client_id=f"{twin}/train/{job_id}")
        except OSError:
            return

    def publish(self, kind: str, payload: dict[str, Any], qos: int = 1) -> None:
        if self.pub is not None:
            self.pub.event("train", kind, dict(payload, modelled=True), time=self.clock.now(), topic=self.topic(kind),
                           qos=qos)

    def close(self) -> None:
        if self.pub is None:
            return
        with contextlib.suppress(TimeoutError):
            self.pub.flush(2.0)
        self.pub.close()


class TrainJob:
    """One run of the job: `TrainJob(cfg, twin, checkpoint_dir).run()`. `twin` is an
    `emulator.client.Twin` or None (the pure model: no leases, healthy fabric, no bus)."""

    def __init__(self, cfg: TrainConfig, twin: Any | None, checkpoint_dir: str | Path | None = None, *,
                 resume: bool = False, storage: StorageModel | None = None, hooks: Hooks | None = None,
                 exclude: tuple[str, ...] = (), take_mig: bool = False, log: Log | None = None,
                 reclaim: bool = False) -> None:
        self.cfg, self.twin = cfg, twin
        self.manifest: Manifest | None = twin.manifest if twin is not None else None
        self.ckdir = Path(checkpoint_dir) if checkpoint_dir else None
        if cfg.checkpoint_every and self.ckdir is None:
            raise TrainError("--checkpoint-every needs --checkpoint-dir")
        if resume and self.ckdir is None:
            raise TrainError("--resume needs --checkpoint-dir")
        self.resume, self.storage, self.hooks = resume, storage, hooks or Hooks()
        self.exclude, self.take_mig, self.reclaim = exclude, take_mig, reclaim
        self.log = log or (lambda _m: None)
        self.leases: dict[str, str] = {}  # server -> lease id
        self.servers: list[str] = []
        self.events: list[dict[str, Any]] = []
        self._sub: Any = None
        self._fabric: Any = None
        self._last_xid: dict[str, str] = {}
        self._fabric_dirty = False
        self._releasing = False
        self.last_step = 0  # the last step completed, live (what a terminated run got to)
        self.modelled_t = 0.0  # modelled time of this run so far, live

    # ------------------------------------------------------------------ setup

    def _event(self, t: float, kind: str, **detail: Any) -> dict[str, Any]:
        e = {"t_s": round(t, 6), "kind": kind, **detail}
        self.events.append(e)
        if self.hooks.on_event:
            self.hooks.on_event(e)
        return e

    def pick_servers(self) -> list[str]:
        cfg = self.cfg
        if cfg.servers:
            names = list(cfg.servers)
            known = set(self.twin.gpu_nodes)
            unknown = [s for s in names if s not in known]
            if unknown:
                raise TrainError(f"--servers: {', '.join(unknown)} not GPU servers of twin {self.twin.name!r}")
            return names
        candidates = [s for s in self.twin.gpu_nodes if s not in self.exclude]
        if self.take_mig:
            chosen = candidates[: cfg.n_servers]
        else:
            with ThreadPoolExecutor(32) as pool:
                mig = dict(zip(candidates, pool.map(
                    lambda s: any(g.mig_enabled for g in self.twin.gpu_node(s).gpus()), candidates), strict=True))
            chosen = [s for s in candidates if not mig[s]][: cfg.n_servers]
        if len(chosen) < cfg.n_servers:
            raise TrainError(f"--gpus {cfg.gpus} needs {cfg.n_servers} servers with whole GPUs; twin "
                             f"{self.twin.name!r} offers {len(chosen)}"
                             + ("" if self.take_mig else " (MIG servers skipped: --take-mig reconfigures them)")
                             + (f" (excluded: {', '.join(self.exclude)})" if self.exclude else ""))
        return chosen

    def acquire(self, utilization: int) -> None:
        """Gang lease: 8 GPUs on every server, or nothing (what was taken is released)."""
        from emulator.errors import TwinRpcError

        self.servers = self.pick_servers()
        if self.take_mig:
            with ThreadPoolExecutor(32) as pool:
                list(pool.map(lambda s: whole_gpus(self.twin.gpu_node(s)), self.servers))

        def take(server: str) -> tuple[str, str | Exception]:
            try:
                if self.reclaim:  # a previous attempt of this job (same id) killed before it released
                    node = self.twin.gpu_node(server)
                    for old in node.leases():
                        if old.job_id == self.cfg.job_id and old.active:
                            node.release(old.id)
                            self.log(f"{server}: released {old.id}, left by a previous attempt of {old.job_id}")
                return server, self.twin.gpu_node(server).lease(self.cfg.job_id, count=GPUS_PER_SERVER,
                                                                 utilization=utilization).id
            except TwinRpcError as e:
                return server, e

        with ThreadPoolExecutor(32) as pool:
            got = list(pool.map(take, self.servers))
        failed = [(s, r) for s, r in got if isinstance(r, Exception)]
        self.leases = {s: r for s, r in got if isinstance(r, str)}
        if failed:
            self.release()
            s, e = failed[0]
            raise TrainError(f"cannot lease 8 GPUs on {s}: {e} (gang: nothing kept)")

    def release(self) -> None:
        from emulator.errors import TwinRpcError

        self._releasing = True

        def drop(item: tuple[str, str]) -> None:
            try:
                self.twin.gpu_node(item[0]).release(item[1])
            except TwinRpcError:
                pass  # already ended (the fault that killed the job ended it)

        with ThreadPoolExecutor(32) as pool:
            list(pool.map(drop, self.leases.items()))
        self.leases = {}

    def report_load(self, utilization: int) -> None:
        from emulator.errors import TwinRpcError

        def rep(item: tuple[str, str]) -> None:
            try:
                self.twin.gpu_node(item[0]).report_load(item[1], utilization)
            except TwinRpcError:
                pass

        with ThreadPoolExecutor(32) as pool:
            list(pool.map(rep, self.leases.items()))

    # ------------------------------------------------------------------ fault sensing

    def see_fabric(self) -> fabric_probe.FabricSeen:
        if self._fabric is not None:
            return fabric_probe.live(self._fabric, self.servers)
        return fabric_probe.healthy(self.servers or [f"gpu{i + 1:03d}" for i in range(self.cfg.n_servers)])

    def _drain_bus(self) -> str | None:
        """Failure reason from bus events that arrived since the last step, if any."""
        if self._sub is None:
            return None
        import queue

        reason = None
        ours = {lid: s for s, lid in self.leases.items()}
        while True:
            try:
                m = self._sub.messages.get_nowait()
            except queue.Empty:
                return reason
            node, kind = m.get("node", ""), m.get("kind", "")
            if kind == "xid" and node in self.leases:
                self._last_xid[node] = f"Xid {m.get('xid')} on GPU {m.get('gpu')}"
            elif kind == "lease_end" and m.get("lease_id") in ours and not self._releasing and reason is None:
                # the event says "job J: why"; the polled lease says "why": report the same either way
                why = m.get("message", "").partition(": ")[2] or m.get("message", "")
                reason = f"{node}: lease ended ({why})"
            elif m.get("_topic", "").split("/")[-2:-1] == ["fabric"] or node == "fabric":
                self._fabric_dirty = True

    def check_servers(self, servers: tuple[str, ...]) -> str | None:
        """Synchronous look at the leases on `servers` (after a drill touched them)."""
        for s in servers:
            lid = self.leases.get(s)
            if lid is None:
                continue
            info = self.twin.gpu_node(s).lease_info(lid)
            if not info.active:
                return f"{s}: lease ended ({info.end_reason})"
        return None

    # ------------------------------------------------------------------ the run

    def run(self) -> JobResult:
        cfg = self.cfg
        wall0 = time.monotonic()
        bus = _Bus(self.manifest, cfg.job_id)
        try:
            return self._run(bus, wall0)
        finally:
            if self._sub is not None:
                self._sub.close()
            if self.twin is not None and self.leases:
                self.release()
            bus.close()

    def _restore(self) -> tuple[int, float, dict[str, Any] | None]:
        if not self.resume or self.ckdir is None:
            return 0, 0.0, None
        good, bad = checkpoint_store.scan(self.ckdir)
        for d in bad:
            self.log(f"skipping incomplete checkpoint {d} (no complete manifest)")
        if not good:
            self.log(f"--resume: no complete checkpoint in {self.ckdir}; starting from step 0")
            return 0, 0.0, None
        ck = good[-1]
        m = ck.manifest
        for key in ("params", "tp", "pp"):
            if key in m and m[key] != getattr(self.cfg, key):
                raise TrainError(f"--resume: checkpoint {ck.path} was written with {key}={m[key]}, this job has "
                                 f"{key}={getattr(self.cfg, key)}")
        gbps = self.cfg.restore_gbps or self.cfg.storage_gbps
        return ck.step, write_time(self.cfg.checkpoint_bytes, gbps), m

    def _run(self, bus: _Bus, wall0: float) -> JobResult:
        cfg = self.cfg
        start_step, restore_s, manifest = self._restore()
        self.last_step = start_step
        res = JobResult("running", "", "", "", start_step + 1, start_step, start_step if manifest else None,
                        0.0, 0.0, 0.0, restore_s, 0.0, self.events)
        t = 0.0  # modelled time since this attempt started
        step = start_step
        try:
            st, files = self._start(res, bus, start_step)
            if manifest is not None:
                t += restore_s
                self._event(t, "resumed", step=start_step, restore_s=restore_s)
                self.log(f"resumed from checkpoint step {start_step} (restore {restore_s:.1f} s modelled)")
            self.log(f"step time {st.total_s:.2f} s modelled (compute {st.compute.time_s:.2f} s, DP {st.dp_s:.3f} s, "
                     f"PP {st.pp_s:.3f} s; {st.tokens_per_s:,.0f} tokens/s; {st.fabric})")
            pace0 = time.monotonic() - t / cfg.time_scale if cfg.time_scale else 0.0
            while step < cfg.steps:
                st = self._before_step(res, files, step + 1, t, st)
                t += st.total_s
                step += 1
                loss = self._stepped(res, bus, step, t, st)
                if cfg.checkpoint_every and step % cfg.checkpoint_every == 0:
                    try:
                        t = self._checkpoint(res, bus, t, step, loss)
                    except OSError as e:
                        raise _Failed("storage", "", f"checkpoint step {step}: {_oserror(e)}") from None
                if cfg.time_scale:
                    lag = pace0 + t / cfg.time_scale - time.monotonic()
                    if lag > 0:
                        time.sleep(lag)
        except _Failed as f:
            return self._fail(res, bus, t, f.kind, f.server, f.reason)
        res.status, res.modelled_s = "completed", t
        res.reason = f"completed {cfg.steps} steps"
        res.wall_s = time.monotonic() - wall0
        self._event(t, "completed", step=step)
        bus.publish("completed", {"job_id": cfg.job_id, "step": step, "modelled_s": t})
        self.log(f"completed step {step}: {t:.1f} s modelled, {res.wall_s:.2f} s wall")
        return res

    def _start(self, res: JobResult, bus: _Bus, start_step: int) -> tuple[StepTime, list[Path]]:
        """Watch the bus, lease the GPUs, see the fabric, list the dataset; returns the step time and
        the dataset's files. Raises _Failed."""
        cfg = self.cfg
        if self.twin is not None:
            if self.twin.daemons("fabric"):
                self._fabric = self.twin.fabric()
            self._sub = self.twin.events("events/+/lease_end", "events/+/xid", "events/fabric/#")
        seen = fabric_probe.healthy([f"gpu{i + 1:03d}" for i in range(cfg.n_servers)])
        st = step_time(cfg, seen.view, seen.note)
        if self.twin is not None:
            self.acquire(st.utilization)
            seen = self.see_fabric()
            if not seen.ok:
                raise _Failed("fabric", seen.lost[0],
                              f"fabric paths lost at start: {', '.join(seen.lost)} has no compute rail up")
            st = step_time(cfg, seen.view, seen.note)
            self.report_load(st.utilization)
        res.servers = list(self.servers)
        res.step_time = st.as_dict()
        files: list[Path] = []
        if cfg.dataset:
            try:
                files = self._dataset_files()
            except OSError as e:
                raise _Failed("storage", "", f"dataset {cfg.dataset}: {_oserror(e)}") from None
        self._event(0.0, "start", step=start_step, servers=len(self.servers) or cfg.n_servers,
                    step_s=st.total_s, tokens_per_s=st.tokens_per_s, fabric=st.fabric)
        bus.publish("start", {"job_id": cfg.job_id, "step": start_step, "gpus": cfg.gpus, "tp": cfg.tp, "pp": cfg.pp,
                              "dp": cfg.dp, "servers": self.servers, **st.as_dict()})
        return st, files

    def _before_step(self, res: JobResult, files: list[Path], step: int, t: float, st: StepTime) -> StepTime:
        """Before `step`: the drill's hook, the bus, the leases it touched, the dataset read, the
        fabric if it changed. Returns the step time (new if the fabric changed it). Raises _Failed."""
        touched = self.hooks.before_step(self, step, t) if self.hooks.before_step else None
        reason = self._drain_bus()
        if reason is None and touched is not None and touched.servers:
            reason = self.check_servers(touched.servers)
        if reason is None and files:
            reason = self._read_dataset(res, files, step)
            if reason is not None:
                raise _Failed("storage", "", reason)
        if reason is not None:
            server = reason.split(":", 1)[0]
            xid = self._xid_in(reason) or self._last_xid.get(server)
            raise _Failed("xid" if xid else "lease", server,
                          reason + (f"; {xid}" if xid and xid.lower() not in reason.lower() else ""))
        if self._fabric is not None and (self._fabric_dirty or (touched is not None and touched.fabric)):
            self._fabric_dirty = False
            return self._fabric_step_time(step, t, st)
        return st

    def _fabric_step_time(self, step: int, t: float, st: StepTime) -> StepTime:
        """The step time over the fabric as it is now. Raises _Failed when a server has no rail up."""
        seen = self.see_fabric()
        if not seen.ok:
            raise _Failed("fabric", seen.lost[0], f"fabric paths lost: {', '.join(seen.lost)} has no compute rail up "
                                                  f"(NCCL timeout after {DETECT_FABRIC_S:.0f} s modelled)")
        new = step_time(self.cfg, seen.view, seen.note)
        if math.isclose(new.total_s, st.total_s, rel_tol=1e-9):
            return st
        self._event(t, "step_time", step_s=new.total_s, tokens_per_s=new.tokens_per_s, fabric=new.fabric)
        self.log(f"step {step}: step time now {new.total_s:.3f} s modelled ({new.fabric})")
        if new.utilization != st.utilization and self.twin is not None:
            self.report_load(new.utilization)
        return new

    def _stepped(self, res: JobResult, bus: _Bus, step: int, t: float, st: StepTime) -> float:
        """`step` is done at modelled time `t`: record and publish its progress; returns its loss."""
        res.useful_s += st.total_s
        res.last_step = self.last_step = step
        self.modelled_t = t
        res.progress.append((step, round(t, 6)))
        loss = loss_at(step)
        bus.publish("progress", {"job_id": self.cfg.job_id, "step": step, "loss": loss, "modelled_s": t,
                                 "step_s": st.total_s, "tokens_per_s": st.tokens_per_s}, qos=0)
        return loss

    @staticmethod
    def _xid_in(reason: str) -> str | None:
        low = reason.lower()
        i = low.find("xid ")
        return reason[i:].split(")")[0].split(";")[0] if i >= 0 else None

    def _dataset_files(self) -> list[Path]:
        root = Path(self.cfg.dataset)
        files = sorted(p for p in root.rglob("*") if p.is_file() and not p.name.startswith(".")
                       and not p.name.endswith(".stage-part"))
        if not files:
            raise FileNotFoundError(2, f"no dataset files under {root}")
        return files

    def _read_dataset(self, res: JobResult, files: list[Path], step: int) -> str | None:
        """Read this step's sampled files whole (real I/O); the failure reason, or None."""
        import random

        rng = random.Random(f"{self.cfg.job_id}:{step}")
        for _ in range(self.cfg.dataset_reads_per_step):
            p = files[rng.randrange(len(files))]
            try:
                with open(p, "rb") as f:
                    while chunk := f.read(1 << 20):
                        res.dataset_bytes += len(chunk)
            except OSError as e:
                return f"dataset read {p.name} before step {step}: {_oserror(e)}"
            res.dataset_reads += 1
        return None

    def _storage_model(self) -> tuple[StorageModel | None, str]:
        """The checkpoint write-time model and what it is, for the manifest and the report."""
        cfg = self.cfg
        if self.storage is not None:
            return self.storage, "storage model callable"
        if cfg.checkpoint_storage == "lustre":
            from services.lustre import estimate

            state = self._lustre_state()
            why = "healthy" if state is None or state.healthy else \
                f"failed OSS {sorted(state.failed_oss)} (model indices)" if state.failed_oss else "faults applied"
            return (estimate.storage_model(cfg.checkpoint_stripe_count, state, nodes=cfg.n_servers),
                    f"Lustre model, stripe count {cfg.checkpoint_stripe_count}, {cfg.n_servers} writers, {why}")
        return None, f"{cfg.storage_gbps:g} GB/s (option)"

    def _lustre_state(self) -> Any:
        """The twin's Lustre faults at the modelled scale (None: no Lustre in this twin, a healthy model)."""
        from services.lustre.manifest import LustreSection

        lustre = LustreSection.of(self.manifest) if self.manifest is not None else None
        if lustre is None:
            return None
        from services.lustre.estimate import live_state_from_twin

        down: set[str] = set()
        try:
            with self.twin.lustre() as lu:
                down = lu.down_oss()   # the OSSs an oss-kill fault keeps down (their ListFaults)
                return live_state_from_twin(lustre, list(lu.statfs().osts), None, down)
        except Exception as e:  # noqa: BLE001 - the MDS is failing over: the OSS faults still say which OSS is down
            self.log(f"Lustre statfs failed ({e}); modelling from the OSS faults only")
            from services.lustre.estimate import LiveState

            names = sorted({o.oss for o in lustre.osts})
            return LiveState(frozenset(k for k, n in enumerate(names) if n in down))

    def _checkpoint(self, res: JobResult, bus: _Bus, t: float, step: int, loss: float) -> float:
        cfg = self.cfg
        assert self.ckdir is not None
        standin = int(cfg.checkpoint_bytes * cfg.checkpoint_scale)
        during = self.hooks.during_checkpoint
        # the data is written first (real I/O, blocking as the storage does), then the write time is
        # modelled from the state the storage finished it in (a failover mid-write slows all of it)
        manifest: dict[str, Any] = {
            "job_id": cfg.job_id, "params": cfg.params, "tp": cfg.tp, "pp": cfg.pp, "dp": cfg.dp, "loss": loss,
            "tokens": step * cfg.tokens_per_step, "bytes_modelled": cfg.checkpoint_bytes,
            "checkpoint_scale": cfg.checkpoint_scale}

        def publish_manifest_fields() -> None:
            model, what = self._storage_model()
            w = write_time(cfg.checkpoint_bytes, cfg.storage_gbps, model)
            manifest.update(write_s_modelled=w, storage=what)

        checkpoint_store.write(self.ckdir, step, standin, manifest,
                               midway=(lambda: during(self, step, t)) if during else None,
                               before_manifest=publish_manifest_fields)
        w = manifest["write_s_modelled"]
        t += w
        self.modelled_t = t
        res.checkpoint_s += w
        res.checkpoints.append(step)
        self._event(t, "checkpoint", step=step, write_s=w, bytes=cfg.checkpoint_bytes, storage=manifest["storage"])
        self.log(f"checkpoint step {step} written ({w:.1f} s modelled)")
        bus.publish("checkpoint", {"job_id": cfg.job_id, "step": step, "write_s": w, "bytes": cfg.checkpoint_bytes,
                                   "standin_bytes": standin, "path": str(checkpoint_store.step_dir(self.ckdir, step))})
        return t

    def _fail(self, res: JobResult, bus: _Bus, t: float, kind: str, server: str, reason: str) -> JobResult:
        detect = DETECT_FABRIC_S if kind == "fabric" else DETECT_STORAGE_S if kind == "storage" else DETECT_XID_S
        res.status, res.reason, res.failure_kind, res.failed_server = "failed", reason, kind, server
        res.detect_s = detect
        res.modelled_s = t + detect
        res.wall_s = 0.0
        self._event(t, "fault_seen", server=server, reason=reason)
        self._event(t + detect, "failed", step=res.last_step, reason=reason)
        bus.publish("failed", {"job_id": self.cfg.job_id, "step": res.last_step, "reason": reason,
                               "modelled_s": t + detect})
        self.log(f"FAILED after step {res.last_step}: {reason}")
        return res


def _oserror(e: OSError) -> str:
    import errno as _errno
    import os as _os

    name = _errno.errorcode.get(e.errno or 0, "")
    return f"{name}: {_os.strerror(e.errno)}" if name else str(e)
