"""The spec of the fabric manager daemon (DaemonConfig.spec, typed): what services/fabric/plan.py gives
it and what it parses at start (a malformed spec stops it with the field named)."""

from __future__ import annotations

from emulator.daemon_config import DaemonSpec

DEFAULT_UFM_USER = "admin"
DEFAULT_UFM_PASSWORD = "123456"


class FabricSpec(DaemonSpec):
    topology_file: str                  # the topology (a path, or a name under topologies/)
    ufm: str | None = None              # HOST:PORT of the UFM REST API (None: no REST server)
    ufm_user: str = DEFAULT_UFM_USER    # its basic-auth credentials
    ufm_password: str = DEFAULT_UFM_PASSWORD
    fabric_dir: str | None = None       # where the subnet's files go (default RUN_DIR/fabric/NAME)
    sm_node: str | None = None          # where OpenSM attaches (default the first spine)
    control_socket: str | None = None   # the supervisor's control socket (default the run dir's)
    drive_compute_plane: bool = True    # on a netns twin, drive the compute plane's routes through it
