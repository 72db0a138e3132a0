"""Readings of a node's GPU stack: which pod is which component and the node's GPU picture; pure."""
