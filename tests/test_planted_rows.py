"""The second capture's other values for many states of one size are placed row by row in a
few NumPy calls (capviz/trace/recapture.py, ``_reversed_ranks_rows``): bit for bit what the
per-state placing (``_reversed_ranks``, one state at a time, as at 976226b) gives, for rows of
distinct values, runs of equals, ties, NaN, signed zeros, infinities and small sizes."""

from __future__ import annotations

import numpy as np
import pytest

from capviz.trace.recapture import (
    _CHUNK,
    _FLOAT64,
    _equal_sized,
    _other_floats_together,
    _reversed_ranks,
    _reversed_ranks_rows,
)


def _one_by_one(arrays, gen):
    """_other_floats_together as it was at 976226b: each state's ranks placed alone."""
    sizes = np.array([a.size for a in arrays])
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    if len(arrays) == 1:
        flat = arrays[0].reshape(-1).astype(np.float64, copy=False)
    else:
        flat = np.concatenate([a.reshape(-1) for a in arrays], dtype=np.float64)
    drawn = gen.standard_normal(flat.size)
    drawn *= 7
    positive = ~(np.add.reduceat(flat, starts) > 0)
    shift = np.where(positive, 3.0, -3.0) - np.add.reduceat(drawn, starts) / sizes
    few = len(arrays) > 1 and flat.size <= _CHUNK
    if few:
        drawn += np.repeat(shift, sizes)
    else:
        for value, start, size in zip(shift.tolist(), starts.tolist(), sizes.tolist()):
            drawn[start:start + size] += value
    out = np.empty_like(drawn)
    for a, start in zip(arrays, starts.tolist()):
        stop = start + a.size
        _reversed_ranks(flat[start:stop], drawn[start:stop], out[start:stop])
    if few:
        same_value = out == flat
        same_value &= np.repeat([a.dtype == _FLOAT64 for a in arrays], sizes)
        if same_value.any():
            out[same_value] = out[same_value] * 2 + 1
    others = []
    for a, start in zip(arrays, starts.tolist()):
        other = out[start:start + a.size]
        if not few and a.dtype == _FLOAT64:
            same_value = other == flat[start:start + a.size]
            if same_value.any():
                other[same_value] = other[same_value] * 2 + 1
        if a.dtype != _FLOAT64:
            other = other.astype(a.dtype)
            same_value = other == a.reshape(-1)
            if same_value.any():
                other[same_value] = other[same_value] * 2 + 1
        others.append(other.reshape(a.shape))
    return others


def _array(gen, size, kind):
    if kind == "normal":
        a = gen.standard_normal(size)
    elif kind == "zeros":
        a = np.zeros(size)
    elif kind == "ones":
        a = np.ones(size)
    elif kind == "ties":
        a = gen.integers(0, 3, size).astype(float)
    elif kind == "nan":
        a = gen.standard_normal(size)
        a[gen.integers(0, size, 2)] = np.nan
    elif kind == "zeros_signed":
        a = gen.standard_normal(size)
        a[gen.integers(0, size)] = 0.0
        a[gen.integers(0, size)] = -0.0
    elif kind == "inf":
        a = gen.standard_normal(size)
        a[gen.integers(0, size)] = np.inf
        a[gen.integers(0, size)] = -np.inf
    else:  # all NaN
        a = np.full(size, np.nan)
    return a


KINDS = ["normal", "zeros", "ones", "ties", "nan", "zeros_signed", "inf", "allnan"]


@pytest.mark.parametrize("seed", range(40))
def test_rows_of_one_size_are_planted_as_one_state_at_a_time_plants_them(seed):
    gen = np.random.default_rng(seed)
    arrays = []
    for _ in range(int(gen.integers(2, 40))):
        size = int(gen.choice([1, 2, 3, 4, 7, 256]))
        for _ in range(int(gen.integers(1, 6))):  # runs of one size, as an optimiser's
            a = _array(gen, size, KINDS[int(gen.integers(0, len(KINDS)))])
            dtype = gen.choice([np.float64, np.float64, np.float32, np.float16])
            arrays.append(a.astype(dtype).reshape((1, size) if size % 2 else (size,)))
    with np.errstate(all="ignore"):  # (as OtherValues.plant calls it: NaN and inf states)
        new = _other_floats_together(arrays, np.random.default_rng(9))
        old = _one_by_one(arrays, np.random.default_rng(9))
    assert len(new) == len(old)
    for a, b in zip(new, old):
        assert a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def test_the_benchmarks_optimiser_states_are_planted_alike():
    gen = np.random.default_rng(0)
    arrays = [gen.standard_normal(256) for _ in range(50)] + [np.zeros(256) for _ in range(50)]
    new = _other_floats_together(arrays, np.random.default_rng(1))
    old = _one_by_one(arrays, np.random.default_rng(1))
    assert all(a.tobytes() == b.tobytes() for a, b in zip(new, old))


def test_rows_placed_together_match_each_row_placed_alone():
    gen = np.random.default_rng(3)
    flat = np.stack([_array(gen, 64, kind) for kind in KINDS * 3])
    values = gen.standard_normal(flat.shape)
    out = np.empty_like(values)
    with np.errstate(all="ignore"):
        _reversed_ranks_rows(flat, values.copy(), out)
    for row in range(flat.shape[0]):
        alone = _reversed_ranks(flat[row], values[row].copy())
        assert alone.tobytes() == out[row].tobytes()


def test_runs_of_equal_sizes():
    assert _equal_sized([3, 3, 3, 1, 5, 5]) == [(0, 3, 3), (9, 1, 1), (10, 5, 2)]
    assert _equal_sized([2]) == [(0, 2, 1)]
    assert _equal_sized([]) == []


def test_the_benchmarks_hundred_states_are_placed_in_a_few_blocks(monkeypatch):
    """benchmarks/state.py's 100 states of 256 elements: 4 blocks of rows (13 at 2,048 elements
    a block, 0.3 ms of a 9 ms first capture), bit for bit what one state at a time gives."""
    from capviz.trace import recapture

    calls = []
    real = recapture._rows
    monkeypatch.setattr(recapture, "_rows", lambda *a: calls.append(a[0].shape) or real(*a))
    gen = np.random.default_rng(0)
    arrays = [a for _ in range(50) for a in (np.zeros(256), gen.standard_normal(256))]
    new = _other_floats_together(arrays, np.random.default_rng(1))
    assert calls == [(32, 256)] * 3 + [(4, 256)]
    old = _one_by_one(arrays, np.random.default_rng(1))
    assert all(a.tobytes() == b.tobytes() for a, b in zip(new, old))


@pytest.mark.parametrize("seed", range(8))
def test_blocks_of_a_few_rows_place_what_one_block_places(seed, monkeypatch):
    """The block size changes no value: rows cut into blocks of 1 to 5 rows plant what the
    whole block plants."""
    from capviz.trace import recapture

    gen = np.random.default_rng(seed)
    arrays = [_array(gen, 64, KINDS[int(gen.integers(0, len(KINDS)))]) for _ in range(23)]
    with np.errstate(all="ignore"):
        whole = _other_floats_together(arrays, np.random.default_rng(9))
        monkeypatch.setattr(recapture, "_ROWS_AT_ONCE", 64 * int(gen.integers(1, 6)))
        cut = _other_floats_together(arrays, np.random.default_rng(9))
    assert all(a.tobytes() == b.tobytes() for a, b in zip(whole, cut))
