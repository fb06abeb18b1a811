"""The Lustre client: striped I/O over the OSS daemons (core), a FUSE mount (fuse), its process (mount)."""
