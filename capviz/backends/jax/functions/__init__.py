"""NumPy functions the JAX backend writes out in jax.numpy, where jax.numpy's own give another
result than NumPy's or fail on arguments NumPy takes (issue 25, found by the thorough
differential profile, ``python -m tests.differential --thorough``). Each form is NumPy's
algorithm step by step in NumPy's types, or checks the values (:func:`require`: the replay fails
at the node with the user's line) where NumPy's result is its own algorithm's accident (a
binary search of an unsorted array). One module per family: :mod:`.ranges` (``linspace``,
``geomspace``, ``histogram_bin_edges``), :mod:`.order_statistics` (``quantile``,
``percentile`` and their nan forms), :mod:`.polynomials` (``convolve``, ``kron`` and
``polyadd`` of booleans), :mod:`.averages` (``average``), :mod:`.norms` (``linalg.norm``),
:mod:`.trapezoids` (``trapezoid``), :mod:`.hyperbolic` (complex ``sinh``, ``cosh``),
:mod:`.complex_exponentials` (complex ``log1p``, ``expm1``), :mod:`.complex_tangents` (complex
``tan``, ``tanh``; the forms both make: :mod:`.complex_forms`),
:mod:`.covariances` (``cov``), :mod:`.empty_operands` (``median``, ``nanmedian`` of an empty
operand: NumPy's own result),
:mod:`.interpolation` (``interp``), :mod:`.joins` (``column_stack``, ``dstack`` of numbers),
:mod:`.division` (``floor_divide``, ``remainder``, ``divmod``: NumPy's signs of zero), :mod:`.ranks`
(``linalg.matrix_rank`` of an empty operand),
:mod:`.transforms` (``np.fft``), :mod:`.insertion` (``insert``), :mod:`.special_values`
(``nan_to_num``), :mod:`.phases` (``unwrap``), :mod:`.searching` (``searchsorted``), and
:mod:`.rounding`, the NumPy rounding they share. :data:`FUNCTIONS` joins
:data:`capviz.backends.jax.ops.OVERRIDES`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from capviz.backends.jax.functions import (
    averages,
    complex_exponentials,
    complex_tangents,
    covariances,
    division,
    empty_operands,
    hyperbolic,
    insertion,
    interpolation,
    joins,
    norms,
    order_statistics,
    phases,
    polynomials,
    ranges,
    ranks,
    searching,
    special_values,
    transforms,
    trapezoids,
)
from capviz.ops.spec import SPECS, call


def _called_as_numpy(name: str, form: Callable[[Any], Callable]) -> Callable[[Any], Callable]:
    """``form`` (written with NumPy's signature) called with the operands and parameters of
    the op ``name``'s node, as :func:`capviz.ops.spec.call` calls NumPy's function."""

    def make(jnp: Any) -> Callable:
        fn = form(jnp)
        spec = SPECS[name]

        def run(*operands: Any, **params: Any) -> Any:
            return call(spec, fn, operands, params)

        run.__name__ = name.rsplit(".", 1)[-1]
        return run

    return make


_FORMS: dict[str, Callable[[Any], Callable]] = {
    **polynomials.FORMS, **insertion.FORMS, **order_statistics.FORMS, **phases.FORMS,
    **searching.FORMS, **ranges.FORMS, **averages.FORMS, **interpolation.FORMS,
    **special_values.FORMS, **norms.FORMS, **trapezoids.FORMS, **empty_operands.FORMS,
    **covariances.FORMS, **joins.FORMS}

FUNCTIONS: dict[str, Callable[[Any], Callable]] = {
    **{name: _called_as_numpy(name, form) for name, form in _FORMS.items()},
    **transforms.FORMS, **hyperbolic.FORMS, **complex_exponentials.FORMS,
    **complex_tangents.FORMS, **division.FORMS, **ranks.FORMS}
"""The forms of this package by op name (joined to ``OVERRIDES``)."""
