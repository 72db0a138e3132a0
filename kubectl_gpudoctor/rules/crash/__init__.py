"""Crash-phase rules: containers start and exit."""
