"""Creation-phase rules: the pod is on a node but its containers cannot be created or started."""
