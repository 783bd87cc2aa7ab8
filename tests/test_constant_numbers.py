"""``cv.constant`` of a Python number inside a capture is what NumPy makes of the number outside
one: weak in the promotion (``x32 * 0.1`` is float32), checked against an integer dtype's range
as NumPy checks it. Review 7 #27: it was a strong float64/int64 tensor, so a float32 program
wrapped as capviz's own fixes once quoted replayed float64 arithmetic (a silent difference)."""

import numpy as np
import pytest

import capviz as cv


def _replayed(fn, x):
    (out,) = cv.capture(fn, x).compile()(x)
    return out


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.complex64])
def test_a_wrapped_python_float_is_weak_as_outside_a_capture(dtype):
    def scale(x):
        return x * cv.constant(0.1) + cv.constant(1.0) / 3

    x = (np.arange(5) * 1.7).astype(dtype)
    eager = scale(x)
    out = _replayed(scale, x)
    assert out.dtype == eager.dtype == np.dtype(dtype)
    assert out.tobytes() == eager.tobytes()


def test_a_numpy_scalar_keeps_its_dtype():
    def scale(x):
        return x * cv.constant(np.float64(0.1))

    x = np.arange(3, dtype=np.float32)
    assert _replayed(scale, x).dtype == scale(x).dtype == np.float64


def test_a_wrapped_python_int_takes_the_integer_dtype_of_the_data():
    def shift(x):
        return x * cv.constant(3) + cv.constant(2) * 5

    x = np.arange(4, dtype=np.int8)
    out = _replayed(shift, x)
    assert out.dtype == np.int8
    assert out.tolist() == shift(x).tolist() == [10, 13, 16, 19]


def test_a_wrapped_python_int_out_of_the_datas_range_raises_numpys_overflow_error():
    def shift(x):
        return x * cv.constant(300)

    x = np.arange(4, dtype=np.int8)
    with pytest.raises(OverflowError) as eager:
        shift(x)
    with pytest.raises(OverflowError) as captured:
        cv.capture(shift, x)
    assert str(captured.value) == str(eager.value) == "Python integer 300 out of bounds for int8"


class Decay:
    def __init__(self):
        self.v = np.ones(4, dtype=np.float32)

    def __call__(self, x):
        self.v *= cv.constant(1 - 0.9)  # the number a state write is given, wrapped
        self.v += x
        return cv.constant(self.v) * 1


def test_a_float32_state_written_with_a_wrapped_number_replays_as_its_eager_twin():
    xs = [np.random.default_rng(k).standard_normal(4).astype(np.float32) for k in range(3)]
    captured, twin = Decay(), Decay()
    run = cv.capture(captured, xs[0]).compile()
    for x in xs:
        (out,) = run(x)
        eager = twin(x)
        assert out.dtype == eager.dtype == np.float32
        assert out.tobytes() == eager.tobytes()
        assert captured.v.tobytes() == twin.v.tobytes()


def test_a_wrapped_complex_or_bool_promotes_by_kind_as_numpy_does():
    """Review 7 #30: casting the number to the array's dtype dropped the imaginary part of
    ``x32 * cv.constant(1j)`` and made ``b & cv.constant(True)`` int64."""
    def rotate(x):
        return x * cv.constant(1j)

    x = np.arange(1, 4, dtype=np.float32)
    out = _replayed(rotate, x)
    assert out.dtype == rotate(x).dtype == np.complex64
    assert out.tobytes() == rotate(x).tobytes()

    def keep(b):
        return b & cv.constant(True)

    b = np.array([True, False, True])
    out = _replayed(keep, b)
    assert out.dtype == np.bool_
    assert out.tolist() == keep(b).tolist()


def test_a_wrapped_int_no_int64_holds_is_the_literal_it_is_outside():
    def scale(x):
        return x * cv.constant(2**70)

    x = np.arange(3, dtype=np.float32)
    out = _replayed(scale, x)
    assert out.dtype == scale(x).dtype == np.float32
    assert out.tobytes() == scale(x).tobytes()
