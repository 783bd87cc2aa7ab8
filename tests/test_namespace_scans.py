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
    assert [s[0] for s in sites] == ["h.rng"]


def _old_sites(roots):
    """generators._sites as it was (976226b): an entry for every value, generator or not."""
    out = [(*root, generators._root_place(root[1], root[2])) for root in roots]
    for name, container, key, value in roots:
        if type(value) is dict and len(value) <= 64:
            place = generators._root_place(container, key)
            out += [(f"{name}[{k!r}]", value, k, v, generators._below(place, value, False, k))
                    for k, v in list(value.items())]
        elif type(value) is list and len(value) <= 64:
            place = generators._root_place(container, key)
            out += [(f"{name}[{i}]", value, i, v, generators._below(place, value, False, i))
                    for i, v in enumerate(value)]
        else:
            attrs = vars(value) if hasattr(value, "__dict__") and not isinstance(
                value, generators._SKIP + generators._TYPES) else None
            if attrs is not None and type(attrs) is dict and len(attrs) <= 256:
                place = generators._root_place(container, key)
                out += [(f"{name}.{k}", attrs, k, v, generators._below(place, value, True, k))
                        for k, v in list(attrs.items())]
    return out


def test_the_stand_in_sites_are_the_generators_the_old_scan_listed_in_its_order():
    rngs = [np.random.default_rng(i) for i in range(5)]
    space = {"a": rngs[0], "table": {i: float(i) for i in range(1000)},
             "cfg": {"lr": 0.1, "rng": rngs[1], "more": rngs[0]}, "slots": [1.0, rngs[2], "x"],
             "obj": types.SimpleNamespace(w=np.ones(3), gen=rngs[3], n=3),
             "holder": _DictWithAttributes(r=rngs[4]), "legacy": np.random.RandomState(0),
             "pyrand": random.Random(2), "sysrand": random.SystemRandom(), "n": 5}
    space["holder"].rng = rngs[4]
    roots = [(k, space, k, v) for k, v in space.items()]
    new = generators._sites(roots)
    old = [site for site in _old_sites(roots) if generators._is_generator(site[3])]
    assert [s[:4] for s in new] == [s[:4] for s in old]
    assert [s[4] for s in new] == [s[4] for s in old]
    assert [s[0] for s in new] == ["a", "legacy", "pyrand", "cfg['rng']", "cfg['more']",
                                   "slots[1]", "obj.gen", "holder.rng"]
    done = generators.install(roots, lambda *args: None)
    try:
        assert type(space["cfg"]["rng"]) is generators.StandIn
        assert type(space["cfg"]["more"]) is generators.StandIn  # (rngs[0]'s, named "a")
        assert space["cfg"]["more"] is space["a"]
        assert type(space["sysrand"]) is random.SystemRandom  # (no state: never one)
    finally:
        generators.remove(done)
    assert space["cfg"]["rng"] is rngs[1] and space["obj"].gen is rngs[3]
