"""The JAX replay's fast program poisons instead of reducing (issue 22): a value whose
subnormal check fails becomes NaN, which every op of ``poison.PROPAGATES`` carries to the
outputs, where a NaN reruns the precise program that fails at the node. Every op of the list is
verified here on jax; every op outside it tests a poisoned operand before it runs; a NaN of the
user's reruns the precise program and replays as NumPy."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import capviz as cv
from capviz.backends import registry
from capviz.backends.jax import poison

pytest.importorskip("jax")

C = np.linspace(0.25, 0.75, 16, dtype=np.float32).reshape(4, 4)
SELECT = np.zeros((4, 4), bool)
SELECT[1, 2] = True
V = np.linspace(0.2, 0.8, 4, dtype=np.float32)


def _both(f):
    return [lambda x: f(x, C), lambda x: f(C, x)]


def _unary(name):
    return [lambda x, f=getattr(np, name): f(x)]


def _reduced(name):
    return [lambda x, f=getattr(np, name): f(x, axis=1), lambda x, f=getattr(np, name): f(x)]


def _setitem(x):
    y = x * 0.5
    y[0, 0] = 0.5
    return y


def _index_put(x):
    y = x * 0.5
    y[np.argsort(x[0])[:2]] = x[1:3]
    return y


EXAMPLES = {
    **{name: _both(getattr(np, name)) for name in (
        "add", "subtract", "multiply", "divide", "maximum", "minimum", "arctan2", "logaddexp",
        "logaddexp2")},
    "clip": [lambda x: np.clip(x, 0.3, 0.6), lambda x: np.clip(C, x, 0.9),
             lambda x: np.clip(C, 0.1, x)],
    **{name: _unary(name) for name in (
        "negative", "positive", "absolute", "fabs", "sign", "sqrt", "cbrt", "square",
        "reciprocal", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sin", "cos",
        "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "arcsinh", "arctanh",
        "deg2rad", "rad2deg", "degrees", "radians", "floor", "ceil", "trunc", "rint", "round",
        "copy", "real", "conjugate", "atleast_1d", "atleast_2d", "atleast_3d", "flip", "fliplr",
        "flipud", "ravel", "rot90", "tril", "triu")},
    "arccosh": [lambda x: np.arccosh(x + 1.5)],
    "astype": [lambda x: x.astype(np.float64), lambda x: x.astype(np.float16)],
    "ldexp": [lambda x: np.ldexp(x, 3)],
    "power": [lambda x: x ** 3, lambda x: np.power(x, -2.0)],
    "float_power": [lambda x: np.float_power(x, 3)],
    "where": [lambda x: np.where(SELECT, x, C), lambda x: np.where(~SELECT, C, x)],
    "broadcast_arrays": [lambda x: np.broadcast_arrays(x, C)[0]],
    "broadcast_to": [lambda x: np.broadcast_to(x, (2, 4, 4))],
    "column_stack": [lambda x: np.column_stack([C, x])],
    "concatenate": [lambda x: np.concatenate([C, x])],
    "diagonal": [lambda x: np.diagonal(x, 1)],
    "dstack": [lambda x: np.dstack([x, C])],
    "expand_dims": [lambda x: np.expand_dims(x, 0)],
    "getitem": [lambda x: x[1:3, 2]],
    "hstack": [lambda x: np.hstack([C, x])],
    "vstack": [lambda x: np.vstack([C, x])],
    "stack": [lambda x: np.stack([C, x])],
    "linalg.matrix_transpose": [np.linalg.matrix_transpose],
    "matrix_transpose": [np.matrix_transpose],
    "linalg.outer": [lambda x: np.linalg.outer(x[1], V), lambda x: np.linalg.outer(V, x[1])],
    "outer": [lambda x: np.outer(x[1], V), lambda x: np.outer(V, x[1])],
    "moveaxis": [lambda x: np.moveaxis(x, 0, 1)],
    "repeat": [lambda x: np.repeat(x, 2, axis=0)],
    "reshape": [lambda x: x.reshape(2, 8)],
    "roll": [lambda x: np.roll(x, 1)],
    "rollaxis": [lambda x: np.rollaxis(x, 1)],
    "squeeze": [lambda x: np.squeeze(x[None])],
    "swapaxes": [lambda x: np.swapaxes(x, 0, 1)],
    "tile": [lambda x: np.tile(x, 2)],
    "transpose": [lambda x: x.T],
    "array_split": [lambda x: np.array_split(x, 3)[1]],
    "dsplit": [lambda x: np.dsplit(x[None], 2)[1]],
    "hsplit": [lambda x: np.hsplit(x, 2)[1]],
    "split": [lambda x: np.split(x, 2)[1]],
    "unstack": [lambda x: np.unstack(x)[1]],
    "vsplit": [lambda x: np.vsplit(x, 2)[1]],
    "index": [lambda x: x[np.argsort(x[0])]],
    "take": [lambda x: np.take(x, [6, 9])],
    "setitem": [_setitem],
    "index_put": [_index_put],
    **{name: _reduced(name) for name in (
        "sum", "mean", "var", "std", "prod", "max", "min", "cumsum", "cumprod")},
    "cumulative_sum": [lambda x: np.cumulative_sum(x, axis=1)],
    "cumulative_prod": [lambda x: np.cumulative_prod(x, axis=0)],
    "trace": [lambda x: np.trace(x, 1)],
    "diff": [lambda x: np.diff(x, axis=1)],
    "matmul": _both(np.matmul),
    "dot": _both(np.dot),
    "tensordot": _both(lambda a, b: np.tensordot(a, b, 1)),
    "linalg.tensordot": _both(lambda a, b: np.linalg.tensordot(a, b, axes=1)),
    "einsum": [lambda x: np.einsum("ij,jk->ik", x, C), lambda x: np.einsum("ij,jk->ik", C, x)],
    "vdot": _both(np.vdot),
    "inner": _both(np.inner),
    "vecdot": _both(np.vecdot),
    "linalg.vecdot": _both(np.linalg.vecdot),
    "matvec": [lambda x: np.matvec(x, V), lambda x: np.matvec(C, x[1])],
    "vecmat": [lambda x: np.vecmat(x[1], C), lambda x: np.vecmat(V, x)],
    "kron": _both(np.kron),
}
"""An example per operand position of each op said to carry a NaN (``unpack`` is the split
examples' ``[1]``)."""


def test_every_op_said_to_carry_a_nan_has_an_example():
    assert set(EXAMPLES) == (set(PROPAGATES_AND_POWERS) - {"unpack"})


PROPAGATES_AND_POWERS = {*poison.PROPAGATES, "power", "float_power"}


@pytest.mark.parametrize(("op", "k"), [(op, k) for op, fs in EXAMPLES.items()
                                       for k in range(len(fs))])
def test_every_op_said_to_carry_a_nan_carries_it_on_jax(op, k):
    # a NaN operand element: every result element NumPy computes from it is NaN on jax too
    f = EXAMPLES[op][k]
    x = np.linspace(0.1, 0.9, 16, dtype=np.float32).reshape(4, 4)
    x[1, 2] = x[2, 1] = np.nan
    graph = cv.capture(f, cv.spec(x.shape, x.dtype))
    assert op in {n.op for n in graph.ops}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # NumPy's invalid-value warnings of NaN
        want = np.isnan(np.asarray(f(x)))
        got = np.isnan(graph.replay({"x": x}, backend="jax", to_numpy=True)["out"])
    assert want.any()
    assert not (want & ~got).any(), f"{op}: NaN lost at {np.argwhere(want & ~got).tolist()}"


# --- a poisoned value reaching an op that would drop its NaN is still caught -------------------

TINY = np.array([1e-20, 1.0, 2.0, 3.0], np.float32)  # 1e-20 * 1e-20: subnormal, XLA's 0


def _guarded(a, b):
    return a + 1 if float((a * b)[0]) > 0 else a - 1


BLOCKING = {
    "greater": lambda a, b: (a * b) > 0,
    "where": lambda a, b: np.where(a * b, 1.0, 2.0),
    "argmax": lambda a, b: np.argmax((a * b)[:2]),
    "sort": lambda a, b: np.sort(a * b)[:1],
    "nanmax": lambda a, b: np.nanmax(a * b),
    "fmax": lambda a, b: np.fmax(a * b, np.float32(0.5)),
    "isnan": lambda a, b: np.isnan(a * b),
    "power": lambda a, b: (a * b) ** 0,
    "astype": lambda a, b: ((a * b)[:1] * np.float32(1e38)).astype(np.int64),
    "copysign": lambda a, b: np.copysign(np.float32(2.0), a * b),
    "hypot": lambda a, b: np.hypot(a * b, np.float32(np.inf)),
    "nan_to_num": lambda a, b: np.nan_to_num(a * b),
    "float()": _guarded,
}


@pytest.mark.parametrize("op", sorted(BLOCKING))
def test_a_poisoned_value_reaching_an_op_that_drops_nan_fails_at_its_node(op):
    graph = cv.capture(BLOCKING[op], TINY, TINY.copy())  # examples: the guard reads a value
    made = {n.op for n in graph.ops} | {n.op for n in graph.nodes if n.kind == "guard"}
    assert op in made
    assert op not in poison.PROPAGATES or op in ("where", "power", "astype")
    graph.replay({"a": TINY, "b": TINY}, backend="numpy")
    with pytest.raises(cv.ReplayError, match="multiply gave 0 where NumPy's result is a "
                                             "nonzero subnormal float") as info:
        graph.replay({"a": TINY, "b": TINY}, backend="jax")
    assert info.value.node.op == "multiply"
    assert __file__ in str(info.value)


def test_a_poisoned_value_no_output_depends_on_replays_as_numpy():
    # (a * b)[0] is flushed; the output reads only the others: NumPy's values, no rerun
    graph = cv.capture(lambda a, b: np.tanh(a * b)[1:], cv.spec(4), cv.spec(4))
    backend = registry.get("jax")
    before = backend.traces
    out = graph.replay({"a": TINY, "b": TINY}, backend="jax", to_numpy=True)["out"]
    np.testing.assert_allclose(out, np.tanh(TINY * TINY)[1:], rtol=1e-6)
    assert backend.traces == before + 1  # the fast program only


def test_a_poisoned_value_reaching_an_output_fails_at_its_node():
    graph = cv.capture(lambda a, b: np.exp(np.tanh(a * b) * 2).sum(), cv.spec(4), cv.spec(4))
    with pytest.raises(cv.ReplayError, match="multiply gave 0") as info:
        graph.replay({"a": TINY, "b": TINY}, backend="jax")
    assert info.value.node.op == "multiply"


def test_a_nan_of_the_users_reruns_the_precise_program_once_and_replays_as_numpy():
    # the fast program cannot tell the user's NaN from a poisoned one: it runs the precise
    # program, whose checks pass, and returns its values; both programs are then compiled
    graph = cv.capture(lambda a, b: np.tanh(a * b) + a, cv.spec(4), cv.spec(4))
    a = np.array([np.nan, 1.0, 2.0, 3.0], np.float32)
    backend = registry.get("jax")
    before = backend.traces
    for _ in range(2):
        out = graph.replay({"a": a, "b": a}, backend="jax", to_numpy=True)["out"]
        with np.errstate(invalid="ignore"):
            np.testing.assert_allclose(out, np.tanh(a * a) + a, rtol=1e-6)
    assert backend.traces == before + 2


def test_the_fast_program_poisons_instead_of_a_flag_per_check():
    # GELU's chain of checked products: one test of the output for NaN in the fast program,
    # a flag per checked node in the precise one
    graph = cv.capture(lambda a, b: 0.5 * (a * b) * (1 + np.tanh((a * b) ** 3 * a)),
                       cv.spec(64), cv.spec(64))
    x = np.linspace(-2, 2, 64, dtype=np.float32)
    graph.replay({"a": x, "b": x}, backend="jax")
    from capviz.backends.jax.backend import BACKEND

    compiled = BACKEND._compiled[graph.replay_cache["jax"][2]]
    # the poisoned values' test, and the carried bound of tanh at the add it reaches
    # (capviz/backends/jax/carried.py, APPROXIMATED): merged, with no node
    assert compiled.checks[False] == [(None, ""), (None, "")]
    small = x.copy()
    small[3] = 1e-20
    with pytest.raises(cv.ReplayError, match="multiply gave 0") as info:
        graph.replay({"a": small, "b": small}, backend="jax")
    assert info.value.node.index == graph.ops[0].index and graph.ops[0].op == "multiply"
    assert len([node for node, _ in compiled.checks[True] if node is not None]) >= 3


ONES = np.ones((3, 4), np.float32)
CHAINS = {
    "a comparison after a chain": lambda a, b: np.tanh(a * b) * 2 + 1 > 1,
    "a reduction of a broadcast": lambda a, b: np.sum(np.tanh(a * b) + ONES, axis=0) > 1,
    "an output read through a move": lambda a, b: (np.exp(a * b) + ONES).T[:2],
}


@pytest.mark.parametrize("name", sorted(CHAINS))
def test_a_check_carried_along_an_elementwise_chain_fails_where_it_is_read(name):
    # the select is deferred: the chain's ops and its mask, broadcast, then the first reader
    # that is not elementwise (a comparison, a sum, a transpose) or an output applies it
    graph = cv.capture(CHAINS[name], cv.spec(4), cv.spec(4))
    graph.replay({"a": TINY, "b": TINY}, backend="numpy")
    with pytest.raises(cv.ReplayError, match="multiply gave 0") as info:
        graph.replay({"a": TINY, "b": TINY}, backend="jax")
    assert info.value.node.op == "multiply"
    fine = np.array([0.5, 1.0, 2.0, 3.0], np.float32)
    np.testing.assert_allclose(graph.replay({"a": fine, "b": fine}, backend="jax",
                                            to_numpy=True)["out"],
                               CHAINS[name](fine, fine), rtol=1e-5)


@pytest.mark.parametrize("value", [complex(np.nan, 1.0), complex(1.0, np.nan)])
def test_a_nan_in_either_part_of_a_complex_value_leaving_the_program_is_tested(value):
    # review 2, finding 8: a poisoned complex value must not pass a sink untested
    import jax.numpy as jnp

    from capviz.backends.jax.trace import Trace

    trace = Trace([], precise=False, jnp=jnp)
    for dtype in (np.complex64, np.complex128):
        trace.clean(jnp.asarray(np.array([1 + 2j, value], dtype)))
        trace.clean(jnp.asarray(np.array([1 + 2j, 3 - 1j], dtype)))
    assert [bool(flag) for flag in trace.flags] == [False, True, False, True]
    assert trace.checks == [(None, "")] * 4  # flags with no node: the precise program says


def _recurrence(steps):
    def fn(th, p):  # a symplectic map, a Fibonacci-style recurrence of two values
        for _ in range(steps):
            p = p + th
            th = th + p
        return th
    return fn


@pytest.mark.parametrize("steps", [7, 20])
def test_a_recurrence_of_two_values_compiles_and_replays_as_numpy(steps):
    # each add and-ed its operands' pending masks, one of which held the other's: a mask
    # expression that doubled per step, on which XLA's CPU compiler failed from 7 steps on
    # ('Unknown MLIR failure', R13 #11); now one and per check
    rng = np.random.default_rng(1)
    th, p = rng.uniform(0, 6, 256), rng.uniform(-1, 1, 256)
    fn = _recurrence(steps)
    graph = cv.capture(fn, th, p)
    for arithmetic in ("numpy", "xla"):
        out = graph.replay({"th": th, "p": p}, backend="jax", arithmetic=arithmetic,
                           to_numpy=True)["out"]
        assert np.array_equal(out, fn(th, p))


def test_a_check_inside_a_recurrence_of_two_values_still_fails_at_its_node():
    th = np.full(4, 3e-308)
    p = np.full(4, -2.99e-308)  # p + th is a subnormal, which XLA flushes to 0
    graph = cv.capture(_recurrence(10), th, p)
    with pytest.raises(cv.ReplayError, match="add gave 0") as info:
        graph.replay({"th": th, "p": p}, backend="jax")
    assert info.value.node.index == graph.ops[0].index
