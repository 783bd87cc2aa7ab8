"""The Dask engine (``backend="dask"``); importing this package registers it."""

from capviz.backends.dask import backend  # noqa: F401  (registers the backend)
