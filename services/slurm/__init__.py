"""Slurm on the twin: `slurm.conf`/`gres.conf` from the topology (config, pure) and the GPU
servers' live GRES (live), the real Debian `slurm-wlm` daemons as processes (cluster), the process
that keeps them running for a twin (daemon) and its start/stop/status (lifecycle, `twin slurm`), and
the HealthCheckProgram that drains nodes on fatal Xids (healthcheck)."""
