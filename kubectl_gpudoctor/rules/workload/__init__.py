"""Workload rules: problems above the pods, when a controller cannot create them."""
