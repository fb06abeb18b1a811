"""The twin's SDK: one client per service, reached through `emulator.client.Twin` (see there).

Each service names its accessors in its registration (`Service.sdk`, services/*/service.py), so
`Twin` gives `.gpu_node()`, `.gpu_nodes()`, `.fabric()`, `.ceph()`, `.s3()`, `.lustre()` and
`.slurm()` without importing a service; those clients live in services/<x>/sdk.py. Here: gpu_node.py
(GPU servers: a client of the proto alone, also used from the compose toolbox), network.py (netns
network faults), faults.py (every fault in one list) and daemons.py (the supervisor's records). The
CLI is built on these.
"""
