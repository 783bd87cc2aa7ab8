"""What the complex functions written out in NumPy's or glibc's formulas share
(:mod:`.complex_exponentials`, :mod:`.complex_tangents`): a real function taken as glibc's float
one is (:func:`real_function`), and the op form that runs jax.numpy's own on a real operand and
the written-out formula on a complex one (:func:`forms`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from capviz.backends.jax.trace import dtype_of


def real_function(jnp: Any, name: str, x: Any) -> Any:
    """jax.numpy's real ``name`` of ``x``; of float32, in float64 rounded to float32."""
    fn = getattr(jnp, name)
    if dtype_of(x) == np.float32:
        return fn(x.astype(np.float64)).astype(np.float32)
    return fn(x)


def _form(name: str, complex_form: Callable[[Any, Any], Any]) -> Callable[[Any], Callable]:
    def make(jnp: Any) -> Callable:
        real_form = getattr(jnp, name)

        def run(x: Any) -> Any:
            x = jnp.asarray(x)
            if dtype_of(x).kind != "c":
                return real_form(x)
            return complex_form(jnp, x)

        run.__name__ = name
        return run

    return make


def forms(complex_forms: dict[str, Callable[[Any, Any], Any]]) -> dict[str, Callable]:
    """The op forms by name of ``complex_forms`` (``name -> formula(jnp, z)``): jax.numpy's
    ``name`` of a real operand, the formula of a complex one."""
    return {name: _form(name, formula) for name, formula in complex_forms.items()}
