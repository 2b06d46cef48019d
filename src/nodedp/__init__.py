"""nodedp: a benchmark suite for node-level differentially private GNNs."""

__version__ = "0.1.0"
