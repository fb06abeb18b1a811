"""The client mount as a process: `twin lustre mount` starts it in the background and records it in
the run directory (RUN/mounts/lustre-<hash>.json: mountpoint, pid and its start time), so `twin
lustre umount` and `twin down` can unmount it whatever state it is in. `unmount` never waits on the
client for long: it unmounts (the client flushes what was written); if the client does not answer
within the grace period (its servers are gone, or it is stuck) it aborts the FUSE connection
(/sys/fs/fuse/connections/DEV/abort: every pending request fails), detaches the mount lazily, and
stops the client process by its recorded pid. A mount whose client crashed is detached the same way.

Where the client runs: Lustre clients are nodes on the storage network. On the loopback network
every address is local, so the client is a process of this machine. Under `--network netns` the
storage segment is reachable only from hosts on it (the operator port is on the OOB plane), so the
client process enters a client node's network namespace (a GPU server's: gpu001 unless `twin lustre
mount --host` names another) before it connects, and its RPCs and bulk reads go out of that node's
storage NIC, through the storage switches (shaped, lossless), to the servers' storage addresses. The
FUSE mount itself is in this machine's mount namespace (setns of the network namespace changes no
mounts), so the mount point serves every process here, as the node's mount would serve its jobs.

    python -m services.lustre.client.mount RUN_DIR MOUNTPOINT [NETNS]   # foreground; the FUSE process
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from emulator.manifest import Manifest
from emulator.process import same_process, start_time, stop_process
from emulator.rundir import RunDir
from services.lustre.manifest import LustreSection

READ_AHEAD_KB = 16384
FUSE_TYPE = "fuse.lustre"
UNMOUNT_GRACE_S = 5.0   # how long an answering client may take to flush and unmount
FUSECTL = Path("/sys/fs/fuse/connections")


class MountError(RuntimeError):
    pass


def mounts_dir(run_path: Path) -> Path:
    return Path(run_path) / "mounts"


def mount_path(mountpoint: str) -> str:
    """The absolute mount point without a stat of the mount itself (a hung client would block it)."""
    p = Path(os.path.abspath(mountpoint))
    return str(p.parent.resolve() / p.name)


def record_path(run_path: Path, mountpoint: str) -> Path:
    digest = hashlib.sha1(mount_path(mountpoint).encode()).hexdigest()[:12]
    return mounts_dir(run_path) / f"lustre-{digest}.json"


def records(run_path: Path) -> list[dict]:
    out = []
    for p in sorted(mounts_dir(run_path).glob("lustre-*.json")):
        try:
            out.append(json.loads(p.read_text()) | {"record": str(p)})
        except (OSError, json.JSONDecodeError):
            continue
    return out


def fuse_device(mountpoint: str) -> str | None:
    """The FUSE mount's device (its connection under /sys/fs/fuse/connections), from
    /proc/self/mountinfo (no stat of the mount: a hung client would block it); None if not mounted."""
    mp = mount_path(mountpoint)
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        fields, _, rest = line.partition(" - ")
        parts = fields.split()
        if len(parts) >= 5 and parts[4].replace("\\040", " ") == mp and rest.startswith("fuse"):
            return parts[2]   # major:minor
    return None


def is_mounted(mountpoint: str) -> bool:
    return fuse_device(mountpoint) is not None


def tune_readahead(mountpoint: str) -> None:
    """A bigger read-ahead window for the FUSE mount's bdi (the kernel's default is 128 KiB)."""
    dev = os.stat(mountpoint).st_dev
    bdi = Path(f"/sys/class/bdi/{os.major(dev)}:{os.minor(dev)}")
    for name, value in (("read_ahead_kb", READ_AHEAD_KB),):
        try:
            (bdi / name).write_text(str(value))
        except OSError:
            pass


def client_host(manifest: Manifest, host: str | None = None) -> tuple[str | None, str | None]:
    """(the client node, its network namespace) for a mount of the twin in `manifest`: under `--network
    netns` `host` (default: the first GPU server) with an address on the storage network; on the
    loopback network (no namespaces) `host` as given and no namespace. Raises MountError."""
    if manifest.network != "netns":
        return host, None
    on_storage = {d.host: d for d in manifest.daemons if d.netns and "storage" in d.addresses}
    if host is None:
        gpus = [d.host for d in manifest.daemons_of("gpu_node") if d.host in on_storage]
        if not gpus:
            raise MountError("no GPU server of this twin is on the storage network: name a client with --host")
        host = gpus[0]
    if host not in on_storage:
        raise MountError(f"{host} is not a host of this twin on the storage network (Lustre clients need one): "
                         f"choose one of {', '.join(sorted(on_storage)[:8])}{' ...' if len(on_storage) > 8 else ''}")
    return host, on_storage[host].netns


def mount_background(run_path: Path, mountpoint: str, timeout: float = 20.0, host: str | None = None) -> dict:
    run_path = Path(run_path).resolve()
    mp = Path(mountpoint).resolve()
    if not (run_path / "manifest.json").exists():
        raise MountError(f"no twin in {run_path}: start one with `twin up TOPOLOGY --lustre`")
    manifest = RunDir(run_path).load_manifest()
    lustre = LustreSection.of(manifest)
    if lustre is None:
        raise MountError(f"the twin in {run_path} runs no Lustre: start it with `twin up TOPOLOGY --lustre`")
    if not Path("/dev/fuse").exists():
        raise MountError("/dev/fuse is missing: this machine cannot mount FUSE filesystems")
    host, netns = client_host(manifest, host)
    if is_mounted(str(mp)):
        raise MountError(f"{mp} is already a mount point")
    mp.mkdir(parents=True, exist_ok=True)
    if any(mp.iterdir()):
        raise MountError(f"{mp} is not empty")
    mounts_dir(run_path).mkdir(parents=True, exist_ok=True)
    log = open(run_path / "logs" / f"lustre-client-{record_path(run_path, str(mp)).stem[7:]}.log", "ab")
    proc = subprocess.Popen([sys.executable, "-m", "services.lustre.client.mount", str(run_path), str(mp),
                             *([netns] if netns else [])],
                            stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True)
    deadline = time.monotonic() + timeout
    while not is_mounted(str(mp)):
        if proc.poll() is not None:
            raise MountError(f"the client exited ({proc.returncode}) before mounting; see {log.name}")
        if time.monotonic() > deadline:
            stop_process(proc.pid, 0)
            raise MountError(f"{mp} not mounted within {timeout:.0f}s; see {log.name}")
        time.sleep(0.02)
    tune_readahead(str(mp))
    rec = {"mountpoint": str(mp), "pid": proc.pid, "start": start_time(proc.pid),
           "fsname": lustre.fsname, "mgs": lustre.mgs,
           "log": log.name, "host": host, "netns": netns}
    record_path(run_path, str(mp)).write_text(json.dumps(rec, indent=1))
    return rec


def _fusermount() -> str:
    return shutil.which("fusermount3") or shutil.which("fusermount") or "fusermount3"


def unmount(run_path: Path, mountpoint: str, grace: float = UNMOUNT_GRACE_S) -> bool:
    """Unmount and stop the client; True if something was mounted or running."""
    mp = mount_path(mountpoint)
    rec_file = record_path(Path(run_path).resolve(), mp)
    rec = json.loads(rec_file.read_text()) if rec_file.exists() else {}
    did = is_mounted(mp)
    if did:
        detach(mp, grace)
    pid = rec.get("pid")
    if pid and same_process(pid, rec.get("start")):   # it leaves once unmounted; SIGTERM, SIGKILL if not
        did = True
        stop_process(pid, grace)
    rec_file.unlink(missing_ok=True)
    rec_file.with_suffix(".sock").unlink(missing_ok=True)
    return did


def detach(mp: str, grace: float) -> None:
    """Unmount `mp`; if that does not finish within `grace` (the client does not answer), abort the
    FUSE connection so that its pending requests fail, and detach the mount lazily."""
    device = fuse_device(mp)
    umount = subprocess.Popen([_fusermount(), "-u", mp], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        if umount.wait(grace) == 0 and not is_mounted(mp):
            return
    except subprocess.TimeoutExpired:
        if device:
            abort_connection(device)
    if is_mounted(mp):   # busy, or a dead client: lazily, so that nothing stale stays
        subprocess.run(["umount", "-l", mp], capture_output=True, timeout=grace)
    try:
        umount.wait(grace)
    except subprocess.TimeoutExpired:
        umount.kill()


def abort_connection(device: str) -> bool:
    """Abort the FUSE connection of `device` (major:minor), as `echo 1 > .../abort` does: every request
    waiting on the client fails with ENOTCONN. Mounts the fusectl filesystem if it is not."""
    major, minor = (int(x) for x in device.split(":"))
    conn = FUSECTL / str(os.makedev(major, minor) if major else minor)
    if not conn.exists() and FUSECTL.is_dir() and not any(FUSECTL.iterdir()):
        subprocess.run(["mount", "-t", "fusectl", "fusectl", str(FUSECTL)], capture_output=True, timeout=5)
    try:
        (conn / "abort").write_text("1")
    except OSError:
        return False
    return True


def unmount_all(run_path: Path) -> list[str]:
    """What `twin down` calls: every Lustre mount of this twin, unmounted."""
    done = []
    for rec in records(Path(run_path)):
        if unmount(Path(run_path), rec["mountpoint"]):
            done.append(f"lustre mount {rec['mountpoint']}")
        Path(rec["record"]).unlink(missing_ok=True)
    return done


def main(argv: list[str]) -> int:
    if len(argv) not in (2, 3):
        print("usage: python -m services.lustre.client.mount RUN_DIR MOUNTPOINT [NETNS]", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.INFO, format="%(asctime)s lustre-client %(levelname)s %(name)s: %(message)s")
    from emulator.procutil import set_process_name
    from services.lustre.client.core import LustreClient
    from services.lustre.client.fuse import mount

    set_process_name("twin:lustre-cli")
    if len(argv) == 3:   # the client node's namespace: its storage NIC (before any gRPC thread starts)
        from emulator.procutil import enter_netns
        enter_netns(argv[2])
    lustre = LustreSection.require(RunDir(argv[0]).load_manifest(), argv[0])
    client = LustreClient.from_section(lustre)
    logging.getLogger("lustre.client").info("mounting %s on %s", lustre.mgs, argv[1])
    from services.lustre.client.control import socket_path
    mount(client, argv[1], control=socket_path(record_path(Path(argv[0]).resolve(), argv[1])))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
