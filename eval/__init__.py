"""eval: metrics, benchmark runners and the RRF / ACT-R experiments."""
