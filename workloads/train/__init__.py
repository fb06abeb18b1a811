"""A training-workload emulator of the seed's 3D-parallel job (TP 8 in a server, PP 4 across
servers, DP over the rest): pure models of a step's compute, its exposed communication and its
checkpoint cost (`compute`, `step`, `checkpoint_model`, `config`), real checkpoint files
(`checkpoint_store`), the live-fabric probe (`fabric_probe`) and the runner that leases GPUs from
the twin and feels its faults (`runner`, `python -m workloads.train.run`, `twin train`).

Every time the emulator reports is modelled (a model of an H100 cluster), never measured on this
machine; outputs say so.
"""
