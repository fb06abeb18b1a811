"""Slurm on the twin: `slurm.conf`/`gres.conf` from the topology (config, pure) and the real
Debian `slurm-wlm` daemons (munged, slurmctld, one slurmd per GPU server) as processes (cluster)."""
