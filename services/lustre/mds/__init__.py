"""The MDS daemon: the namespace on MDT0000 in its own SQLAlchemy store, served over gRPC."""
