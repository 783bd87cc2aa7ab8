"""``np.linalg.matrix_rank`` of an empty operand, NumPy's 0 (issue 25, the thorough
differential profile's raw-error rows with jax 0.10.2, stop 41: ``matrix_rank`` of a
``uint8[2, 0]`` raised jax's "zero-size array to reduction operation max" where NumPy gives
0)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from capviz import ops


def _matrix_rank(jnp: Any) -> Callable:
    fn = ops.OPS["linalg.matrix_rank"].bind(jnp)

    def matrix_rank(a: Any, *args: Any, **params: Any) -> Any:
        a = jnp.asarray(a)
        if a.size == 0:  # no singular value above any tolerance: rank 0 per matrix
            return jnp.zeros(a.shape[:-2], np.int64)
        return fn(a, *args, **params)

    return matrix_rank


FORMS: dict[str, Callable[[Any], Callable]] = {"linalg.matrix_rank": _matrix_rank}
"""The forms of this module by op name."""
