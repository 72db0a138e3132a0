"""Node rules: the node's GPUs and GPU stack (node view, and the node under a pod)."""
