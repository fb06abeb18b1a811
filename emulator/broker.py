"""The twin's MQTT broker: a real Mosquitto, configured and owned by the supervisor."""

from __future__ import annotations

import getpass
import shutil
import subprocess
from pathlib import Path

from emulator.process import stop_process
from emulator.procutil import dies_with_parent, wait_for_port


class BrokerError(RuntimeError):
    pass


def write_config(directory: Path, host: str, port: int, log_file: Path) -> Path:
    conf = directory / "mosquitto.conf"
    conf.write_text(
        f"# written by the clustertwin supervisor\n"
        f"listener {port} {host}\n"
        # Stay the supervisor's user: dropping privileges would clear PR_SET_PDEATHSIG, and a broker
        # outliving a killed supervisor would squat on the slot's address.
        f"user {getpass.getuser()}\n"
        "allow_anonymous true\n"
        "persistence false\n"
        f"log_dest file {log_file}\n"
        "log_type error\nlog_type warning\nlog_type notice\n"
        "max_queued_messages 100000\n"
        "max_inflight_messages 0\n"
    )
    return conf


def start(directory: Path, host: str, port: int, log_file: Path, timeout: float = 10.0,
          netns: str | None = None) -> subprocess.Popen:
    """Start Mosquitto on host:port (inside the management host's namespace when there is one)."""
    exe = shutil.which("mosquitto") or "/usr/sbin/mosquitto"
    if not Path(exe).exists():
        raise BrokerError("mosquitto not found: run `make install` (it installs Debian's mosquitto)")
    conf = write_config(directory, host, port, log_file)
    # no pre-exec hook (it made the test process's gRPC abort the forked child once): setpriv and nsenter
    # set the death signal and enter the namespace
    argv = [exe, "-c", str(conf)]
    if netns:
        argv = ["nsenter", f"--net=/run/netns/{netns}", *argv]
    proc = subprocess.Popen(dies_with_parent(argv), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=open(log_file, "ab"))
    if not wait_for_port(host, port, timeout):
        stop_process(proc.pid, 1.0)
        raise BrokerError(f"mosquitto did not listen on {host}:{port} within {timeout:.0f}s; see {log_file}")
    return proc

