"""NumPy's error settings set to raise around a JAX replay (hostile review 13, finding 28: silent
on 06e89c1, ``1.0 / x`` of a 0 replayed ``inf`` where eager NumPy raises FloatingPointError and
the NumPy and Dask replays fail at the node): refused by name, with the fix; other settings
replay as before."""

from __future__ import annotations

import numpy as np
import pytest

import capviz as cv

pytest.importorskip("jax")

X = np.array([1.0, 0.0, 2.0])


def fn(x):
    return 1.0 / x + np.log(x + 1)


@pytest.mark.parametrize("settings, named", [
    ({"divide": "raise"}, "divide='raise'"), ({"all": "raise"}, "divide='raise', invalid='raise'"),
    ({"over": "raise", "divide": "ignore"}, "over='raise'")])
def test_a_raise_setting_refuses_the_jax_replay_by_name_with_the_fix(settings, named):
    graph = cv.capture(fn, X)
    with np.errstate(**settings):
        with pytest.raises(cv.ReplayError) as err:
            graph.replay({"x": X}, backend="jax")
    message = str(err.value)
    assert message.startswith(f"NumPy's error settings say {named}")
    assert "Fix: replay with backend='numpy' (or 'dask'), which fails at the node" in message
    if settings.get("divide") == "raise" or settings.get("all") == "raise":
        with np.errstate(**settings), pytest.raises(FloatingPointError):
            fn(X)  # what eager NumPy does
        with np.errstate(**settings), pytest.raises(cv.ReplayError, match="FloatingPointError"):
            graph.replay({"x": X}, backend="numpy")  # the fix, applied


def test_the_compiled_replay_checks_the_settings_at_each_call():
    graph = cv.capture(fn, X)
    compiled = graph.compile(backend="jax")
    with np.errstate(divide="ignore"):
        assert np.array_equal(np.asarray(compiled(X)[0]), fn(X))
    with np.errstate(divide="raise"), pytest.raises(cv.ReplayError, match="divide='raise'"):
        compiled(X)


def test_settings_that_do_not_raise_replay_as_before():
    graph = cv.capture(fn, X)
    with np.errstate(all="ignore"):
        got = graph.replay({"x": X}, backend="jax", to_numpy=True)["out"]
        assert np.array_equal(got, fn(X))
