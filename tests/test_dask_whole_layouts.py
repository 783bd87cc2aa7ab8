"""Issue 25 on Dask: an op of the ``whole`` kind (NumPy's function on its operands gathered into
one block) gets each operand laid out in memory as NumPy's was. NumPy's loops follow the layout,
and a block gathered from chunks is C-ordered: ``np.vecmat`` of an F-ordered matrix of values
near 1e307 is NaN in NumPy and ``inf`` on a C-ordered copy, which a replay in chunks of 2 gave,
silently (W=25h's dask2 row: ``np.vecmat-133[float64,extreme,own,strided]``)."""

from __future__ import annotations

import numpy as np
import pytest

import capviz as cv

pytest.importorskip("dask")

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

X = np.array([-1.5937079612703299e+307, 2.6626481033675844e-308, 8.2422819073259825e+306,
              -2.5292385390693368e-307])
A = np.asfortranarray(np.array([
    [-5.7365039588910982e+307, 5.3294209435007094e+305, 3.8477847775829964e+307,
     3.8595960523177348e-307],
    [-4.8872432312035621e+307, 2.0777781273527183e-308, -2.4611532607923302e-307,
     8.1268281927231601e-308],
    [-2.2980480607388618e+306, 5.5186987540979072e+307, -3.5406146958803276e+307,
     -9.2341922472312035e+307],
    [-1.7905961727987410e+307, 4.3868270424774653e+307, 6.1376773627174564e-308,
     -8.8159332697995178e+305]]))


def _on_dask(fn, arrays, chunks):
    graph = cv.capture(fn, *[cv.spec(a.shape, a.dtype) for a in arrays])
    feed = dict(zip(graph.inputs, arrays))
    return graph.replay(feed, backend="dask", chunks=chunks)[graph.outputs[0]]


@pytest.mark.parametrize("chunks", [2, "auto"])
def test_a_vecmat_of_an_f_ordered_matrix_is_numpys_over_several_chunks(chunks):
    with np.errstate(all="ignore"):
        want = np.vecmat(X, A)
        assert not np.array_equal(np.vecmat(X, np.ascontiguousarray(A)), want, equal_nan=True)
    got = _on_dask(np.vecmat, [X, A], chunks)
    assert np.array_equal(got, want, equal_nan=True)


@pytest.mark.parametrize("fn", [
    lambda x, a: np.vecmat(x, a.T.T), lambda x, a: np.matvec(a.T, x),
    lambda x, a: np.inner(x, a.T), lambda x, a: np.vecmat(x, a.copy()),
    lambda x, a: np.vecmat(x, np.copy(a)),
], ids=["vecmat of the input", "matvec of a transpose", "inner", "vecmat of a.copy()",
        "vecmat of np.copy"])
def test_a_whole_op_follows_the_layout_numpy_gives_its_operand(fn):
    with np.errstate(all="ignore"):
        want = fn(X, A)
    got = _on_dask(fn, [X, A], 2)
    assert np.array_equal(got, want, equal_nan=True)
