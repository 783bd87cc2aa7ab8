"""The JAX engine (``backend="jax"``); importing this package registers it."""

from capviz.backends.jax import backend  # noqa: F401  (registers the backend)
