"""Readings of Kubernetes objects as plain dicts: pods, nodes, scheduling, storage, networks, workloads; pure."""
