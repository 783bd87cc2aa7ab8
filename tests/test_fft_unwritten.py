"""np.fft.irfft/hfft of an empty axis padded to n points: NumPy 2 returns memory its transform
never wrote (other subnormal values at each call; the thorough differential profile's
np.fft.irfft-167 cases). No replay can give them: refused at the user's line, by name."""

from __future__ import annotations

import numpy as np
import pytest

import capviz as cv


@pytest.mark.parametrize("name", ["irfft", "hfft"])
def test_an_inverse_real_transform_of_an_empty_axis_is_refused_with_the_fix(name):
    fn = getattr(np.fft, name)

    def f(a):
        return fn(a, n=5, axis=0)

    with pytest.raises(cv.UnsupportedOperationError) as info:
        cv.capture(f, np.zeros(0))
    message = str(info.value)
    assert message.startswith(f"np.fft.{name} of an empty axis with n=5: NumPy returns memory "
                              "its transform never wrote")
    assert "Fix: pass an operand with at least one element along the axis" in message
    assert f"test_fft_unwritten.py:{f.__code__.co_firstlineno + 1} in f" in message


def test_the_same_transform_of_a_non_empty_axis_still_replays():
    x = np.arange(3.0)
    graph = cv.capture(lambda a: np.fft.irfft(a, n=5, axis=0), x)
    np.testing.assert_array_equal(graph.replay({graph.inputs[0]: x})["out"],
                                  np.fft.irfft(x, n=5, axis=0))
