"""A generator the capture refuses as drawn is left as the capture found it (review 2,
finding 25): the watch (capviz/randomness/generator_watch.py) and the backstop
(capviz/randomness/backstop.py) put its state back before the refusal is raised, so a call
after the refused capture draws what an uninterrupted run draws."""

from __future__ import annotations

import copy
import random

import numpy as np
import pytest

import capviz as cv
from tests.helpers import hidden_noise


def _plain(value):
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    if isinstance(value, np.ndarray):
        return (value.dtype.str, value.tolist())
    return value


def _state(gen):
    """A comparable copy of ``gen``'s whole state."""
    if isinstance(gen, np.random.Generator):
        return _plain(gen.bit_generator.state)
    if isinstance(gen, np.random.RandomState):
        return _plain(gen.get_state(legacy=False))
    if isinstance(gen, np.random.BitGenerator):
        return _plain(gen.state)
    return _plain(gen.getstate())


def _draw(gen):
    if isinstance(gen, np.random.BitGenerator):
        return gen.random_raw(3).tolist()
    if isinstance(gen, random.Random):
        return [gen.random() for _ in range(3)]
    return gen.standard_normal(3).tolist()


MAKERS = {
    "Generator (PCG64)": lambda: np.random.default_rng(3),
    "Generator (Philox)": lambda: np.random.Generator(np.random.Philox(3)),
    "RandomState": lambda: np.random.RandomState(3),
    "MT19937": lambda: np.random.MT19937(3),
    "SFC64": lambda: np.random.SFC64(3),
    "random.Random": lambda: random.Random(3),
}


@pytest.mark.parametrize("kind", list(MAKERS))
def test_a_generator_in_a_list_attribute_drawn_by_a_refused_capture_is_put_back(kind):
    class Model:  # s25old.py: self.gens[0] is watched, not replaced by a stand-in
        def __init__(self):
            self.W = np.ones(3)
            self.gens = [MAKERS[kind]()]

        def step(self, x):
            noise = np.asarray(_draw(self.gens[0]), dtype=np.float64)
            self.W += x * 0.5
            return x + noise

    m, twin = Model(), Model()
    before = _state(m.gens[0])
    with pytest.raises(cv.FrozenRandomError, match=r"^self\.gens\[0\] \(a "):
        cv.capture(m.step, cv.spec((3,), "float64"))
    assert _state(m.gens[0]) == before
    assert _draw(m.gens[0]) == _draw(twin.gens[0])  # the sequence of an uninterrupted run
    assert m.W.tolist() == [1.0, 1.0, 1.0]


def _hidden_generator(held):
    """The generator hidden_noise holds in a closure cell (read through a call, so that no
    frame the refusal's traceback keeps names it: tests/test_backstop.py names it by where it
    is held, found from the objects that refer to it)."""
    sampler = hidden_noise.JITTER[0] if held == "JITTER" else getattr(hidden_noise, held)._draw
    return sampler.__closure__[0].cell_contents


@pytest.mark.parametrize("held", ["NOISE", "LEGACY", "JITTER"])
def test_a_generator_the_backstop_finds_is_put_back_before_the_refusal(held):
    draw = {"NOISE": lambda n: hidden_noise.NOISE((n,)),
            "LEGACY": lambda n: hidden_noise.LEGACY((n,)),
            "JITTER": lambda n: np.full(n, hidden_noise.JITTER[0]())}[held]

    def f(x):
        return x + draw(3)

    before = _state(_hidden_generator(held))
    uninterrupted = _draw(copy.deepcopy(_hidden_generator(held)))
    with pytest.raises(cv.FrozenRandomError, match="held where the capture does not look"):
        cv.capture(f, np.ones(3))
    assert _state(_hidden_generator(held)) == before
    assert _draw(_hidden_generator(held)) == uninterrupted  # as if the capture had never run


def _hidden(bits):
    def raw(n):
        return bits.random_raw(n)

    holder = hidden_noise.Noise.__new__(hidden_noise.Noise)
    holder._draw = raw  # in a closure cell of an attribute: no walk reaches it
    return holder


def test_a_bare_mersenne_twister_found_by_the_backstop_is_put_back_from_its_c_struct():
    bits = np.random.MT19937(5)  # the backstop reads its key and position from its C struct
    holder = _hidden(bits)

    def f(x):
        return x + holder._draw(3).astype(np.float64)

    before = _state(bits)
    with pytest.raises(cv.FrozenRandomError, match="held where the capture does not look"):
        cv.capture(f, np.ones(3))
    assert _state(bits) == before
    assert bits.random_raw(2).tolist() == np.random.MT19937(5).random_raw(2).tolist()
