"""The twin's SDK: one client per service, reached through `emulator.client.Twin` (see there).

Each service names its accessors in its registration (`Service.sdk`, services/*/service.py), so
`Twin` gives `.gpu_node()`, `.gpu_nodes()`, `.fabric()`, `.ceph()`, `.s3()`, `.lustre()` and
`.slurm()` without importing a service. Here: gpu_node.py (GPU servers), ceph.py (Ceph admin and
RBD), s3.py (boto3 on the gateway), lustre.py (Lustre admin), network.py (netns network faults)
and faults.py (every fault in one list); services/slurm/sdk.py is Slurm's, services/fabric/sdk.py
the fabric manager's. The CLI is built on these.
"""
