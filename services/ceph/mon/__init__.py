"""The monitor daemon: owns the Cluster model (map, pools, PGs, health) behind `clustertwin.v1.CephMon`."""
