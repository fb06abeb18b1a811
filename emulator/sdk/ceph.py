"""Moved: Ceph's SDK client is services/ceph/sdk.py (`Twin.ceph()`). These names stay importable from
here only for emulator/faults/ceph.py, until it gets them from the service."""

from services.ceph.sdk import DATA_POOL, OSD_FAULT_KINDS, CephAdmin, RbdClient

__all__ = ["DATA_POOL", "OSD_FAULT_KINDS", "CephAdmin", "RbdClient"]
