"""A list (or tuple) holding capture tensors written into an array, as public NumPy code writes a
row: ``samples[i] = [self.x, self.y]`` (a Gibbs sampler's chain), ``traj[k] = (x, v)``. NumPy
converts the list with the destination's dtype (``np.asarray(seq, dtype=a.dtype)``), item by
item. Found by census round 2 (stop 36, tests/test_public_simulations.py's Gibbs sampler):

- into a buffer the capture made (``np.empty``/``np.zeros``: a tensor), it was refused as a
  DataReadError telling the user to take ``cv.constant`` of that buffer, which is a tensor
  already; it is recorded as NumPy's array of the list (:func:`capviz.trace.conversions.convert`)
  and replays bit for bit;
- into an ndarray from outside, the capture raised NumPy's raw ``ValueError`` ("setting an
  array element with a sequence"), where the eager call runs; it is refused at the line with
  the fix that applies (one array: ``np.array([...], dtype=OUT.dtype)``), which replays as
  eager.
"""

import numpy as np
import pytest

import capviz as cv
from tests.helpers.public_census import Program, line_of, run

XS = [np.random.default_rng(k).standard_normal(3) for k in range(3)]
OUT = np.zeros((2, 3))
OUT32 = np.zeros((2, 3), np.float32)


def rows_list_and_tuple(x):
    s = np.empty((2, 2))
    s[0] = [x[0], x[1]]
    s[1] = (x.sum(), 1.0)
    return s


def float32_buffer_float64_items(x):
    s = np.zeros((2, 2), np.float32)
    s[0] = [x[0], x[1]]
    s[1, :] = [x[2], 7]
    return s


def int64_buffer_float_items(x):
    s = np.zeros((2, 2), np.int64)
    s[0] = [x[0] * 10, x[1] * 10]
    return s


def fancy_rows_nested_list(x):
    s = np.zeros((3, 2))
    s[[0, 2]] = [[x[0], x[1]], [x[2], 0.5]]
    return s


def one_list_into_every_row(x):
    s = np.zeros((2, 2))
    s[:] = [x[0], x[1]]
    return s


INSIDE = [rows_list_and_tuple, float32_buffer_float64_items, int64_buffer_float_items,
          fancy_rows_nested_list, one_list_into_every_row]


@pytest.mark.parametrize("fn", INSIDE, ids=[fn.__name__ for fn in INSIDE])
def test_a_list_of_tensors_written_into_a_buffer_made_inside_replays_as_eager(fn):
    """Refused on main before (DataReadError "stores the tensor ... into the ndarray")."""
    verdict = run(lambda: Program(fn, [[x] for x in XS]))
    assert verdict.kind == "exact", (verdict.detail, verdict.first_line)


def gibbs_means(mu, n=4):
    """The census's Gibbs sampler with its quoted fix applied (standard draws transformed), the
    chain kept in locals."""
    x = y = 0.0
    samples = np.empty((n, 2))
    for i in range(n):
        x = mu[0] + 0.8 * (y - mu[1]) + 0.6 * np.random.standard_normal()
        y = mu[1] + 0.8 * (x - mu[0]) + 0.6 * np.random.standard_normal()
        samples[i] = [x, y]
    return samples.mean(axis=0)


def test_the_gibbs_row_of_two_draws_replays_as_eager():
    verdict = run(lambda: Program(gibbs_means, [[x[:2]] for x in XS]))
    assert verdict.kind == "exact", (verdict.detail, verdict.first_line)
    assert [n.name for n in verdict.graph.state_nodes] == ["np.random"]


def row_into_an_outside_array(x):
    OUT[0] = [x[0], x[1], x[2]]
    return x * 1.0


def tuple_into_an_outside_float32_row(x):
    OUT32[1, :2] = x[0] * 2, 7
    return x * 1.0


@pytest.mark.parametrize("fn, code, target, items, dtype", [
    (row_into_an_outside_array, "OUT[0] = [x[0], x[1], x[2]]", "OUT[0]", "[x[0], x[1], x[2]]",
     "OUT"),
    (tuple_into_an_outside_float32_row, "OUT32[1, :2] = x[0] * 2, 7", "OUT32[1, :2]",
     "[x[0] * 2, 7]", "OUT32"),
])
def test_a_list_of_tensors_written_into_an_outside_array_is_refused_with_the_fix(
        fn, code, target, items, dtype):
    """A raw ValueError from NumPy at the capture before, where the eager call runs."""
    with pytest.raises(cv.UnsupportedOperationError) as info:
        cv.capture(fn, cv.spec((3,), np.float64))
    what, why, fix = str(info.value).splitlines()
    assert what == (f"`{code}` at {__file__}:{line_of(__file__, code)} in {fn.__name__}: "
                    f"{target} = [<tensors>] is not supported by capviz.")
    assert why == ("capviz cannot record it: NumPy converts each item of the list on its own, "
                   "which capviz cannot write as one value.")
    assert fix == (f"Fix: make the list one array: {target} = np.array({items}, "
                   f"dtype={dtype}.dtype).")


def fixed_row(x):
    OUT[0] = np.array([x[0], x[1], x[2]], dtype=OUT.dtype)
    return x * 1.0


def fixed_float32_row(x):
    OUT32[1, :2] = np.array([x[0] * 2, 7], dtype=OUT32.dtype)
    return x * 1.0


@pytest.mark.parametrize("fn", [fixed_row, fixed_float32_row], ids=["float64", "float32"])
def test_the_quoted_fix_replays_as_eager(fn):
    def setup():
        OUT[...] = 0
        OUT32[...] = 0
        return Program(fn, [[x] for x in XS], lambda: {"OUT": OUT, "OUT32": OUT32})

    verdict = run(setup)
    assert verdict.kind == "exact", (verdict.detail, verdict.first_line)


# A list holding tensors as an item NumPy joins (np.concatenate converts each item with
# np.asarray): `np.concatenate([[context], negatives])` in word2vec was refused as a read of
# the value ("return the tensor from the captured function"); it is NumPy's array of the list.

XI = [np.array([3, 1, 4, 1]), np.array([5, 9, 2, 6]), np.array([5, 3, 5, 8])]
XF = [np.linspace(-1, 1, 4).astype(np.float32) * (k + 1) for k in range(3)]

JOINS = {
    "concatenate, an int label": (lambda x: np.concatenate([[x[0]], x[1:]]), XI),
    "concatenate, a label and a number": (lambda x: np.concatenate([[x[0], 7], x]), XI),
    "concatenate, float32 and a Python float": (lambda x: np.concatenate([[x[0], 1.5], x]), XF),
    "concatenate, a tuple": (lambda x: np.concatenate([x, (x[1] * 2,)]), XF),
    "stack": (lambda x: np.stack([[x[0], x[1]], x[:2]]), XF),
    "hstack": (lambda x: np.hstack([x, [x.sum()]]), XF),
    "vstack": (lambda x: np.vstack([x, [x[0]] * 4]), XI),
}


@pytest.mark.parametrize("spelling", JOINS)
def test_a_list_of_tensors_joined_replays_as_eager(spelling):
    """Refused on main before, each (DataReadError: np.asarray() reads the value)."""
    fn, xs = JOINS[spelling]
    verdict = run(lambda: Program(fn, [[x] for x in xs]))
    assert verdict.kind == "exact", (verdict.detail, verdict.first_line)
