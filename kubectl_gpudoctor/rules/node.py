"""Node rules: can this node run GPU pods (device plugin, GPU operator, MIG, health)."""
