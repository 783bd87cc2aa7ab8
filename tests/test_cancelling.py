"""The graph analysis of capviz/backends/cancelling.py: which sums reach a cancelling add or
subtract (the hostile review 3, finding 8), read on captured graphs."""

from __future__ import annotations

import numpy as np
import pytest

import capviz as cv
from capviz.backends import cancelling

SUMS = frozenset(("sum", "mean", "nansum", "nanmean", "cumsum"))
X = np.ones((4, 8), dtype=np.float32)


def _reaches(fn, x=X):
    graph = cv.capture(fn, x)
    return graph, cancelling.reaches(graph.nodes, SUMS)


def _only(found):
    assert len(found) == 1
    (each,) = found.values()
    assert len(each) == 1
    return each[0]


@pytest.mark.parametrize(("fn", "factor", "path"), [
    (lambda x: x - x.mean(-1, keepdims=True), 1.0, []),
    (lambda x: x - np.mean(x, axis=-1)[:, None], 1.0, ["getitem"]),
    (lambda x: x - x.sum(-1, keepdims=True) / 8, 1 / 8, ["divide"]),
    (lambda x: x - x.mean(-1).reshape(4, 1), 1.0, ["reshape"]),
    (lambda x: -x.mean(-1, keepdims=True) + x, -1.0, ["negative"]),
    (lambda x: x - np.broadcast_to(x.mean(-1, keepdims=True), x.shape), 1.0, ["broadcast_to"]),
    (lambda x: x - x.mean(), 1.0, []),
    (lambda x: x - (x.sum(-1, keepdims=True) * 0.5).astype(np.float64), 0.5,
     ["multiply", "astype"]),
])
def test_centrings_are_found_with_their_factor_and_path(fn, factor, path):
    graph, found = _reaches(fn)
    reach = _only(found)
    assert reach.sum.op in ("sum", "mean")
    assert reach.consumer.op in ("add", "subtract")
    assert reach.centring
    assert reach.factor == pytest.approx(factor)
    assert [n.op for n in reach.path] == path
    assert reach.other is graph.nodes[0]
    assert cancelling.cancelling(graph.nodes, SUMS) == frozenset({reach.sum.index})


def test_a_difference_of_two_sums_reports_both_to_the_one_subtract():
    _, found = _reaches(lambda x: x.sum(-1) - x[:, :4].sum(-1) * 2)
    assert len(found) == 2
    first, second = (each[0] for _, each in sorted(found.items()))
    assert first.consumer is second.consumer
    assert (first.position, second.position) == (0, 1)
    assert [n.op for n in second.path] == ["multiply"] and second.factor == 2.0
    assert not first.centring and not second.centring
    by = cancelling.consumers(found)
    assert list(by) == [first.consumer.index] and len(by[first.consumer.index]) == 2
    assert cancelling.on_paths(found) == frozenset({second.path[0].index})


def test_a_tensor_scale_passes_the_value_on_with_no_factor():
    w = np.full((4, 1), 2.0, dtype=np.float32)
    _, found = _reaches(lambda x: x - x.mean(-1, keepdims=True) * w)
    reach = _only(found)
    assert reach.factor is None and not reach.centring
    assert [n.op for n in reach.path] == ["multiply"]


def test_a_sum_subtracted_from_another_tensor_is_no_centring():
    y = np.arange(8, dtype=np.float32)
    _, found = _reaches(lambda x: y - x.sum(0))
    reach = _only(found)
    assert not reach.centring and reach.position == 1 and reach.factor == 1.0


def test_layer_norm_reports_its_mean_only():
    def layer_norm(x):
        mean = np.mean(x, axis=-1, keepdims=True)
        variance = np.var(x, axis=-1, keepdims=True)
        return (x - mean) / np.sqrt(variance + 1e-5) * 2.0 + 0.5
    _, found = _reaches(layer_norm)
    reach = _only(found)
    assert reach.sum.op == "mean" and reach.centring and reach.path == ()


@pytest.mark.parametrize("fn", [
    lambda x: np.exp(x) / np.exp(x).sum(-1, keepdims=True),   # softmax: the divisor
    lambda x: np.sqrt(x.sum(-1)) - 1.0,                       # through sqrt: not this class
    lambda x: x.sum(-1) + 0.0,                                # adding 0 cancels nothing
    lambda x: x.sum(-1) + x.sum(-1),                          # s + s
    lambda x: x.sum(-1) * x.sum(-1),                          # no add or subtract
    lambda x: (x.max(-1) - x.min(-1)),                        # not sums
    lambda x: x.sum(-1).astype(np.int64) - 3,                 # an integer cast stops it
])
def test_sums_that_reach_no_cancelling_add_or_subtract_are_not_reported(fn):
    _, found = _reaches(fn)
    assert found == {}


def test_a_sum_after_a_centring_reports_the_inner_sum_only():
    _, found = _reaches(lambda x: (x - x.mean()).sum())
    reach = _only(found)
    assert reach.sum.op == "mean" and reach.sum.params["axis"] is None


def test_integer_sums_are_left_out():
    xi = np.ones((4, 8), dtype=np.int64)
    _, found = _reaches(lambda x: x - x.sum(-1, keepdims=True), xi)
    assert found == {}


def test_the_names_given_are_the_sums_followed():
    graph = cv.capture(lambda x: x - x.mean(-1, keepdims=True), X)
    assert cancelling.reaches(graph.nodes, frozenset(("sum",))) == {}
