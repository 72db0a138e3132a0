"""Init-phase rules: an init container fails."""
