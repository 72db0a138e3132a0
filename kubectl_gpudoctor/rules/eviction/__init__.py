"""Eviction-phase rules: the pod was evicted, or the node under it is unhealthy."""
