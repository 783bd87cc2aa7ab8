"""Replay engines only, registered by name (:mod:`.registry`): :mod:`.numpy` and
:mod:`.cupy`, and the Dask and JAX engines (:mod:`.dask`, :mod:`.jax`), each imported on first
use. :mod:`.host` admits host arrays for capture and replay alike."""
