"""Failure drills: YAML files (topology, workload, fault schedule, expectations) run against the
twin, checked, and reported as JSON and a self-contained HTML page (`twin drill run`)."""
