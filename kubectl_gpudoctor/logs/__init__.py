"""Readings of container logs: signature matching and the crashed run's failure region; pure."""
