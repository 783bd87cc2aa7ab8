"""A dask scheduler for tests that count how many graphs a replay computes."""

from __future__ import annotations

import dask.threaded


class CountingScheduler:
    """The threaded scheduler, counting the graphs it is asked to run."""

    def __init__(self):
        self.calls = 0

    def __call__(self, dsk, keys, **kwargs):
        self.calls += 1
        return dask.threaded.get(dsk, keys, **kwargs)
