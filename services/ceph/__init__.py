"""Ceph cold (RGW S3 on EC 8+3 HDD) and block (RBD on replicated SSD) tiers: pure models first.

Files, one idea each: `hashing` (Ceph's rjenkins hashes and stable_mod), `erasure` (real k+m
coding with pyeclib), `replication` (the same interface for size-n copies), `crush` (hosts, OSDs,
straw2 placement), `pool` (pools and object → PG), `pg` (PG states, peering, recovery, scrub),
`chunkstore` (where chunk bytes live), `monitor` (the OSD map and its timing), `cluster` (the
pieces wired together: put/get/tick/recover/scrub), `health` (health checks) and `status`
(`ceph -s` and `ceph health detail` text).
"""
