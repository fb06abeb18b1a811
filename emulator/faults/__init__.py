"""The twin's one fault log and its per-subsystem backends; the API over them is emulator/sdk/faults.py."""
