"""Lustre hot tier: pure models of the MDS namespace, striping layouts, OST/OSS state, and `lfs` output.

The daemons (MGS/MDS, OSS), the FUSE client and failover build on these models; nothing here does
I/O or reads the wall clock.
"""
