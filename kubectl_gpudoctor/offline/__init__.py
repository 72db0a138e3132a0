"""Evidence from saved files (--from) and the bundles the tool writes; never the network."""
