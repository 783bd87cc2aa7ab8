"""``np.searchsorted``, checked to search a sorted array (NumPy's result for another is its
binary search's accident).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from capviz.backends.jax.trace import dtype_of, require


def _searchsorted(jnp: Any) -> Callable:
    """np.searchsorted: NumPy's result for an unsorted array is its binary search's own (it
    even depends on the order of the keys), so the sorted array is checked; for a sorted one
    every correct search gives NumPy's indices."""

    def searchsorted(a: Any, v: Any, side: str = "left", sorter: Any = None) -> Any:
        a = jnp.asarray(a)
        if sorter is not None:
            sorter = jnp.asarray(sorter)
            n = a.shape[0]
            require(jnp.all((sorter >= 0) & (sorter < n)), "ValueError: Sorter index out of "
                    f"range (an index of np.searchsorted's sorter is outside 0..{n - 1})")
        s = a if sorter is None else a[sorter]
        require(_sorted_nan_last(jnp, s), "np.searchsorted of an array that is not sorted "
                "(NaNs last): NumPy's result is then its binary search's own accident, which "
                "jax.numpy's search does not reproduce; sort the array (np.sort) or pass "
                "sorter=np.argsort(a)")
        return jnp.searchsorted(a, v, side=side, sorter=sorter)

    return searchsorted


def _sorted_nan_last(jnp: Any, s: Any) -> Any:
    """Whether 1-d ``s`` is sorted in NumPy's order (NaNs last; complex by real, then
    imaginary part; a complex NaN fails the test)."""
    if s.shape[0] < 2:
        return jnp.asarray(True)
    first, rest = s[:-1], s[1:]
    kind = dtype_of(s).kind
    if kind == "c":
        re0, re1, im0, im1 = jnp.real(first), jnp.real(rest), jnp.imag(first), jnp.imag(rest)
        ordered = (re0 < re1) | ((re0 == re1) & (im0 <= im1))
        return jnp.all(ordered) & ~jnp.any(jnp.isnan(s))
    if kind == "f":
        return jnp.all((first <= rest) | jnp.isnan(rest))
    return jnp.all(first <= rest)


FORMS: dict[str, Callable[[Any], Callable]] = {"searchsorted": _searchsorted}
"""The forms of this module by op name, each written with NumPy's signature."""
