"""Scheduling-phase rules: the pod is Pending and unscheduled."""
