"""Live collection from the API server: the only package that imports `kubernetes`, and only GETs."""
