"""Workloads that run against a twin (issue 14 moves the others here from services/)."""
