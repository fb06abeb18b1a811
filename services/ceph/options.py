"""Ceph's own `twin up` options: each field is a flag (`--storage-timing`), its description the help."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class CephOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    ceph_users: str | None = Field(None, description="With --ceph: RGW users to create at start-up, a JSON/YAML "
                                   "list of {uid, display_name, email?, tenant?, access_key, secret_key}.")
    rgw_lc_debug_interval: float = Field(0.0, description="With --ceph: a lifecycle day is this many twin seconds "
                                         "and a pass runs every quarter of one (RGW's rgw_lc_debug_interval); "
                                         "0: real days.")
    storage_timing: Literal["model", "fast"] = Field(
        "model", description="With --ceph: model (each chunk I/O takes its HDD/SSD device time) or fast "
        "(no modelled waits, for test suites).")
