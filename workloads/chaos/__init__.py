"""The thrasher: a seeded schedule of faults across the whole twin while a workload checks every byte.

schedule.py (the seeded plan, pure), faults.py (injectors and clearers), workload.py (the verifying
workers), verify.py (the end checks), report.py (JSON and HTML), run.py (all of it, in order).
"""
