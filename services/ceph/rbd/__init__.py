"""RBD: block images striped over RADOS objects of a replicated pool (image.py)."""
