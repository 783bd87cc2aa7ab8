"""Memo caches as public code writes them, past a plain module or class dict (hostile review 5,
finding 9; tests/test_memo_kinds.py): each ``*_mask(n)`` caches ``np.tril(np.ones((n, n)))``."""

import collections
import functools
import types

import numpy as np


def _closure():
    cache = {}

    def mask(n):
        if n not in cache:
            cache[n] = np.tril(np.ones((n, n)))
        return cache[n]

    return mask


closure_mask = _closure()  # (the cache: only in the closure cell)

ORDERED = collections.OrderedDict()


def ordered_mask(n):
    if n not in ORDERED:
        ORDERED[n] = np.tril(np.ones((n, n)))
        if len(ORDERED) > 8:
            ORDERED.popitem(last=False)
    ORDERED.move_to_end(n)
    return ORDERED[n]


DEFAULT = collections.defaultdict(lambda: None)


def default_mask(n):
    if DEFAULT[n] is None:
        DEFAULT[n] = np.tril(np.ones((n, n)))
    return DEFAULT[n]


def attribute_mask(n):
    if n not in attribute_mask.cache:
        attribute_mask.cache[n] = np.tril(np.ones((n, n)))
    return attribute_mask.cache[n]


attribute_mask.cache = {}

NESTED = {"masks": {}, "sizes": [1, 2]}


def nested_mask(n):
    masks = NESTED["masks"]
    if n not in masks:
        masks[n] = np.tril(np.ones((n, n)))
    return masks[n]


LISTED = []


def listed_mask(n):
    for size, mask in LISTED:
        if size == n:
            return mask
    LISTED.append((n, np.tril(np.ones((n, n)))))
    return LISTED[-1][1]


SLOTS = [None] * 8


def slot_mask(n):
    if SLOTS[n] is None:
        SLOTS[n] = np.tril(np.ones((n, n)))
    return SLOTS[n]


class Tables:
    @staticmethod
    @functools.cache
    def mask(shape):  # a hashable of the tensor: its shape
        return np.tril(np.ones(shape))


def lru_mask(n):
    return Tables.mask((n, n))


def _lru_closure():
    @functools.lru_cache(maxsize=4)
    def mask(shape):
        return np.tril(np.ones(shape))

    return lambda n: mask((n, n))


closure_lru_mask = _lru_closure()


@functools.cache
def _tables(n):
    return {"mask": np.tril(np.ones((n, n)))}  # a cache of a dict holding the buffer


def cached_dict_mask(n):
    return _tables(n)["mask"]


class Layer:
    def __init__(self):
        self._cache = {}  # an instance's memo

    def mask(self, n):
        if n not in self._cache:
            self._cache[n] = np.tril(np.ones((n, n)))
        return self._cache[n]


_LAYER = Layer()


def method_mask(n):
    return _LAYER.mask(n)



def _logger():
    seen = []

    def logged(x):
        seen.append(x * 2.0)  # a value of the data, kept where no replay can store it
        return x + 1.0

    return logged


logged = _logger()


_STASH = {}


def stash(n, made):
    _STASH[n] = made  # stored before this frame records anything: first seen holding it
    return made * 1.0


def _counter():
    box = {"n": np.zeros(1)}

    def bump():
        box["n"] = box["n"] + np.ones(1)  # a counter kept in a closure's dict
        return box["n"]

    return bump


bump = _counter()


def _counter_in_place():
    box = {"n": np.zeros(1)}

    def bump():
        box["n"] += np.ones(1)  # the quoted fix
        return np.ones(1) * box["n"]  # (a tensor meets it: the recorded value)

    return bump


bump_in_place = _counter_in_place()


TABLE = np.arange(9.0).reshape(3, 3)  # an outside array a value is computed from


Tables2 = collections.namedtuple("Tables2", "mask size")


@functools.lru_cache
def _as_namedtuple(n):
    return Tables2(np.tril(np.ones((n, n))), n)


def namedtuple_lru_mask(n):
    return _as_namedtuple(n).mask


@functools.lru_cache
def _as_namespace(n):
    return types.SimpleNamespace(mask=np.tril(np.ones((n, n))))


def namespace_lru_mask(n):
    return _as_namespace(n).mask


def _namespaces():
    kept = {}

    def mask(n):
        if n not in kept:
            kept[n] = types.SimpleNamespace(mask=np.tril(np.ones((n, n))), n=n)
        return kept[n].mask

    return mask


namespace_memo_mask = _namespaces()
