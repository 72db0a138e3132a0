"""Network-phase rules: CNI, NetworkPolicy and RDMA/Multus problems."""
