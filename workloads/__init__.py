"""Workloads that run against a twin as a user's job would: train, drill, stage, chaos, each with its `twin`
command."""
