"""The process-wide generator backstop (capviz/randomness/backstop.py): a generator held where
no walk of the captured function looks (a closure cell of another module's object) that draws
during a capture is refused when the scope closes, naming the generator; never frozen
silently."""

from __future__ import annotations

import numpy as np
import pytest

import capviz as cv
from capviz.randomness import backstop
from tests.helpers import hidden_noise


def test_a_generator_in_a_closure_of_another_modules_object_is_refused_by_name():
    def f(x):
        return x + hidden_noise.NOISE(x.shape)

    with pytest.raises(cv.FrozenRandomError) as info:
        cv.capture(f, np.ones(3))
    text = str(info.value)
    assert text.startswith("rng (a np.random.Generator held where the capture does not look: "
                           "a closure variable of _make_sampler.<locals>.sample) was drawn from "
                           "or reseeded while a capture scope was recording")
    assert "cv.random.normal" in text and "noise = rng.standard_normal(shape)" in text


@pytest.mark.parametrize("case", ["legacy", "python"])
def test_a_hidden_legacy_or_python_generator_is_refused_too(case):
    def legacy(x):
        return x * hidden_noise.LEGACY(x.shape)

    def python(x):
        return x * hidden_noise.JITTER[0]()

    with pytest.raises(cv.FrozenRandomError,
                       match=r"^rng \(a np\.random\.RandomState held where the capture does "
                             r"not look: a closure variable of _make_sampler.<locals>.sample\)"
                       if case == "legacy" else
                       r"^gen \(a random\.Random held where the capture does not look: a "
                       r"closure variable of _make_jitter.<locals>.jitter\)"):
        cv.capture(legacy if case == "legacy" else python, np.ones(3))


def test_a_generator_made_after_the_first_capture_is_seen():
    cv.capture(lambda x: x * 2, np.ones(2))  # the first capture: the backstop holds every one
    late = hidden_noise.Noise(np.random.default_rng(11))  # made since: counted, found young

    def f(x):
        return x + late(x.shape)

    with pytest.raises(cv.FrozenRandomError, match=r"^rng \(a np\.random\.Generator held where "
                                                   r"the capture does not look: a closure"):
        cv.capture(f, np.ones(3))


def test_a_capture_that_draws_from_no_hidden_generator_passes_and_lets_dead_ones_go():
    box = [np.random.default_rng(5)]  # (in a list: a frame's f_locals snapshot holds none)
    key = id(box[0].bit_generator)
    graph = cv.capture(lambda x: x * 2, np.ones(2))
    assert not graph.violations
    held = backstop._held.get(key) is box[0].bit_generator  # found young, held
    assert held
    box.clear()
    cv.capture(lambda x: x * 2, np.ones(2))
    assert key not in backstop._held  # nothing else held it: let go
    noted = backstop.note([])
    assert not backstop.changed(noted)
    hidden_noise.NOISE((2,))  # a draw outside any capture: a change of a noted state
    assert backstop.describe(backstop.changed(noted)[0])[::2] == \
        ("rng", "held where the capture does not look: a closure variable of "
                "_make_sampler.<locals>.sample")
