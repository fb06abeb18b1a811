"""The twin's SDK: one client per service, reached through `emulator.client.Twin` (see there).

gpu_node.py (GPU servers), ceph.py (Ceph admin and RBD), s3.py (boto3 on the gateway), lustre.py
(Lustre admin), network.py (netns network faults), slurm.py (Slurm), faults.py (every fault in one
list); the fabric manager's client is emulator/fabric_client.py. The CLI is built on these.
"""
