"""Network-phase rules: CNI, NetworkPolicy, RDMA and secondary networks."""
