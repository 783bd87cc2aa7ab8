"""Backends: eager NumPy and CuPy (:mod:`.eager`), and the capture recorder (:mod:`.capture`)."""
