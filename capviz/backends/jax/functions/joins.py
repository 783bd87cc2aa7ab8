"""``np.column_stack`` and ``np.dstack`` of arrays and numbers: NumPy makes each number an array
first (``asanyarray``: an int64, float64, complex128 or bool array), so it promotes as an array,
not as a weak scalar (``np.column_stack((x, 0.5))`` of float32 ``x`` is float64), which
jax.numpy's joins do (the lead's note on the hostile review 6, finding 5)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np


def _join(name: str) -> Callable[[Any], Callable]:
    def make(jnp: Any) -> Callable:
        fn = getattr(jnp, name)

        def run(tup: Any) -> Any:
            return fn([v if hasattr(v, "dtype") else np.asarray(v) for v in tup])

        run.__name__ = name
        return run

    return make


FORMS: dict[str, Callable[[Any], Callable]] = {name: _join(name)
                                               for name in ("column_stack", "dstack")}
"""The forms of this module by op name, each written with NumPy's signature."""
