"""Running a case on eager NumPy and on each backend, and the class of each outcome."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

import capviz as cv
from capviz.backends import registry
from capviz.core.errors import CapvizError, ShapeError

CLASSES = ("exact", "tolerance", "refused", "numpy_error", "raw_error", "silent",
           "eager_timeout", "eager_crash")
"""exact; within the engine's declared tolerance (or an integer output the replay declares
inexact, with ``cv.InexactResultWarning``; a zero of the other sign is never within it);
refused by name (a capviz error); NumPy's own error where eager NumPy raises; a raw error (an
exception that is not capviz's, an engine's error wrapped where NumPy computes, a shape rule
refusing what NumPy computes); a silent difference (these two must stay empty); eager NumPy
itself past the time limit, or its worker process dead (:mod:`.worker`: the case is not
replayed, and is listed)."""

BAD = ("raw_error", "silent")


def results(value: Any) -> list:
    """The arrays of a result, nested tuples and lists flattened in order."""
    if isinstance(value, (tuple, list)):
        return [array for item in value for array in results(item)]
    return [value]


def eager(fn: Any, arrays: Sequence[np.ndarray]) -> tuple[list | None, BaseException | None]:
    """Eager NumPy's results of ``fn`` (on copies of the inputs), or its exception."""
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = fn(*[a.copy(order="K") for a in arrays])
            return [np.asarray(r).copy() for r in results(out)], None
    except Exception as err:  # classified against the replay's outcome
        return None, err


def shifted(a: np.ndarray, k: int) -> np.ndarray:
    """``a``'s values, in its memory order, in a buffer ``k`` elements further on: NumPy's SIMD
    loops may give another last bit for another alignment (a complex64 product), so eager
    NumPy itself has several answers for some calls."""
    order = "F" if a.ndim > 1 and a.flags.f_contiguous and not a.flags.c_contiguous else "C"
    buffer = np.empty(a.size + k, a.dtype)
    out = buffer[k:].reshape(a.shape, order=order)
    out[...] = a
    return out


def eager_answers(fn: Any, arrays: Sequence[np.ndarray], shifts: int = 3) -> list[list]:
    """Eager NumPy's results of ``fn`` on the inputs moved by 1, 2... elements in memory."""
    answers = []
    for k in range(1, shifts + 1):
        want, _ = eager(fn, [shifted(a, k) for a in arrays])
        if want is not None:
            answers.append(want)
    return answers


def capture(fn: Any, arrays: Sequence[np.ndarray]) -> Any:
    """The graph of ``fn`` on inputs shaped like ``arrays``, or the capture's exception."""
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return cv.capture(fn, *[cv.spec(a.shape, a.dtype) for a in arrays])
    except Exception as err:  # classified against eager NumPy's outcome
        return err


def replay(graph: Any, arrays: Sequence[np.ndarray], backend: str,
           **options: Any) -> tuple[list | None, BaseException | None]:
    """The replay's outputs on ``backend`` with its ``options`` (Dask: ``chunks=``), as NumPy
    arrays, or its exception."""
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = graph.replay(dict(zip(graph.inputs, arrays)), backend=backend,
                               to_numpy=True, **options)
    except Exception as err:  # classified against eager NumPy's outcome
        return None, err
    return [np.asarray(got[k]) for k in graph.outputs], None


def _deliberate(err: BaseException) -> bool:
    """A capviz error that is capviz's own decision (a refusal, a value check, a type check),
    not an engine's or NumPy's exception passed on inside a ReplayError."""
    if not isinstance(err, CapvizError):
        return False
    cause = err.__cause__
    return (cause is None or isinstance(cause, (CapvizError, NotImplementedError))
            or "backend='numpy'" in str(cause))


def _same_error(err: BaseException, expected: BaseException) -> bool:
    """``err`` is NumPy's exception type (itself, a capviz subclass of it, or the cause a
    ReplayError names)."""
    kind = type(expected)
    return isinstance(err, kind) or isinstance(err.__cause__, kind)


def _exact(got: np.ndarray, want: np.ndarray) -> bool:
    """The same values bit for bit, NaNs compared as NaNs (their payloads are the platform's)."""
    if np.ascontiguousarray(got).tobytes() == np.ascontiguousarray(want).tobytes():
        return True
    if want.dtype.kind not in "fc":
        return False
    parts = (np.real, np.imag) if want.dtype.kind == "c" else (np.asarray,)
    for part in parts:
        g, w = part(got), part(want)
        nan = np.isnan(w)
        if not np.array_equal(nan, np.isnan(g)):
            return False
        if not np.array_equal(g[~nan], w[~nan]) or not np.array_equal(
                np.signbit(g[~nan]), np.signbit(w[~nan])):
            return False
    return True


def _within(got: np.ndarray, want: np.ndarray, backend: registry.Backend) -> bool:
    """Within the backend's declared tolerance for the result's dtype (floats only), and no
    zero of the other sign (:func:`zero_signs_differ`)."""
    if backend.exact or want.dtype.kind not in "fc":
        return False
    rtol, atol = backend.tolerance_for(want.dtype)
    with np.errstate(all="ignore"):
        return bool(np.allclose(got, want, rtol=rtol, atol=atol, equal_nan=True)) \
            and not zero_signs_differ(got, want)


def zero_signs_differ(got: np.ndarray, want: np.ndarray) -> bool:
    """Whether an element (a part of a complex one) is a zero in both with another sign:
    ``-0.0`` against ``+0.0`` is no rounding but a difference (``1 / x`` is ``-inf`` against
    ``inf``), which no tolerance covers. Where eager NumPy itself gives either sign (another
    alignment in memory of the same values: :func:`eager_answers`), the harness counts the
    replay exact by that answer; NumPy's documentation promises no sign of zero otherwise."""
    parts = (np.real, np.imag) if want.dtype.kind == "c" else (np.asarray,)
    for part in parts:
        g, w = np.asarray(part(got)), np.asarray(part(want))
        zero = (g == 0) & (w == 0)
        if np.any(np.signbit(g[zero]) != np.signbit(w[zero])):
            return True
    return False


def declared_inexact(graph: Any, backend: registry.Backend) -> set[int]:
    """The positions of the outputs the replay declares inexact on ``backend`` (integers or
    booleans computed from floats the engine rounds otherwise: the replay warns,
    ``cv.InexactResultWarning``)."""
    try:
        from capviz.replay.exactness import inexact_integer_outputs
    except ImportError:  # a capviz before per-node exactness (a "before" run): none declared
        return set()
    names = {out.index for out, _ in inexact_integer_outputs(graph, backend)}
    return {k for k, node in enumerate(graph.output_nodes) if node.index in names}


def contraction_limits(graph: Any, arrays: Sequence[np.ndarray], kept_adds: bool = False
                       ) -> dict[int, np.ndarray]:
    """The declared componentwise bound of each output that is a contraction of linear algebra
    (``matmul``, ``dot``, ``einsum`` of two operands...: ``2 * gamma_k * (|A| @ |B|)``,
    :mod:`capviz.backends.contraction_bound`), by output position: NumPy's result is its BLAS's
    order, so an engine's is held to the bound every order meets, not to the flat tolerance.
    ``|A| @ |B|`` is computed by NumPy from the operands' values (a NumPy replay keeping them).
    With ``kept_adds`` (the JAX rows), also an output adding a value to a contraction's that
    keeps it (``x @ w + b``: :func:`_kept_add_limit`)."""
    try:
        from capviz.backends import contraction_bound
        from capviz.replay.stepper import Executor
    except ImportError:  # a capviz before the declared bound (a "before" run): none
        return {}
    made = {k: out.args[0] for k, out in enumerate(graph.output_nodes)
            if contraction_bound.is_contraction_node(out.args[0])}
    added = {k: out.args[0] for k, out in enumerate(graph.output_nodes)
             if kept_adds and k not in made and _kept_add(out.args[0])}
    if not made and not added:
        return {}
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ex = Executor(graph, dict(zip(graph.inputs, arrays)), backend="numpy", keep=True)
            ex.run()
    except Exception:  # the NumPy replay failed: no bound (the flat tolerance)
        return {}
    limits = {}
    for k, node in made.items():
        operands = [np.asarray(ex.values[a]) for a in node.args if hasattr(a, "kind")]
        limit = contraction_bound.bound(node.op, operands, node.params, node.dtype)
        if limit is not None:
            limits[k] = limit
    for k, node in added.items():  # x @ w + b, an output
        limit = _kept_add_limit(node, ex.values)
        if limit is not None:
            limits[k] = limit
    return limits


KEPT = 0.5
"""The share of a contraction's value an add keeps for the JAX replay to hold the result to
the contraction's declared bound instead of testing it (``DECLARED_KEPT`` of
``capviz/backends/jax/carried.py``: ``x @ w + b`` is declared as the product is where the add
does not cancel it, the lead's ruling of stop 38)."""


def _kept_add(node: Any) -> bool:
    """Whether ``node`` adds a value to a contraction's (``x @ w + b``): one operand a
    contraction of linear algebra, the other anything not computed from it."""
    from capviz.backends import contraction_bound

    if getattr(node, "kind", None) != "op" or node.op not in ("add", "subtract"):
        return False
    products = [a for a in node.args if hasattr(a, "kind")
                and contraction_bound.is_contraction_node(a)]
    return len(products) == 1 and len([a for a in node.args if hasattr(a, "kind")]) <= 2


def _kept_add_limit(node: Any, values: Any) -> np.ndarray | None:
    """The declared bound of ``x @ w + b`` (an output): the product's declared bound plus two
    roundings of the result, where the add keeps :data:`KEPT` of the product's value (as the
    replay decides, from NumPy's values here), and 0 elsewhere (the flat tolerance alone:
    there the replay tests the add)."""
    from capviz.backends import contraction_bound

    product = next(a for a in node.args if hasattr(a, "kind")
                   and contraction_bound.is_contraction_node(a))
    operands = [np.asarray(values[a]) for a in product.args if hasattr(a, "kind")]
    limit = contraction_bound.bound(product.op, operands, product.params, product.dtype)
    dtype = np.dtype(node.dtype)
    if limit is None or dtype.kind != "f":
        return None
    value = np.abs(np.asarray(values[product], np.float64))
    result = np.abs(np.asarray(values[node], np.float64))
    if limit.shape != result.shape:
        limit = np.broadcast_to(limit, np.broadcast_shapes(limit.shape, result.shape))
    eps = float(np.finfo(dtype).eps)
    kept = result >= KEPT * np.broadcast_to(value, result.shape)
    return np.where(kept, limit + 2 * eps * result, 0.0)


def _within_bound(got: np.ndarray, want: np.ndarray, limit: np.ndarray) -> bool:
    from capviz.backends import contraction_bound

    return not bool(contraction_bound.outside(got, want, limit).any()) \
        and not zero_signs_differ(got, want)


def compare(got: list, want: list, backend: registry.Backend,
            declared: set[int] = frozenset(), limits: dict | None = None) -> str:
    """The class of a replay's outputs against eager NumPy's: exact, tolerance (a float within
    the backend's tolerance, a contraction within its declared bound, ``limits`` of
    :func:`contraction_limits`, or a ``declared`` inexact integer output) or silent."""
    if len(got) != len(want):
        return "silent"
    verdict = "exact"
    for k, (g, w) in enumerate(zip(got, want)):
        if g.dtype != w.dtype or g.shape != w.shape:
            return "silent"
        if _exact(g, w):
            continue
        limit = (limits or {}).get(k)
        within = _within(g, w, backend)  # the tolerance every op is held to, and for a
        if not within and limit is not None and not backend.exact:  # contraction its bound
            within = _within_bound(g, w, limit)  # (its operands' own errors are not in it)
        if not (within or k in declared):
            return "silent"
        verdict = "tolerance"
    return verdict


def difference(got: list, want: list) -> str:
    """Where a silent replay first differs from eager NumPy: the output, and its shape, dtype
    or first element that is not the same (what ``--show silent`` lists)."""
    if len(got) != len(want):
        return f"{len(got)} outputs, NumPy {len(want)}"
    for k, (g, w) in enumerate(zip(got, want)):
        if g.shape != w.shape or g.dtype != w.dtype:
            return f"output {k}: {g.dtype}{list(g.shape)}, NumPy {w.dtype}{list(w.shape)}"
        if _exact(g, w):
            continue
        for index in np.ndindex(w.shape):
            if not _exact(np.asarray(g[index]), np.asarray(w[index])):
                return f"output {k} at {list(index)}: {g[index]!r}, NumPy {w[index]!r}"
    return ""


def classify(want: list | None, eager_error: BaseException | None, got: list | None,
             error: BaseException | None, backend: registry.Backend,
             declared: set[int] = frozenset(), limits: dict | None = None) -> str:
    """The class of one outcome (see :data:`CLASSES`)."""
    if eager_error is not None:
        if error is None:
            return "silent"  # computed where NumPy raises
        if _same_error(error, eager_error):
            return "numpy_error"
        return "refused" if _deliberate(error) else "raw_error"
    if error is not None:
        if isinstance(error, ShapeError) or not _deliberate(error):
            return "raw_error"  # NumPy computes this
        return "refused"
    return compare(got, want, backend, declared, limits)
