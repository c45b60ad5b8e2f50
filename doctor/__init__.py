"""gpu-node-doctor: finds why a GPU inference node is slower than it should be."""

__version__ = "0.1.0"
