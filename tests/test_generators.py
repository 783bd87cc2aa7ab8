"""Random generators are states: a draw inside a capture is recorded from the live generator
and a replay draws from it and advances it, bit for bit with eager calls
(capviz/randomness/generators.py)."""

from __future__ import annotations

import os
import random

import numpy as np
import pytest
from numpy.random import random as uniform01  # bound before any capture: rebound for it

import capviz as cv

DATA = np.random.default_rng(77)


def same(a, b):
    assert isinstance(a, np.ndarray) and isinstance(b, np.ndarray)
    assert a.dtype == b.dtype and a.shape == b.shape, (a.dtype, b.dtype, a.shape, b.shape)
    assert np.array_equal(a, b, equal_nan=True)


def replays_as_eager(fn, *arrays, calls=3, seed=0):
    """Capture ``fn``, then ``np.random.seed(seed)`` and replay ``calls`` times against the
    same seed and ``calls`` eager calls: every output equal, dtypes included."""
    graph = cv.capture(fn, *arrays)
    names = graph.inputs
    np.random.seed(seed)
    replayed = [graph.replay(dict(zip(names, arrays))) for _ in range(calls)]
    np.random.seed(seed)
    eager = [fn(*arrays) for _ in range(calls)]
    for got, want in zip(replayed, eager):
        want = want if isinstance(want, tuple) else (want,)
        for name, value in zip(graph.outputs, want):
            same(got[name], np.asarray(value))
    return graph


# --- the idioms -------------------------------------------------------------------------------


def dropout(x, p=0.5):
    mask = np.random.rand(*x.shape) > p
    return x * mask / (1 - p)


def dropout_binomial(x, keep=0.8):
    return x * np.random.binomial(1, keep, x.shape) / keep


def test_dropout_with_np_random_replays_fresh_masks_bit_for_bit():
    x = DATA.standard_normal((4, 6)).astype(np.float32)
    graph = replays_as_eager(dropout, x)
    (state,) = graph.state_nodes
    assert (state.name, state.params) == ("np.random", {"generator": "RandomState"})
    assert "%1 = state np.random : generator" in str(graph)
    assert graph.ops[0].op == "draw" and graph.ops[0].params["method"] == "rand"
    replays_as_eager(dropout_binomial, x)


def kmeans_init(x, k=3):
    centers = x[np.random.choice(x.shape[0], k, replace=False)]
    d = ((x[:, None, :] - centers[None]) ** 2).sum(-1)
    return centers, d.argmin(axis=1)


def test_kmeans_init_with_np_random_choice_replays_bit_for_bit():
    replays_as_eager(kmeans_init, DATA.standard_normal((10, 2)))


def particle_filter_step(particles, weights, obs):
    """A particle filter whose noise comes from `random` bound by `from numpy.random import
    random` at the top of the module."""
    particles = particles + (uniform01(particles.shape) - 0.5) * 0.1
    weights = weights * np.exp(-((particles - obs) ** 2))
    return particles, weights / weights.sum()


def test_a_particle_filter_with_a_pre_bound_random_replays_bit_for_bit():
    graph = replays_as_eager(particle_filter_step, DATA.random(8), np.full(8, 1 / 8),
                             np.float64(0.3))
    assert graph.ops[0].params["method"] == "random"
    assert uniform01 is np.random.random  # put back


class Sampler:
    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)

    def sample(self, mu, sigma):
        return mu + sigma * self.rng.standard_normal(mu.shape)


def test_a_sampler_with_self_rng_replays_bit_for_bit_and_advances_its_generator():
    captured, eager = Sampler(3), Sampler(3)
    mu, sigma = DATA.standard_normal(5), np.float64(2.0)
    graph = cv.capture(captured.sample, mu, sigma)
    (state,) = graph.state_nodes
    assert state.name == "self.rng"
    assert type(captured.rng) is np.random.Generator  # put back
    for _ in range(3):
        same(graph.replay({"mu": mu, "sigma": sigma})["out"], eager.sample(mu, sigma))
    assert captured.rng.bit_generator.state == eager.rng.bit_generator.state


def test_the_silent_case_a_generator_on_an_object_of_the_opening_frame_is_recorded():
    """Before capviz recorded generators, `sampler.rng` (an attribute of a local object of the
    frame that opens the scope) was not seen: its draws were frozen into a constant and every
    replay repeated them. Now they replay as eager calls draw."""
    sampler, twin = Sampler(11), Sampler(11)
    mu = np.zeros(4)
    with cv.CaptureDevice().capture_scope() as scope:
        m = scope.input("mu", mu)
        scope.output(sampler.sample(m, 1.0), "y")
    graph = scope.graph
    assert graph.violations == [] and graph.constants == []
    first, second = (graph.replay({"mu": mu})["y"] for _ in range(2))
    same(first, twin.sample(mu, 1.0))
    same(second, twin.sample(mu, 1.0))
    assert not np.array_equal(first, second)


def test_a_module_level_generator_and_a_legacy_random_state_are_recorded():
    legacy = np.random.RandomState(9)
    twin = np.random.RandomState(9)

    def f(x):
        return x + legacy.normal(0.0, 1.0, size=x.shape).astype(np.float32)

    graph = cv.capture(f, np.zeros(3, np.float32))
    assert [n.name for n in graph.state_nodes] == ["legacy"]
    for _ in range(2):
        same(graph.replay({"x": np.zeros(3, np.float32)})["out"],
             np.zeros(3, np.float32) + twin.normal(0.0, 1.0, size=3).astype(np.float32))


# --- replay options, files, backends ---------------------------------------------------------


def test_state_return_draws_from_a_copy_and_leaves_the_generator():
    graph = cv.capture(dropout, np.ones(3))
    np.random.seed(4)
    before = np.random.get_state(legacy=False)["state"]["key"].copy()
    result = graph.replay({"x": np.ones(3)}, state="return")
    assert np.array_equal(np.random.get_state(legacy=False)["state"]["key"], before)
    advanced = result.states["np.random"]
    assert isinstance(advanced, np.random.RandomState)
    np.random.seed(4)
    same(result["out"], dropout(np.ones(3)))


def test_a_loaded_graph_draws_from_numpys_global_generator(tmp_path):
    path = os.fspath(tmp_path / "dropout.json")
    cv.capture(dropout, np.ones(5)).save(path)
    loaded = cv.load(path)
    np.random.seed(1)
    got = loaded.replay({"x": np.ones(5)})["out"]
    np.random.seed(1)
    same(got, dropout(np.ones(5)))


def test_a_generator_is_refused_by_name_on_dask():
    pytest.importorskip("dask")
    graph = cv.capture(dropout, np.ones(3))
    with pytest.raises(cv.UnsupportedOperationError,
                       match=r"the graph writes the state np\.random .*which backend 'dask' "
                             r"cannot write back"):
        graph.replay({"x": np.ones(3)}, backend="dask")


# --- seeds and refusals ----------------------------------------------------------------------


def test_reseeding_a_reached_generator_stays_a_seed_violation_with_the_three_fixes():
    sampler = Sampler(1)

    def f(x):
        sampler.rng = np.random.default_rng(5)  # seeded inside: a reseed
        return x

    with pytest.raises(cv.SeedViolationError, match=r"(?s)seeding is not supported.*Fixes:.*1\."
                                                    r".*2\..*3\."):
        cv.capture(f, np.ones(2))
    legacy = np.random.RandomState(2)

    def g(x):
        legacy.seed(3)
        return x

    with pytest.raises(cv.SeedViolationError, match=r"legacy\.seed\(3\) was called at "):
        cv.capture(g, np.ones(2))


REFUSED = {
    "a Python number": (lambda x: x + np.random.rand(),
                        r"(?s)np\.random\.rand\(\) returns a float, not an array \(no "
                        r"size=\).*np\.random\.rand\(\.\.\., size=1\)\[0\]"),
    "a tensor parameter": (lambda x: np.random.normal(x, 1.0),
                           r"(?s)with a parameter that is an array or a capture tensor.*mu \+ "
                           r"sigma \* np\.random\.standard_normal\(shape\)"),
    "a shuffle": (lambda x: (np.random.shuffle(np.arange(3)), x)[1],
                  r"shuffles its argument in place\.\nFix: index with a permutation instead: "
                  r"x = x\[np\.random\.permutation\(len\(x\)\)\]"),
    "Python's random": (lambda x: x * random.random(),
                        r"draws from Python's random, whose draws are Python numbers"),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_a_draw_a_graph_cannot_hold_is_refused_at_its_line_with_the_fix(case):
    fn, message = REFUSED[case]
    with pytest.raises(cv.UnsupportedOperationError, match=message) as info:
        cv.capture(fn, np.ones(3))
    text = str(info.value)
    assert "test_generators.py:" in text and len(text.splitlines()) <= 3
