"""The OSD daemon: chunk storage on its own data directory, behind gRPC `clustertwin.v1.CephOsd`."""
