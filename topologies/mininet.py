"""The twin's planes for plain Mininet: `mn --custom topologies/mininet.py --topo twin,rack --controller none`
(or `twin,su-1024`, or a topology YAML path; `twin,rack,mn` names the nodes' route prefix).

Every host, compute/Ethernet router and OOB switch is a Mininet node in its own namespace, with the
twin's interface names, addresses, ECMP routes, host plane guards and sysctls; OOB switches are
Linux bridges. Nothing else of the twin runs (no daemons, shaping or faults): the bare network.
`pingall` tests the OOB plane (a host's first interface); `gpu001 ping 10.100.0.4` the compute one.

Runs under /usr/bin/mn (Debian's Python, which has Mininet but not the twin's dependencies): the
plan comes from the repository's venv (`python -m emulator.network.mininet_build`, JSON), and the
Topo class from emulator/network/mininet_topo.py, loaded by path.
"""

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

# mn exec()s a custom file without __file__; the code object still knows its file name.
ROOT = Path(globals().get("__file__") or sys._getframe().f_code.co_filename).resolve().parents[1]


def _venv_python() -> str:
    python = os.environ.get("CLUSTERTWIN_PYTHON") or str(ROOT / ".venv" / "bin" / "python")
    if not Path(python).exists():
        sys.exit(f"{python} not found: run `make install` in {ROOT} (or set CLUSTERTWIN_PYTHON)")
    return python


def _topo_module():
    spec = importlib.util.spec_from_file_location("clustertwin_mininet_topo",
                                                  ROOT / "emulator" / "network" / "mininet_topo.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def twin(topology: str = "rack", prefix: str = "mn"):
    """`--topo twin,TOPOLOGY[,PREFIX]`: the twin's planes for TOPOLOGY (rack, su-1024, mini, a YAML path)."""
    result = subprocess.run([_venv_python(), "-m", "emulator.network.mininet_build", topology, "--prefix", prefix],
                            cwd=ROOT, capture_output=True, text=True)
    if result.returncode:
        sys.exit(f"cannot plan topology {topology!r}: {result.stderr.strip().splitlines()[-1:]}")
    return _TOPO.TwinTopo(json.loads(result.stdout))


_TOPO = _topo_module()

# On an exception or ^C, mn's clean-up kills every Mininet process on the machine (`pkill -9 -f
# mininet:`, `killall mnexec`, rm /tmp/*.log): others' networks too. Under mn (its __main__ has
# `cleanup`), this network's nodes are stopped instead, and nothing else.
_main = sys.modules.get("__main__")
if _main is not None and callable(getattr(_main, "cleanup", None)) and hasattr(_main, "MininetRunner"):
    _main.cleanup = _TOPO.stop_made

# The twin's node names have hyphens (ib-leaf01, pdu-r01-1); Mininet's CLI reads a command's first
# word with cmd.Cmd's identifier characters, which have none, so `ib-leaf01 ip route` would be unknown.
try:
    from mininet.cli import CLI
    CLI.identchars += "-"
except ImportError:   # imported outside Mininet
    pass

TOPOS = {"twin": twin}
