"""The scans of the captured function's namespace for generator objects, made cheaper for a
namespace of big containers (benchmarks/memo_cost.py), find exactly what they found before:
the watch (randomness/generator_watch.py) the first 32 items of each dict, list and tuple, the
stand-ins (randomness/generators.py) the attributes of every object that has a ``__dict__``."""

from __future__ import annotations

import itertools
import random
import types

import numpy as np
import pytest

from capviz.randomness import generator_watch, generators


def _old_candidates(roots):
    """generator_watch._candidates as it was (976226b): one list per container."""
    kinds = [type(value) for _, value in roots]
    for (name, value), kind in zip(roots, kinds):
        if generator_watch._is_generator_type(kind):
            yield (name, value)
    for name, value in roots:
        if type(value) not in generator_watch._CONTAINERS or value is generator_watch._BUILTINS:
            continue
        items = generator_watch._first_items(value)
        keys = itertools.islice(value, 32) if type(value) is dict else range(len(items))
        for key, item in zip(keys, items):
            if generator_watch._is_generator_type(type(item)):
                yield (f"{name}[{key!r}]", item)


def test_the_watch_finds_generators_in_the_first_32_items_of_big_containers_and_no_further():
    rngs = [np.random.default_rng(i) for i in range(6)]
    table = {i: float(i) for i in range(5000)}
    table[31] = rngs[0]  # the 32nd item: seen
    table[32] = rngs[1]  # the 33rd: not
    listed = [0.0] * 100
    listed[0], listed[31], listed[40] = rngs[2], random.Random(1), rngs[3]
    roots = [("table", table), ("listed", listed), ("tupled", (1, rngs[4])),
             ("plain", {"a": 1.0}), ("rng", rngs[5]), ("__builtins__", generator_watch._BUILTINS)]
    roots += [(f"t{k}", {i: float(i) for i in range(500)}) for k in range(20)]
    found = list(generator_watch._candidates(roots))
    assert [name for name, _ in found] == ["rng", "table[31]", "listed[0]", "listed[31]",
                                           "tupled[1]"]
    assert sorted(found, key=str) == sorted(_old_candidates(roots), key=str)
    assert list(generator_watch._candidates(roots[3:4] + roots[6:])) == []


class _Slotted:
    __slots__ = ("rng",)


class _DictWithAttributes(dict):
    pass


@pytest.mark.parametrize("value", [{}, [], (), "s", b"b", 1, 1.5, True, 1j, set(), frozenset(),
                                   None], ids=lambda v: type(v).__name__)
def test_a_built_in_value_has_no_attributes_to_look_at_as_vars_says(value):
    with pytest.raises(TypeError):
        vars(value)
    assert generators._attributes(value) is None


def test_an_object_with_a_dict_is_still_looked_into_a_dict_subclass_included():
    rng = np.random.default_rng(0)
    holder = _DictWithAttributes()
    holder.rng = rng
    assert generators._attributes(holder) == {"rng": rng}
    plain = types.SimpleNamespace(rng=rng)
    assert generators._attributes(plain) == {"rng": rng}
    assert generators._attributes(_Slotted()) is None
    big = {i: float(i) for i in range(100)}
    sites = generators._sites([("big", {"big": big}, "big", big),
                               ("h", {"h": holder}, "h", holder)])
    assert [s[0] for s in sites] == ["big", "h", "h.rng"]
