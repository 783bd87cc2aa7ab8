"""Complex picks on JAX: ``max``, ``min`` (``amax``, ``amin``, ``nanmax``, ``nanmin``),
``np.maximum``, ``np.minimum``, ``np.fmax``, ``np.fmin`` and ``np.sort`` of complex values
that XLA computed (issue 25; W=25d's composition row, stop 37).

NumPy orders complex values by their real parts first, then by their imaginary parts. A real
pick moves by at most what its operand's values move (``cancelling.PICKS``), but a complex one
does not: where two candidates' real parts are within the values' error of each other, XLA's
rounding can break the tie the other way, and the pick's imaginary part jumps by the distance
between them. ``((x + 1j) * (x[::-1] - 2j)) @ v`` has rows whose real parts are equal in exact
arithmetic; its ``max(0)`` replayed ``1.89-8.48j`` where NumPy gives ``1.89+6.55j``, silently
(/work/notes/s37/25j/m6_cpick25d.py: 63 silent of 132 rows on main).

So where the operand is computed by XLA (not an input, a constant or a move of one, which are
NumPy's values), the pick is checked at run time: a candidate ``c`` whose real part is within
the two values' tolerances (``atol + rtol |z|`` each, the engine's) of the pick ``p``'s, and
that differs from ``p`` by more than ``p``'s tolerance, is one NumPy may pick instead; the
replay fails at the node there, naming ``backend='numpy'``. Elsewhere the pick is off NumPy's
by at most its candidates' tolerances, as a real pick is. A sort is checked on each pair of
neighbours in its result (a run of near-ties each within the tolerance of the next is taken as
one value)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from capviz.backends import cancelling
from capviz.backends.jax.cancellation import tolerance
from capviz.backends.jax.trace import TRACE, dtype_of, require_each
from capviz.core.ir import Node

REDUCTIONS = frozenset(("max", "min", "amax", "amin", "nanmax", "nanmin"))
"""The picks along axes."""

ELEMENTWISE = frozenset(("maximum", "minimum", "fmax", "fmin"))
"""The picks between two operands, element by element."""

PICKS = REDUCTIONS | ELEMENTWISE | {"sort"}

_MESSAGE = ("np.{op}: of complex values, which NumPy orders by their real parts first: two "
            "of them have real parts within the tolerance of XLA's arithmetic of each other "
            "and differ beyond it, so NumPy's pick and XLA's may differ there (by the "
            "imaginary parts); replay with backend='numpy'")


def checked(name: str, jnp: Any, fn: Callable) -> Callable:
    """``fn`` (the op ``name`` on jax.numpy), its complex picks of values XLA computed checked
    (the module docstring); ``fn`` itself for any other op."""
    if name not in PICKS:
        return fn

    def run(*args: Any, **params: Any) -> Any:
        result = fn(*args, **params)
        if dtype_of(result).kind != "c" or not args:
            return result
        trace = TRACE.get()
        node = trace.node if trace is not None else None
        if node is None or node.op != name or not _computed(node):
            return result
        if name in REDUCTIONS:
            ok = _reduction_ok(jnp, args[0], result, params)
        elif name in ELEMENTWISE:
            ok = _elementwise_ok(jnp, args[0], args[1], result)
        else:
            ok = _sort_ok(jnp, result, params.get("axis", -1))
        if ok is not None:
            require_each(ok, _MESSAGE.format(op=name))
        return result

    run.__name__ = getattr(fn, "__name__", name)
    return run


def _computed(node: Node) -> bool:
    """Whether an operand of ``node`` may be XLA's value, not NumPy's: one that is not an
    input, a constant or a move of one."""
    return any(_inexact(a) for a in node.args if isinstance(a, Node))


def _inexact(value: Node) -> bool:
    while value.kind == "op" and value.op in cancelling.MOVES and value.args \
            and isinstance(value.args[0], Node) \
            and not any(isinstance(a, Node) for a in value.args[1:]):
        value = value.args[0]
    return value.kind == "op"


def _slack(jnp: Any, z: Any, real: np.dtype) -> Any:
    """The engine's tolerance of each of ``z``'s values, in float64."""
    rtol, atol = tolerance(real)
    return atol + rtol * jnp.abs(z).astype(np.float64)


def _flips(jnp: Any, c: Any, p: Any, real: np.dtype) -> Any:
    """Where the candidate ``c`` could be NumPy's pick in place of XLA's ``p`` and differs
    from it beyond ``p``'s tolerance."""
    c = c.astype(np.complex128)
    p = p.astype(np.complex128)
    dc, dp = _slack(jnp, c, real), _slack(jnp, p, real)
    near = jnp.abs(c.real - p.real) <= dc + dp
    return near & (jnp.abs(c - p) > dp)


def _real(result: Any) -> np.dtype:
    return np.dtype(dtype_of(result).type(0).real.dtype)


def _reduction_ok(jnp: Any, a: Any, result: Any, params: dict) -> Any:
    a = jnp.asarray(a)
    axis = params.get("axis")
    axes = tuple(range(a.ndim)) if axis is None else \
        tuple(k % a.ndim for k in (axis if isinstance(axis, (tuple, list)) else (axis,)))
    kept = tuple(1 if k in axes else n for k, n in enumerate(a.shape))
    if int(np.prod(kept)) != int(np.prod(jnp.shape(result))):
        return None  # a form this check does not know (out=...): left as it was
    p = jnp.reshape(result, kept)
    bad = _flips(jnp, a, p, _real(result))
    where = params.get("where")
    if where is not None and where is not True:
        bad = bad & jnp.asarray(where, bool)
    return ~jnp.any(bad, axis=axes).reshape(jnp.shape(result)) if jnp.ndim(result) \
        else ~jnp.any(bad)


def _elementwise_ok(jnp: Any, a: Any, b: Any, result: Any) -> Any:
    real = _real(result)
    shape = jnp.shape(result)
    a = jnp.broadcast_to(jnp.asarray(a), shape)
    b = jnp.broadcast_to(jnp.asarray(b), shape)
    return ~(_flips(jnp, a, result, real) | _flips(jnp, b, result, real))


def _sort_ok(jnp: Any, result: Any, axis: Any) -> Any:
    if axis is None:
        result = jnp.ravel(result)
        axis = 0
    n = jnp.shape(result)[axis]
    if n < 2:
        return None
    first = jnp.take(result, jnp.arange(n - 1), axis=axis)
    second = jnp.take(result, jnp.arange(1, n), axis=axis)
    return ~_flips(jnp, first, second, _real(result))
