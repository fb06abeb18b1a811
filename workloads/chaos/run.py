"""`twin chaos`: start rack with everything on, run the verifying workload under the seeded fault
schedule, let the twin recover, read every acknowledged write back, check every part, `twin down`,
look for leftovers, and return the report (report.py writes it)."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from emulator import lifecycle, process
from emulator.client import Twin
from emulator.rundir import RunDir
from services.ceph.manifest import gateway, osds
from workloads.chaos import schedule, verify, workload
from workloads.chaos.faults import Injector

TOPOLOGY = "rack"
RECOVERY_WAIT_S = 120.0     # after the run, for Ceph to be clean, Slurm idle, jobs done
FAULT_RECOVERY_WAIT_S = 90.0
DOWN_TARGET_S = 15.0
READBACK_WAIT_S = 900.0     # each of the S3 and Lustre read-backs (a 10-minute run wrote ~5000 files)
AK, SK = "CHAOSWORKLOAD0000001", "chaosworkloadsecret00000000000000000001"
S3_HOST, LUSTRE_HOSTS = "gpu002", ("gpu001", "gpu002")
LEASE_SERVERS = ("gpu001", "gpu002", "gpu003")
CUT_GPU_HOSTS = ("gpu001", "gpu002", "gpu003")   # the S3 worker's and the Lustre clients' hosts too

Log = Callable[[str], None]


def no_fault_active(twin: Twin) -> verify.Check:
    """The twin's fault log holds no active fault (every subsystem's, adopted ones too), and the
    fabric reports no port down."""
    found: dict[str, list[str]] = {}
    for f in twin.faults().list():
        found.setdefault(f.subsystem, []).append(f"{f.id} {f.kind} {f.target}")
    if twin.daemons("fabric"):
        with twin.fabric() as fabric:
            down = [f"{p.node} port {p.number}" for p in fabric.call("GetHealth").down_ports]
        if down:
            found.setdefault("fabric", []).extend(down)
    return not found, found or "none"


def _kill_worker(p: subprocess.Popen) -> None:
    """SIGKILL a workload process this run started and the process group it leads, then reap it."""
    process.stop_process(p.pid, 0.0, kill_group=True)
    p.wait(10)


def inventory(twin: Twin) -> schedule.Inventory:
    """What the schedule may fault on this twin. GPU servers in MIG mode get no Xid (a reset loses
    the layout Slurm's gres.conf was made from); hosts cut off are GPU servers (the workload's among
    them) and Ceph hosts with a single OSD (so a cut is one OSD down, within the plan's OSD budget)."""
    m = twin.manifest
    daemons = {d.name: d.kind for d in m.daemons}
    mig = set()
    for name in twin.gpu_nodes:
        if any(g.mig_enabled for g in twin.gpu_node(name).gpus()):
            mig.add(name)
    links: list[tuple[str, str, int, str]] = []
    cut: dict[str, str] = {}
    if m.network_backend is not None:
        from emulator.network.plan import make_network_plan
        from emulator.topology import load_topology

        plan = make_network_plan(load_topology(twin.run.read(twin.run.config)["topology_file"]), "ct0")
        counts: dict[tuple[str, str, str], int] = {}
        for link in plan.links:
            if "spine" in link.b and link.fabric in ("compute", "ethernet"):
                counts[(link.a, link.b, link.fabric)] = counts.get((link.a, link.b, link.fabric), 0) + 1
        links = sorted((a, b, n, fab) for (a, b, fab), n in counts.items())
        osd_hosts: dict[str, int] = {}
        for d in twin.daemons("ceph_osd"):
            osd_hosts[d.host] = osd_hosts.get(d.host, 0) + 1
        mon_hosts = {d.host for d in m.daemons if d.kind in ("ceph_mon", "ceph_rgw")}
        cut = {h: "osd" for h, n in osd_hosts.items() if n == 1 and h not in mon_hosts}
        cut |= {h: f"gpu:{h}" for h in CUT_GPU_HOSTS if h in daemons}
    return schedule.Inventory(
        daemons=dict(sorted(daemons.items())),
        osds=sorted(d.osd for d in osds(m)),
        oss=sorted(d.name for d in twin.daemons("lustre_oss")),
        xid_servers=sorted(n for n in twin.gpu_nodes if n not in mig),
        links=links, cut_hosts=dict(sorted(cut.items())),
        host_daemons={h: sorted(d.name for d in m.daemons if d.host == h) for h in sorted(cut)})


class Thrasher:
    def __init__(self, seed: int, minutes: float, out: Path, network: str, run_dir: Path | None, log: Log) -> None:
        self.seed, self.duration, self.out, self.network, self.log = seed, minutes * 60, out, network, log
        self.run = RunDir(run_dir or out / "run")
        self.work = out / "work"
        self.stop_file = self.work / "stop"
        self.stop = threading.Event()
        self.records: list[dict[str, Any]] = []   # one per planned fault, with what happened
        self.procs: dict[str, subprocess.Popen] = {}
        self.twin: Twin | None = None
        self.t0 = 0.0
        self.report: dict[str, Any] = {"seed": seed, "minutes": minutes, "topology": TOPOLOGY, "network": network}

    # --- phases -----------------------------------------------------------------------------
    def main(self) -> dict[str, Any]:
        self.out.mkdir(parents=True, exist_ok=True)
        self.work.mkdir(parents=True, exist_ok=True)
        self.stop_file.unlink(missing_ok=True)
        try:
            self.start()
            self.thrash()
            self.settle_and_verify()
        except Exception as e:  # noqa: BLE001 - reported, then the twin goes down all the same
            self.report["error"] = f"{type(e).__name__}: {e}"
            self.log(f"chaos: {self.report['error']}")
        finally:
            self.teardown()
        return self.report

    def start(self) -> None:
        t = time.monotonic()
        self.log(f"chaos: starting {TOPOLOGY} --fabric --ceph --lustre --network {self.network} in {self.run.path}")
        lifecycle.up(TOPOLOGY, self.run, network=self.network, fabric=True, ceph=True, lustre=True,
                     clock_scale=10.0, timeout=180)
        self.twin = Twin.connect(self.run.path)
        from services.slurm import lifecycle as slurm

        self.slurm_doc = slurm.up(self.run, timeout=120)
        self.twin.ceph().user_create("chaos", "Chaos workload", access_key=AK, secret_key=SK)
        from services.lustre.client.mount import mount_background

        self.mounts = []
        for i, host in enumerate(LUSTRE_HOSTS, 1):
            rec = mount_background(self.run.path, str(self.work / f"mnt{i}"), host=host)
            self.mounts.append(rec["mountpoint"])
        self.report["startup_s"] = round(time.monotonic() - t, 1)
        self.inv = inventory(self.twin)
        self.plan = schedule.plan(self.seed, self.duration, self.inv)
        self.report["plan_digest"] = schedule.digest(self.plan)
        self.report["inventory"] = dataclasses.asdict(self.inv)
        self.report["plan"] = schedule.as_json(self.plan)
        self.log(f"chaos: up in {self.report['startup_s']} s; plan {self.report['plan_digest']}: "
                 f"{len(self.plan)} faults over {self.duration:.0f} s")

    def _netns_of(self, host: str) -> str | None:
        return next((d.netns for d in self.twin.manifest.daemons if d.host == host), None)

    def thrash(self) -> None:
        rgw = gateway(self.twin.manifest)
        if rgw is None:
            raise RuntimeError("the chaos twin runs no S3 gateway")
        s3_url = rgw.s3
        self.s3_args = ["--url", s3_url, "--ak", AK, "--sk", SK, "--bucket", "chaos"]
        self.procs["s3"] = workload.start(
            ["s3", "write", "--journal", str(self.work / "s3.jsonl"), "--stop", str(self.stop_file),
             "--seed", str(self.seed), *self.s3_args], self.work / "s3.log", self._netns_of(S3_HOST))
        for i, mp in enumerate(self.mounts, 1):
            self.procs[f"lustre{i}"] = workload.start(
                ["lustre", "write", "--journal", str(self.work / f"lustre{i}.jsonl"), "--stop", str(self.stop_file),
                 "--seed", str(self.seed * 10 + i), "--dir", mp, "--name", f"{LUSTRE_HOSTS[i - 1]}"],
                self.work / f"lustre{i}.log")
        from services.slurm.lifecycle import conf_path

        self.jobs = workload.SlurmJobs(conf_path(self.run), self.work / "jobs", self.stop, self.seed)
        self.leases = workload.GpuLeases(self.twin, [s for s in LEASE_SERVERS if s in self.twin.gpu_nodes],
                                         self.stop, self.seed)
        self.jobs.start()
        self.leases.start()
        self.t0 = time.monotonic()
        injector = Injector(self.twin)
        self.recoveries: list[threading.Thread] = []
        self.records = [self._record(f) for f in self.plan]
        self.slots = {f.domain: threading.BoundedSemaphore(schedule.CAPACITY.get(f.domain, 1)) for f in self.plan}
        self.held = {r: threading.Lock() for f in self.plan for r in schedule.resources(f.kind, f.target)}
        drivers = [threading.Thread(target=self._drive, args=(f, rec, injector), name=f"fault-{f.id}", daemon=True)
                   for f, rec in zip(self.plan, self.records, strict=True)]
        for d in drivers:
            d.start()
        self._sleep_until(self.duration)
        for d in drivers:   # a clear still under way
            d.join(FAULT_RECOVERY_WAIT_S)
        self.log("chaos: schedule done; stopping the workload")
        self.stop.set()
        self.stop_file.write_text("stop\n")
        for name in ("s3", "lustre1", "lustre2"):
            self._wait_proc(name, 60)
        self.jobs.join(35)
        self.leases.join(15)
        for r in self.recoveries:
            r.join(FAULT_RECOVERY_WAIT_S)
        self.report["workload_s"] = round(time.monotonic() - self.t0, 1)

    @staticmethod
    def _record(f: schedule.PlannedFault) -> dict[str, Any]:
        return {"id": f.id, "kind": f.kind, "target": f.label, "domain": f.domain, "at_s": f.at,
                "clear_at_s": f.clear_at}

    def _drive(self, f: schedule.PlannedFault, rec: dict[str, Any], injector: Injector) -> None:
        """One fault, in its own thread: injected at its time, then cleared at its time, so that a slow
        call for another fault (a whole link's eight ports re-swept one by one) holds up none but its own.
        It takes its domain's slot and its resources first and gives them back once cleared, so what the
        plan keeps apart stays apart when a clear runs late (the next fault is late instead: `lag_s`)."""
        locks = [self.held[r] for r in sorted(schedule.resources(f.kind, f.target))]
        self._sleep_until(f.at)
        self.slots[f.domain].acquire()
        for lock in locks:
            lock.acquire()
        try:
            self._inject_and_clear(f, rec, injector)
        finally:
            for lock in locks:
                lock.release()
            self.slots[f.domain].release()

    def _inject_and_clear(self, f: schedule.PlannedFault, rec: dict[str, Any], injector: Injector) -> None:
        for action, at in (("inject", f.at), ("clear", f.clear_at)):
            self._sleep_until(at)
            t = round(time.monotonic() - self.t0, 2)
            rec["lag_s"] = max(rec.get("lag_s", 0.0), round(t - at, 2))
            try:
                if action == "inject":
                    rec["old_pid"] = injector.pids().get(f.target.get("name", ""), 0)
                    rec["injected_s"], rec["effect"] = t, injector.inject(f)
                    self.log(f"[{t:7.1f}s] inject {f.id} {f.kind} {f.label}: {rec['effect']}")
                    if f.kind == "kill":
                        self.recoveries.append(self._watch_recovery(f, rec, injector))
                else:
                    rec["cleared_s"], rec["clear"] = t, injector.clear(f)
                    self.log(f"[{t:7.1f}s] clear  {f.id} {f.kind} {f.label}: {rec['clear']}")
                    if f.kind != "kill":
                        self.recoveries.append(self._watch_recovery(f, rec, injector))
            except Exception as e:  # noqa: BLE001 - recorded: an injection or a clear that failed
                rec.setdefault("errors", []).append(f"{action} at {t} s: {type(e).__name__}: {str(e)[:300]}")
                self.log(f"[{t:7.1f}s] {action} {f.id} {f.kind} {f.label} FAILED: {e}")

    def _sleep_until(self, t: float) -> None:
        left = self.t0 + t - time.monotonic()
        if left > 0:
            time.sleep(left)

    def _wait_proc(self, name: str, timeout: float) -> None:
        p = self.procs[name]
        try:
            p.wait(timeout)
        except subprocess.TimeoutExpired:
            self.report.setdefault("stuck_workers", []).append(name)
            _kill_worker(p)

    def _watch_recovery(self, f: schedule.PlannedFault, rec: dict[str, Any], injector: Injector) -> threading.Thread:
        """Measure from the clear (or the kill) until the part it hit is healthy again."""
        twin, start = self.twin, time.monotonic()

        def check() -> verify.Check:
            t = f.target
            if f.kind == "kill":
                return verify.daemon_serving(twin, t["name"], rec.get("old_pid", 0))
            if f.kind == "osd-stop":
                return _osd_up(twin, t["osd"])
            if f.kind == "oss-kill":
                return verify.lustre(twin)
            if f.kind == "xid":
                node = twin.gpu_node(t["server"])
                gpu = node.gpu(t["gpu"])
                return not node.faults() and gpu.health == 1, f"GPU {t['gpu']} health {gpu.health}"
            if f.kind == "link-down":
                return verify.fabric(twin) if t["fabric"] == "compute" else (True, "link up")
            if f.kind == "cut":
                host = t["host"]
                on_host = [d.osd for d in osds(twin.manifest) if d.host == host]
                if on_host:
                    return _osd_up(twin, on_host[0])
                return verify.daemon_serving(twin, host)
            return True, ""

        def watch() -> None:
            ok, detail, _ = verify.wait_for(check, FAULT_RECOVERY_WAIT_S, every=0.25)
            rec["recovered"] = ok
            rec["recovery_s"] = round(time.monotonic() - start, 2)
            if not ok:
                rec["recovery_detail"] = str(detail)[:300]

        th = threading.Thread(target=watch, name=f"recover-{f.id}", daemon=True)
        th.start()
        return th

    def settle_and_verify(self) -> None:
        twin, checks = self.twin, {}
        t = time.monotonic()
        for name, fn in (("daemons healthy", lambda: verify.daemons(twin)),
                         ("ceph HEALTH_OK, all PGs active+clean", lambda: verify.ceph(twin)),
                         ("lustre servers up, OSTs on their own OSS", lambda: verify.lustre(twin)),
                         ("fabric SM MASTER, every port active", lambda: verify.fabric(twin)),
                         ("slurm nodes idle", lambda: verify.slurm(twin)),
                         ("no fault active", lambda: no_fault_active(twin))):
            left = max(5.0, RECOVERY_WAIT_S - (time.monotonic() - t))
            ok, detail, waited = verify.wait_for(fn, left)
            checks[name] = {"passed": ok, "detail": detail, "waited_s": waited}
            self.log(f"chaos: {'PASS' if ok else 'FAIL'} {name} ({waited} s): {json.dumps(detail, default=str)[:200]}")
        self.report["recovery_s"] = round(time.monotonic() - t, 1)
        # Every acknowledged write, read back.
        lost = self._readback()
        checks["every acknowledged write reads back byte-identical"] = {
            "passed": lost["total"] == 0 and lost["complete"], "detail": lost, "waited_s": 0}
        # Slurm: every acknowledged submission completed (after requeues).
        ok, detail, waited = verify.wait_for(lambda: self._jobs_done(), max(10.0, RECOVERY_WAIT_S / 2), every=2)
        checks["every slurm job completed"] = {"passed": ok, "detail": detail, "waited_s": waited}
        left = self.leases.still_active()
        checks["no GPU lease of the workload left active"] = {"passed": not left, "detail": left or "none",
                                                              "waited_s": 0}
        self.report["checks"] = checks

    def _jobs_done(self) -> verify.Check:
        done = self.jobs.done()
        missing = [j for j in self.jobs.submitted if j not in done]
        return not missing, {"submitted": len(self.jobs.submitted), "completed": len(done),
                             "requeued": sum(1 for d in done.values() if d["restarts"]), "missing": missing}

    def _readback(self) -> dict[str, Any]:
        s3_result, lu_result = self.work / "s3-verify.json", self.work / "lustre-verify.json"
        p = workload.start(["s3", "verify", "--journal", str(self.work / "s3.jsonl"), "--result", str(s3_result),
                            *self.s3_args], self.work / "s3-verify.log", self._netns_of(S3_HOST))
        q = workload.start(["lustre", "verify", "--result", str(lu_result), "--journals",
                            *[str(self.work / f"lustre{i}.jsonl") for i in (1, 2)], "--mounts", *self.mounts],
                           self.work / "lustre-verify.log")
        out: dict[str, Any] = {"complete": True}
        for name, proc, path in (("s3", p, s3_result), ("lustre", q, lu_result)):
            try:
                proc.wait(READBACK_WAIT_S)
                out[name] = json.loads(path.read_text())
            except (subprocess.TimeoutExpired, OSError, ValueError) as e:
                _kill_worker(proc)
                out[name] = {"error": f"verification did not finish: {e}"}
                out["complete"] = False
        out["total"] = sum(len(out[k].get("lost", [])) + len(out[k].get("mismatched", [])) for k in ("s3", "lustre"))
        return out

    def teardown(self) -> None:
        self.stop.set()
        self.stop_file.parent.mkdir(parents=True, exist_ok=True)
        self.stop_file.write_text("stop\n")
        for name, p in self.procs.items():
            if p.poll() is None:
                _kill_worker(p)
                self.report.setdefault("killed_workers", []).append(name)
        pids = verify.identities(_twin_pids(self.run) + [p.pid for p in self.procs.values()])
        prefix, mounts = _prefix(self.run), list(getattr(self, "mounts", []))
        self.report["workload"] = self._workload_counts()
        self.report["faults"] = self.records
        t = time.monotonic()
        try:
            lifecycle.down(self.run)
            down_error = ""
        except Exception as e:  # noqa: BLE001
            down_error = f"{type(e).__name__}: {e}"
        self.report["down_s"] = round(time.monotonic() - t, 2)
        self.report["leftovers"] = verify.leftovers(prefix, pids, mounts, self.run.path)
        checks = self.report.setdefault("checks", {})
        checks[f"twin down within {DOWN_TARGET_S:g} s"] = {
            "passed": not down_error and self.report["down_s"] <= DOWN_TARGET_S,
            "detail": down_error or f"{self.report['down_s']} s", "waited_s": 0}
        checks["nothing left behind"] = {"passed": not self.report["leftovers"],
                                         "detail": self.report["leftovers"] or "nothing", "waited_s": 0}
        failed_faults = [r["id"] for r in self.records if r.get("errors")]
        checks["every fault injected and cleared as planned"] = {
            "passed": bool(self.records) and not failed_faults and "error" not in self.report,
            "detail": {"faults": len(self.records), "failed": failed_faults, "error": self.report.get("error", "")},
            "waited_s": 0}
        self.report["passed"] = all(c["passed"] for c in checks.values())

    def _workload_counts(self) -> dict[str, Any]:
        counts: dict[str, dict[str, int]] = {}
        errors: dict[str, dict[str, int]] = {}
        for journal in ("s3", "lustre1", "lustre2"):
            for r in workload.journal_lines(self.work / f"{journal}.jsonl"):
                kind = f"{'s3' if journal == 's3' else 'lustre'} {r['kind']}"
                c = counts.setdefault(kind, {"ok": 0, "failed": 0})
                c["ok" if r.get("ok") else "failed"] += 1
                if r.get("ok") is False:
                    key = r.get("error", "")[:60]
                    errors.setdefault(kind, {})[key] = errors.setdefault(kind, {}).get(key, 0) + 1
                if r.get("kind") == "get" and r.get("ok") and not r.get("match"):
                    c["mismatched"] = c.get("mismatched", 0) + 1
        if hasattr(self, "jobs"):
            counts["slurm sbatch"] = {"ok": len(self.jobs.submitted), "failed": len(self.jobs.failed)}
        if hasattr(self, "leases"):
            counts["gpu lease"] = dict(self.leases.counts)
            errors["gpu lease"] = dict(self.leases.errors)
        return {"operations": counts, "errors": errors}


def _osd_up(twin: Twin, osd: int) -> verify.Check:
    info = next(o for o in twin.ceph(timeout=10).osd_tree().osds
                if o.id == osd)
    return info.up and info.__getattribute__("in"), f"osd.{osd} {'up' if info.up else 'down'}"


def _twin_pids(run: RunDir) -> list[int]:
    """Every pid the twin recorded: supervisor, broker, daemons, Slurm's daemon, Lustre clients."""
    pids: list[int] = []
    try:
        doc = json.loads(run.daemons.read_text())
        pids += [doc.get("supervisor") or 0, doc.get("broker_pid") or 0]
        pids += [d.get("pid") or 0 for d in doc.get("daemons", {}).values()]
    except (OSError, ValueError):
        pass
    try:
        pids.append(int((run.path / "slurm" / "daemon.pid").read_text().strip()))
    except (OSError, ValueError):
        pass
    try:   # slurmctld, munged and each slurmd, as Slurm's daemon process recorded them
        pids += [int(p) for p in json.loads((run.path / "slurm" / "state.json").read_text()).get("pids", {}).values()]
    except (OSError, ValueError, TypeError):
        pass
    from services.lustre.client.mount import records

    pids += [int(r.get("pid") or 0) for r in records(run.path)]
    return [p for p in pids if p]


def _prefix(run: RunDir) -> str | None:
    try:
        return json.loads((run.network / "network.json").read_text())["prefix"]
    except (OSError, ValueError, KeyError):
        return None


def run(seed: int, minutes: float, out: Path, network: str = "netns", run_dir: Path | None = None,
        log: Log = print) -> dict[str, Any]:
    report = Thrasher(seed, minutes, out, network, run_dir, log).main()
    report["replay"] = ("the same seed gives the same fault schedule (plan_digest) on the same topology; the "
                        "workload's interleaving with it (threads, processes, the kernel) is not replayed")
    return report
