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
    "a tensor parameter": (lambda x: np.random.normal(x, 1.0),
                           r"(?s)with a parameter that is an array or a capture tensor.*mu \+ "
                           r"sigma \* np\.random\.standard_normal\(shape\)"),
    "a shuffle": (lambda x: (np.random.shuffle(np.arange(3)), x)[1],
                  r"shuffles its argument in place\.\nFix: index with a permutation instead: "
                  r"x = x\[np\.random\.permutation\(len\(x\)\)\]"),
    "Python's shuffle": (lambda x: (random.shuffle([1, 2, 3]), x)[1],
                         r"random\.shuffle\(\) shuffles its argument in place\.\nFix: index "
                         r"with a permutation instead"),
    "Python's choice": (lambda x: x * random.choice([1.0, 2.0]),
                        r"random\.choice\(\) returns an item of its sequence, which a graph "
                        r"cannot hold\.\nFix: index with a drawn index instead: "
                        r"np\.asarray\(seq\)\[random\.randrange\(len\(seq\)\)\]\.$"),
    "Python's sample": (lambda x: x * random.sample([1.0, 2.0, 3.0], 1)[0],
                        r"random\.sample\(\) returns a list of the population's items"),
    "a Python int into int32": (lambda x: x.astype(np.int32) + random.randint(0, 3),
                                r"the draw is a Python int, which NumPy converts to int32 here, "
                                r"raising OverflowError for a draw out of its range, which a "
                                r"graph cannot check\.\nFix: compute with int64: "
                                r"x\.astype\(np\.int64\)\.$"),
    "a branch on a draw": (lambda x: x * 2 if random.random() < 0.5 else x,
                           r"bool\(\) is not supported by capviz\.\ncapviz cannot record it: "
                           r"Python reads a value computed from a random draw \(random\.random"
                           r"\(\) at .*test_generators\.py:\d+ in <lambda>\), which each "
                           r"replay draws anew, so no guard can hold it\.\nFix: select with "
                           r"np\.where\(<condition>, a, b\), or draw before the capture and "
                           r"pass the value in as an input\.$"),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_a_draw_a_graph_cannot_hold_is_refused_at_its_line_with_the_fix(case):
    fn, message = REFUSED[case]
    error = cv.DataReadError if case == "a branch on a draw" else cv.UnsupportedOperationError
    with pytest.raises(error, match=message) as info:
        cv.capture(fn, np.ones(3))
    text = str(info.value)
    assert "test_generators.py:" in text and len(text.splitlines()) <= 3


# --- Python's random, and draws of one number --------------------------------------------------


def augment(x):
    """Data augmentation as public code writes it: Python's random for the parameters."""
    scale = random.uniform(0.9, 1.1)
    noise = random.gauss(0.0, 0.05)
    k = random.randrange(x.shape[0])
    flip = 1 - 2 * random.randint(0, 1)
    return x * scale + noise * flip, x[k] * random.random()


def _python_replays_as_eager(fn, *arrays, calls=3):
    graph = cv.capture(fn, *arrays)
    feed = dict(zip(graph.inputs, arrays))
    random.seed(11)
    replayed = [graph.replay(feed) for _ in range(calls)]
    after_replays = random.getstate()
    random.seed(11)
    eager = [fn(*arrays) for _ in range(calls)]
    assert random.getstate() == after_replays  # the live generator advanced as by the calls
    for got, want in zip(replayed, eager):
        want = want if isinstance(want, tuple) else (want,)
        for name, value in zip(graph.outputs, want):
            same(got[name], np.asarray(value))
    return graph


@pytest.mark.parametrize("dtype", ["float64", "float32", "float16"])
def test_pythons_random_draws_are_recorded_and_replay_from_the_live_generator(dtype):
    x = DATA.standard_normal((5, 3)).astype(dtype)
    graph = _python_replays_as_eager(augment, x)
    (state,) = graph.state_nodes
    assert (state.name, state.params) == ("random", {"generator": "Random"})
    draws = [n for n in graph.ops if n.op == "draw"]
    assert [n.params["method"] for n in draws] == ["uniform", "gauss", "randrange", "randint",
                                                    "random"]
    assert all(n.params["python"] and n.shape == () for n in draws)
    if dtype != "float64":  # NumPy converts the Python floats to the array's dtype first
        assert any(n.op == "astype" and n.params["dtype"] == dtype for n in graph.ops)


def test_the_python_random_state_returns_and_loads_by_its_name(tmp_path):
    x = DATA.standard_normal((5, 3))
    graph = cv.capture(augment, x)
    random.seed(5)
    before = random.getstate()
    result = graph.replay({"x": x}, state="return")
    assert random.getstate() == before  # returned, not advanced
    advanced = result.states["random"]
    graph.save(str(tmp_path / "augment.json"))
    loaded = cv.load(str(tmp_path / "augment.json"))
    out = loaded.replay({"x": x})  # "random" is Python's global generator, found by its name
    assert random.getstate() == advanced.getstate()
    random.seed(5)
    same(out[loaded.outputs[0]], augment(x)[0])


def test_a_draw_of_one_number_from_numpy_is_recorded_too():
    x = DATA.standard_normal(4).astype(np.float32)
    rng = np.random.default_rng(3)

    def f(x):  # a Python float (rand()), a NumPy int64 (integers()), a Python int
        return x * np.random.rand() + rng.integers(5) - np.random.randint(3)

    graph = cv.capture(f, x)
    assert [n.params.get("python", False) for n in graph.ops if n.op == "draw"] == \
        [True, False, True]
    start = rng.bit_generator.state
    np.random.seed(2)
    replayed = [graph.replay({"x": x})["out"] for _ in range(3)]
    rng.bit_generator.state = start
    np.random.seed(2)
    for got in replayed:  # float64: integers() is a NumPy int64, promoted strongly
        same(got, f(x))


class Jitter:
    """A sampler holding a ``random.Random`` of its own."""

    def __init__(self, seed):
        self.rng = random.Random(seed)

    def __call__(self, x):
        return x + self.rng.gauss(0.0, 1.0)


def test_a_random_random_object_is_recorded_and_advanced():
    captured, eager = Jitter(8), Jitter(8)
    x = DATA.standard_normal(3)
    graph = cv.capture(captured, x)
    assert type(captured.rng) is random.Random  # put back
    for _ in range(2):
        same(graph.replay({"x": x})["out"], eager(x))
    assert captured.rng.getstate() == eager.rng.getstate()


def test_random_seed_inside_the_capture_is_a_seed_violation_with_the_three_fixes():
    def f(x):
        random.seed(3)
        return x * random.random()

    with pytest.raises(cv.SeedViolationError) as info:
        cv.capture(f, np.ones(2))
    text = str(info.value)
    assert "random.seed(3) was called at " in text and "test_generators.py" in text
    assert all(f"  {k}. " in text for k in (1, 2, 3))


def test_a_draw_with_a_numpy_scalar_or_a_list_promotes_as_numpy_does():
    x = DATA.standard_normal(3).astype(np.float32)

    def f(x):  # np.float32 * a Python float is float32; a list of floats is float64
        return x * (np.float32(2) * random.random()) + np.add([0.5, 1.5, 2.5], random.random())

    graph = _python_replays_as_eager(f, x)
    assert graph.replay({"x": x})["out"].dtype == np.float64
