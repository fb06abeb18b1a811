"""The RADOS Gateway (RGW): an S3 endpoint over the Ceph model. See gateway.py and http.py."""
