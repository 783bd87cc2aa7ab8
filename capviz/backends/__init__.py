"""Backends: the replay backends registered by name (:mod:`.registry`, one module each:
:mod:`.numpy`, :mod:`.cupy`, and Dask and JAX imported on first use), eager devices on them
(:mod:`.eager`), and the capture recorder (:mod:`.capture`)."""
