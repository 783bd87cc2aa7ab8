"""Helpers for the tests of stateful captures: pinning arrays so that capviz cannot lift them
(capviz/trace/lifted.py), and comparing replays with eager calls bit for bit."""

import numpy as np


def pinned(*arrays):
    """Views of ``arrays`` for a test to hold while it captures: each is a reference to the array
    (its ``base``) that no walk of the captured function explains, so capviz cannot lift the
    array, and a first capture takes today's two passes with other values planted in the
    states (capviz/trace/recapture.py), whose refusals the test asserts. (A view, not the array
    itself in a local variable: the namer would name the state after the test's variable.)"""
    return [a[...] for a in arrays]


def same(got, want, what=""):
    """``got`` and ``want`` hold the same bits, shape and dtype (NaN payloads included)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype} != {want.dtype}"
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    assert got.tobytes() == want.tobytes(), f"{what}: {got!r} != {want!r}"


def replays_as_calls(graph, model, twin, method, inputs, states):
    """Replay ``graph`` once per dict of ``inputs`` and call ``twin.<method>(**inputs)`` as
    eagerly: every output and every attribute of ``states`` of ``model`` and ``twin`` equal
    after each call, bit for bit, dtypes included."""
    for call, feed in enumerate(inputs):
        got = graph.replay(feed)
        want = getattr(twin, method)(**feed)
        wanted = want if isinstance(want, tuple) else (want,)
        assert len(graph.outputs) == len(wanted), call
        for name, value in zip(graph.outputs, wanted):
            same(got[name], value, f"call {call} output {name}")
        for attribute in states:
            same(getattr(model, attribute), getattr(twin, attribute),
                 f"call {call} state {attribute}")
