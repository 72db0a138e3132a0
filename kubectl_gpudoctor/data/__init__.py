"""Knowledge kept as data: exit codes and signals, log signatures, CUDA/driver table, operator components."""
