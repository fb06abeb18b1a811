"""Staging: copy a training dataset from the Ceph S3 gateway into the Lustre hot tier (`twin stage`)."""
