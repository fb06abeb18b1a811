"""`make bench`: the twin's performance figures, measured on this machine (medians of repeats)."""
