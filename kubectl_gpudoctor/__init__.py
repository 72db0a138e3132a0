"""kubectl gpudoctor: tells why a GPU pod or node is stuck and what exactly to change."""

__version__ = "0.1.0"
