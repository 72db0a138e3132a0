"""Eviction-phase rules: the pod was evicted, or the node under it is under pressure or not ready."""
