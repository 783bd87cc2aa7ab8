"""Issue 25 on JAX, the hostile review 13, finding 4 (stop 41): functions XLA approximates that
``carried_sources.APPROXIMATED`` did not list (``np.hypot``, ``np.arctan2``, ``np.i0``,
``np.rad2deg``/``np.degrees`` and ``np.sinc`` in float32, ``np.logaddexp``, ``np.logaddexp2``).
Their value reached a cancelling subtract with no bound carried, and ``np.hypot(a, b) - R`` of
float32 points near 2e4 (distance to a circle) replayed 0.00195 off NumPy's 0, 19 times the
tolerance, silently. Every elementwise float function of the op table computed by the JAX
backend's own binding is either NumPy's bits on a sample or listed; a listed one reaching a
subtract that cancels it fails there, with the user's line."""

from __future__ import annotations

import numpy as np
import pytest

import capviz as cv
from capviz import ops
from capviz.backends.jax import carried_sources
from capviz.backends.jax.backend import x64

jax = pytest.importorskip("jax")
jnp = jax.numpy

_ONE = sorted({n for n in dir(np) if isinstance(getattr(np, n), np.ufunc)
               and getattr(np, n).nin == 1 and getattr(np, n).nout == 1 and n in ops.OPS}
              | {"i0", "sinc", "degrees", "radians"})
_TWO = sorted(n for n in dir(np) if isinstance(getattr(np, n), np.ufunc)
              and getattr(np, n).nin == 2 and getattr(np, n).nout == 1 and n in ops.OPS)
_RANGES = ((-10, 10), (1e-3, 1e3), (-1e4, 1e4), (0.5, 2))


def _differs(name: str, nin: int, dtype: type) -> bool:
    """Whether the JAX binding of ``name`` gives another float than NumPy's for a normal
    result on 4 x 4,000 values (False where it takes no such operands)."""
    rng = np.random.default_rng(3)
    try:
        fn = jax.jit(ops.OPS[name].bind(jnp))
    except cv.UnsupportedOperationError:  # refused by name on JAX (isnat)
        return False
    for lo, hi in _RANGES:
        args = [rng.uniform(lo, hi, 4000).astype(dtype) for _ in range(nin)]
        with np.errstate(all="ignore"):
            try:
                eager = getattr(np, name)(*args)
            except TypeError:
                return False
        if eager.dtype != dtype:
            return False
        with x64():
            got = np.asarray(fn(*args))
        normal = np.isfinite(eager) & (np.abs(eager) >= np.finfo(dtype).tiny)
        if np.any(normal & (got != eager)):
            return True
    return False


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_every_elementwise_function_xla_computes_otherwise_is_listed(dtype):
    missing = []
    for names, nin in ((_ONE, 1), (_TWO, 2)):
        for name in names:
            if name in ("matmul", "vecdot", "vecmat", "matvec"):  # contractions: declared
                continue
            if _differs(name, nin, dtype):
                listed = name in carried_sources.APPROXIMATED and (
                    name not in carried_sources.FLOAT32_ONLY or dtype != np.float64)
                if not listed:
                    missing.append(name)
    assert missing == []


def test_the_float32_only_functions_are_numpy_s_bits_in_float64():
    # where carried_sources.approximated leaves them out (no bound carried)
    for name in sorted(carried_sources.FLOAT32_ONLY):
        assert not _differs(name, 1, np.float64), name
        assert _differs(name, 1, np.float32), name


def _replay(fn, *args):
    graph = cv.capture(fn, *args)
    return graph.replay(dict(zip(graph.inputs, args)), backend="jax", to_numpy=True)["out"]


def _circle():
    r = np.random.default_rng(0)
    a, b = r.uniform(1e4, 2e4, (2, 4096)).astype(np.float32)
    return a, b, np.hypot(a, b)


def _degrees():
    return (np.random.default_rng(1).uniform(1e3, 2e3, 4096).astype(np.float32),)


def _bessel():
    u = np.random.default_rng(2).uniform(7, 9, 4096).astype(np.float32)
    return u, (u + np.float32(1e-4)).astype(np.float32)


def _log_sums():
    r = np.random.default_rng(3)
    p = r.uniform(-2000, -1000, 4096).astype(np.float32)
    q = (p + r.uniform(-2, 2, 4096)).astype(np.float32)
    return p, q, np.logaddexp2(p, q)


@pytest.mark.parametrize("name, make, fn, jfn", [
    ("hypot", _circle, lambda a, b, R: np.hypot(a, b) - R,
     lambda a, b, R: jnp.hypot(a, b) - R),
    ("rad2deg", _degrees, lambda t: np.rad2deg(t) - np.float32(57.29578) * t,
     lambda t: jnp.rad2deg(t) - np.float32(57.29578) * t),
    ("i0", _bessel, lambda u, v: np.i0(u) - np.i0(v), lambda u, v: jnp.i0(u) - jnp.i0(v)),
    ("logaddexp2", _log_sums, lambda p, q, L: np.logaddexp2(p, q) - L,
     lambda p, q, L: jnp.logaddexp2(p, q) - L),
])
def test_an_unlisted_function_cancelled_by_a_subtract_fails_there(name, make, fn, jfn):
    args = make()
    # the premise: XLA's value of the difference is beyond the tolerance of NumPy's
    eager = fn(*args)
    with x64():
        got = np.asarray(jax.jit(jfn)(*args))
    assert np.max(np.abs(got - eager) - (1e-4 + 1e-4 * np.abs(eager))) > 0
    with pytest.raises(cv.ReplayError) as info:
        _replay(fn, *args)
    message = str(info.value)
    assert "(subtract), recorded at " + __file__ in message
    assert f"computed by XLA's own np.{name} (within" in message
    assert "backend='numpy'" in message
