"""The fabric manager's part of the twin's manifest, typed: its entry's UFM REST endpoint and credentials
(services/fabric/plan.py writes them; `twin` and the benches read them through this model)."""

from __future__ import annotations

from emulator.manifest import DaemonEntry, Manifest


class FabricEntry(DaemonEntry):
    ufm: str                  # UFM REST's base URL, http://HOST/ufmRest
    ufm_user: str
    ufm_password: str


def fabric_manager(manifest: Manifest) -> FabricEntry | None:
    """The fabric manager's entry, None if the twin runs none."""
    found = manifest.daemons_of("fabric")
    return found[0].typed(FabricEntry) if found else None
