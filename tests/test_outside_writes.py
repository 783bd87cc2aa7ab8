"""Outside arrays NumPy writes during ``cv.capture(fn)`` that no state explains
(capviz/trace/outside_writes.py; review 2, finding 3 and its update d10): refused at the line
of ``fn`` that writes them, naming them, with the write through a tensor as the fix, and put
back, on the first capture alone."""

from __future__ import annotations

import numpy as np
import pytest

import capviz as cv
from capviz.core.errors import UnsupportedOperationError
from capviz.trace import outside_writes
from capviz.trace import places as walk
from tests.helpers.two_passes import two_passes  # noqa: F401 (the fixture)

pytestmark = pytest.mark.usefixtures("two_passes")  # (the two passes' refusals: a first
#   capture that lifts the arrays its statements write replays these programs as eager,
#   states included, tests/test_first_capture_guessed.py)


class Accumulator:
    """/tmp/review2/d10.py: a state written with a tensor, a counter written without one."""

    def __init__(self):
        self.acc = np.zeros(1, np.float32)
        self.n = np.zeros(1)

    def step(self, x):
        self.acc += np.sum(x)
        self.n += 1.0
        return x * 1.0

    def fixed(self, x):
        self.acc += np.sum(x)
        self.n += cv.constant(np.float64(1.0))  # the message's fix
        return x * 1.0


def _lines(err):
    what, why, fix = str(err).splitlines()
    return what, why, fix


def test_a_counter_numpy_writes_beside_a_state_is_refused_at_its_line_and_put_back():
    m = Accumulator()
    with pytest.raises(UnsupportedOperationError) as info:
        cv.capture(m.step, cv.spec((6,), "float32"))
    what, why, fix = _lines(info.value)
    line = Accumulator.step.__code__.co_firstlineno + 2
    assert what == (f"`self.n += 1.0` at {__file__}:{line} in step: NumPy's own operators "
                    "wrote the outside ndarray self.n, a write no state of the graph records.")
    assert why == ("capviz cannot record it: NumPy changed the array's memory without meeting "
                   "a tensor, so no hook saw the write and no replay would make it (it held "
                   "[0.] (float64[1]) when the call started and NumPy made it [1.] "
                   "(float64[1]); the capture put it back).")
    assert fix == ("Fix: write it with a tensor, which the capture records as a state: "
                   "self.n += cv.constant(np.float64(1.0)), or pass it as an input and return "
                   "its new value.")
    assert m.n.tolist() == [0.0] and m.acc.tolist() == [0.0]
    graph = info.value.graph
    assert not graph.complete and graph.violation_records[-1].call == outside_writes.OUTSIDE


def test_the_fix_replays_the_counter_as_eager_calls_do():
    m, twin = Accumulator(), Accumulator()
    graph = cv.capture(m.fixed, cv.spec((6,), "float32"))
    assert sorted(n.name for n in graph.state_nodes) == ["m.acc", "m.n"]
    x = np.arange(6, dtype=np.float32)
    for _ in range(3):
        graph.replay({"x": x})
        twin.step(x)
    assert m.n.tolist() == twin.n.tolist() == [3.0]
    assert np.array_equal(m.acc, twin.acc)


def test_an_integer_counter_never_read_is_refused_without_any_state():
    class Model:
        def __init__(self):
            self.calls = np.zeros(1, np.int64)

        def step(self, x):
            self.calls += 1
            return x * 2.0

    m = Model()
    with pytest.raises(UnsupportedOperationError) as info:
        cv.capture(m.step, cv.spec((3,), "float64"))
    what, why, fix = _lines(info.value)
    assert what.startswith("`self.calls += 1` at ")
    assert "it held [0] (int64[1]) when the call started and NumPy made it [1] (int64[1])" \
        in why
    assert "self.calls += cv.constant(np.int64(1))" in fix  # the array's own dtype
    assert m.calls.tolist() == [0]


COUNT = np.zeros(2)


def test_a_global_written_by_a_ufunc_with_out_is_refused_at_that_line():
    def f(x):
        y = x * 2.0
        np.add(COUNT, 1.0, out=COUNT)
        return y

    with pytest.raises(UnsupportedOperationError) as info:
        cv.capture(f, cv.spec((3,), "float64"))
    what, _, fix = _lines(info.value)
    assert what.startswith("`np.add(COUNT, 1.0, out=COUNT)` at ")
    assert "wrote the outside ndarray COUNT," in what
    assert "COUNT += cv.constant(np.float64(1)) for COUNT += 1" in fix
    assert COUNT.tolist() == [0.0, 0.0]


@pytest.mark.parametrize("where", ["list item", "dict item", "closure", "plain store"])
def test_arrays_in_containers_closures_and_plain_stores_are_refused_and_put_back(where):
    stats = [np.zeros(2)]
    table = {"seen": np.zeros(2)}
    buffer = np.zeros(4)

    def f(x):
        if where == "list item":
            stats[0] += 1.0
        elif where == "dict item":
            table["seen"] -= 2.0
        elif where == "closure":
            buffer[:] = 5.0
        else:
            buffer[1] = 3.0
        return x + 1.0

    with pytest.raises(UnsupportedOperationError) as info:
        cv.capture(f, cv.spec((2,), "float64"))
    label = {"list item": "stats[0]", "dict item": "table['seen']"}.get(where, "buffer")
    what = str(info.value).splitlines()[0]
    assert f"wrote the outside ndarray {label}," in what
    assert stats[0].tolist() == [0.0, 0.0] and table["seen"].tolist() == [0.0, 0.0]
    assert buffer.tolist() == [0.0] * 4


def test_a_failed_capture_still_puts_the_written_array_back():
    class Model:
        def __init__(self):
            self.n = np.zeros(1)

        def step(self, x):
            self.n += 1.0
            raise KeyError("the user's own error")

    m = Model()
    with pytest.raises(KeyError, match="the user's own error"):
        cv.capture(m.step, cv.spec((3,), "float64"))
    assert m.n.tolist() == [0.0]


def test_record_mode_keeps_the_refusal_on_the_graph_and_puts_the_array_back():
    m = Accumulator()
    graph = cv.capture(m.step, cv.spec((6,), "float32"), on_violation="record")
    assert not graph.complete
    assert "wrote the outside ndarray self.n" in graph.violation_records[-1].message
    with pytest.raises(UnsupportedOperationError, match="self.n"):
        graph.check()
    assert m.n.tolist() == [0.0]


def test_two_arrays_written_the_first_named_the_other_listed_and_both_put_back():
    class Model:
        def __init__(self):
            self.a = np.zeros(1)
            self.b = np.ones(1)

        def step(self, x):
            self.a += 1.0
            self.b *= 3.0
            return x * 1.0

    m = Model()
    with pytest.raises(UnsupportedOperationError) as info:
        cv.capture(m.step, cv.spec((3,), "float64"))
    what, why, _ = _lines(info.value)
    assert "wrote the outside ndarray self.a," in what and "NumPy also wrote self.b" in why
    assert m.a.tolist() == [0.0] and m.b.tolist() == [1.0]


def test_a_view_and_its_base_both_reachable_are_put_back_once():
    class Model:
        def __init__(self):
            self.base = np.zeros(4)
            self.tail = self.base[2:]

        def step(self, x):
            self.tail += 1.0
            return x * 1.0

    m = Model()
    with pytest.raises(UnsupportedOperationError, match="outside ndarray self.base"):
        cv.capture(m.step, cv.spec((3,), "float64"))
    assert m.base.tolist() == [0.0] * 4 and np.shares_memory(m.tail, m.base)


def test_arrays_of_a_mebibyte_or_more_are_not_copied_and_smaller_ones_of_numbers_are():
    class Model:
        def __init__(self):
            self.big = np.zeros(1 << 17)  # 1 MiB: a weight, kept by reference by a capture
            self.small = np.zeros(3)
            self.flags = np.zeros(3, bool)
            self.frozen = np.zeros(3)
            self.frozen.flags.writeable = False
            self.names = np.array(["a", "b"])  # not numbers: not copied

        def step(self, x):
            return x * 1.0

    m = Model()
    snapshot = outside_writes.note(walk.note(m.step))
    assert [label for label, _, _ in snapshot.noted] == ["self.small", "self.flags",
                                                         "self.frozen"]
    assert [label for label, _, _ in snapshot.watched] == ["self.big"]  # fingerprinted instead


class Decay:
    """Weight decay by NumPy's own operator on a 2 MiB weight (review 3, finding 9)."""

    def __init__(self):
        self.W = np.ones((512, 512))

    def step(self, x):
        self.W *= 0.99
        return x @ self.W


def test_a_large_array_numpy_writes_is_refused_naming_it_though_it_cannot_be_put_back():
    m = Decay()
    with pytest.raises(UnsupportedOperationError) as info:
        cv.capture(m.step, cv.spec((512,), "float64"))
    what, why, fix = _lines(info.value)
    line = Decay.step.__code__.co_firstlineno + 1
    assert what == (f"`self.W *= 0.99` at {__file__}:{line} in step: NumPy's own operators "
                    "wrote the outside ndarray self.W, a write no state of the graph records.")
    assert why.endswith("(it keeps NumPy's change: it is too large (2.0 MiB) for the capture to "
                        "keep a copy of, so the capture could not put it back; set it back from "
                        "a copy of your own).")
    assert fix == ("Fix: write it with a tensor, which the capture records as a state: "
                   "self.W *= cv.constant(np.float64(0.99)), or pass it as an input and return "
                   "its new value.")
    assert m.W[0, 0] == 0.99  # what NumPy made, said in the message


class Sparse:
    """/tmp/review3/s31.py: one element of a 2.4 MB count table and four of a 2.4 MB
    embedding, written by NumPy between any evenly spaced sample's elements (review 3,
    finding 9: 9c014c5's 4,096-element sample missed both, and the captures were silent)."""

    def __init__(self):
        self.table = np.zeros(300_000)
        self.E = np.zeros((1000, 300))

    def count(self, x):
        self.table[7] += 1.0
        return x * self.table[:3]

    def nudge(self, x):
        self.E[3, 5:9] += 0.5
        return x * 1.0


@pytest.mark.parametrize("method, text, label", [
    ("count", "self.table[7] += 1.0", "self.table"),
    ("nudge", "self.E[3, 5:9] += 0.5", "self.E"),
])
def test_a_sparse_write_to_a_large_array_is_refused_naming_it(method, text, label):
    m = Sparse()
    with pytest.raises(UnsupportedOperationError) as info:
        cv.capture(getattr(m, method), cv.spec((3,), "float64"))
    what, why, _fix = _lines(info.value)
    line = getattr(Sparse, method).__code__.co_firstlineno + 1
    assert what == (f"`{text}` at {__file__}:{line} in {method}: NumPy's own operators "
                    f"wrote the outside ndarray {label}, a write no state of the graph records.")
    assert why.endswith("(it keeps NumPy's change: it is too large (2.3 MiB) for the capture to "
                        "keep a copy of, so the capture could not put it back; set it back from "
                        "a copy of your own).")


def test_the_fingerprint_sees_a_single_bit_anywhere_in_a_large_array():
    class Model:
        def __init__(self):
            self.W = np.zeros(1 << 18)

        def step(self, x):
            return x * 1.0

    m = Model()
    for index in (1, 4097, (1 << 18) - 2):  # between, beyond and before any strided sample
        snapshot = outside_writes.note(walk.note(m.step))
        m.W.view(np.uint64)[index] ^= 1  # the lowest bit of one float: 0.0 -> 5e-324
        assert [w.label for w in snapshot.put_back()] == ["self.W"]
        assert snapshot.put_back() == []  # reported once


class Pair:
    """/tmp/review3/s27.py C: arrays inside a tuple attribute (an LSTM's ``(h, c)``)."""

    def __init__(self):
        self.pair = (np.zeros(2), (np.zeros(2), np.zeros(2)))

    def step(self, g):
        self.pair[0][0] += 1.0
        return g * 1.0

    def inner(self, g):
        self.pair[1][1][1] += 1.0
        return g * 1.0


def test_an_array_inside_a_tuple_numpy_writes_is_refused_and_put_back():
    m = Pair()
    with pytest.raises(UnsupportedOperationError) as info:
        cv.capture(m.step, cv.spec((4,), "float64"))
    what, _why, _fix = _lines(info.value)
    line = Pair.step.__code__.co_firstlineno + 1
    assert what == (f"`self.pair[0][0] += 1.0` at {__file__}:{line} in step: NumPy's own "
                    "operators wrote the outside ndarray self.pair[0], a write no state of the "
                    "graph records.")
    assert m.pair[0].tolist() == [0.0, 0.0]
    with pytest.raises(UnsupportedOperationError, match="outside ndarray self.pair.1..1."):
        cv.capture(m.inner, cv.spec((4,), "float64"))
    assert m.pair[1][1].tolist() == [0.0, 0.0]


class Momentum:
    """SGD with momentum as tutorials write it (review 3, finding 1): NumPy adds the written
    state ``v`` into ``W`` with no tensor on the line."""

    def __init__(self, n):
        self.W = np.ones((n, n))
        self.v = np.zeros((n, n))

    def step(self, g):
        self.v -= 0.1 * g
        self.W += self.v
        return g * 1.0

    def fixed(self, g):  # the written state read through its local name
        v = self.v
        v -= 0.1 * g
        self.W += v
        return g * 1.0

    def quoted(self, g):  # the message's fix, as it quotes it
        self.v -= 0.1 * g
        self.W += cv.constant(self.v)
        return g * 1.0


@pytest.mark.parametrize("n", [4, 512])  # 4: copied and put back; 512 (2 MiB): fingerprinted
def test_a_state_numpy_adds_into_another_array_is_refused_with_the_fix_that_applies(n):
    m = Momentum(n)
    with pytest.raises(UnsupportedOperationError) as info:
        cv.capture(m.step, cv.spec((n, n), "float64"))
    what, _why, fix = _lines(info.value)
    assert what.startswith("`self.W += self.v` at ")
    assert "wrote the outside ndarray self.W" in what
    assert fix == ("Fix: write `self.W += cv.constant(self.v)`: cv.constant(self.v) is the "
                   "value the capture records for it, before and after its write, and self.v "
                   "itself outside a capture.")
    assert np.array_equal(m.v, np.zeros((n, n)))
    if n == 4:
        assert np.array_equal(m.W, np.ones((n, n)))  # put back


@pytest.mark.parametrize("n", [4, 512])
@pytest.mark.parametrize("fix", ["fixed", "quoted"])
def test_the_momentum_fix_replays_as_eager_calls_do(n, fix):
    m, twin = Momentum(n), Momentum(n)
    graph = cv.capture(getattr(m, fix), cv.spec((n, n), "float64"))
    for i in range(2):
        g = np.full((n, n), 1.0 + i)
        graph.replay({"g": g})
        twin.step(g)
        assert np.array_equal(m.W, twin.W) and np.array_equal(m.v, twin.v)


def test_a_large_array_read_and_not_written_is_captured():
    W = np.ones((512, 512))

    def layer(x):
        return x @ W

    graph = cv.capture(layer, cv.spec((512,), "float64"))
    assert graph.complete and W[0, 0] == 1.0


def test_a_function_that_writes_only_through_tensors_is_not_refused():
    W = np.ones(3)
    lr = np.full(1, 0.5)  # read, never written

    def sgd(g):
        np.subtract(W, lr * g, out=W)
        return g * 1.0

    graph = cv.capture(sgd, cv.spec((3,), "float64"))
    assert graph.complete and W.tolist() == [1.0, 1.0, 1.0] and lr.tolist() == [0.5]


class CallableStep:
    """``cv.capture(obj)``: its class's ``__call__`` and its attributes are walked as a bound
    method's are (capviz/trace/rebound.py), for the copies and for the rebinding check."""

    def __init__(self):
        self.n = np.zeros(1)
        self.W = np.ones(3)
        self.rebind = False

    def __call__(self, x):
        if self.rebind:
            self.W = self.W - 0.5 * x
        else:
            self.n += 1.0
        return x * 1.0


def test_a_callable_objects_attributes_are_walked_too():
    step = CallableStep()
    with pytest.raises(UnsupportedOperationError, match=r"^`self\.n \+= 1\.0` at .* in __call__: "
                                                        r"NumPy's own operators wrote the "
                                                        r"outside ndarray self\.n,"):
        cv.capture(step, cv.spec((3,), "float64"))
    assert step.n.tolist() == [0.0]
    step.rebind = True  # (a rebind state since 7cbd9bc: refused here only while the
    graph = cv.capture(step, cv.spec((3,), "float64"))  # refusal above was not collected)
    assert "state step.W : float64[3], bound to a new array each replay" in str(graph)
    W = step.W
    assert type(W) is np.ndarray and W.tolist() == [1.0, 1.0, 1.0]
    graph.replay({"x": np.ones(3)})
    assert step.W is not W and step.W.tolist() == [0.5, 0.5, 0.5] and W.tolist() == [1.0] * 3


class ScopeMomentum:
    """/tmp/review3/s2scope.py: SGD with momentum in the scope form (review 3, finding 1):
    NumPy's own ``+=`` carried the NaN mark of the written state ``v`` into ``W``, and the
    scope exited with ``W`` all NaN and nothing refused."""

    def __init__(self):
        self.W = np.linspace(-1, 1, 4)
        self.v = np.zeros(4)

    def step(self, g):
        self.v -= 0.1 * g
        self.W += self.v
        return g * 1.0

    def fixed(self, g):  # the message's fix
        self.v -= 0.1 * g
        self.W += cv.constant(self.v)
        return g * 1.0


def test_the_scope_form_refuses_an_array_numpy_wrote_from_a_marked_state_and_puts_it_back():
    m = ScopeMomentum()
    before = m.W.copy()
    with pytest.raises(UnsupportedOperationError) as info:
        with cv.CaptureDevice().capture_scope() as scope:
            scope.output(m.step(scope.input("g", (4,), "float64")))
    line = test_the_scope_form_refuses_an_array_numpy_wrote_from_a_marked_state_and_puts_it_back \
        .__code__.co_firstlineno + 4
    what, why, fix = _lines(info.value)
    assert what == (f"an outside array NumPy wrote unseen at {__file__}:{line} in "
                    "test_the_scope_form_refuses_an_array_numpy_wrote_from_a_marked_state_and_"
                    "puts_it_back: NumPy's own operators wrote the outside ndarray m.W, a write "
                    "no state of the graph records.")
    assert why == ("capviz cannot record it: NumPy changed the array's memory without meeting "
                   "a tensor, so no hook saw the write and no replay would make it (NumPy "
                   "computed it from m.v, which held capviz's NaN mark once the capture wrote "
                   "it, so it held [-1. -0.333333 0.333333 1. ] (float64[4]) when the capture "
                   "wrote m.v and NumPy made it [nan nan nan nan] (float64[4]); the capture put "
                   "it back).")
    assert fix == ("Fix: write m.W from tensors: read m.v through cv.constant once the capture "
                   "wrote it (m.W += cv.constant(m.v) for m.W += m.v), or pass m.W as an input "
                   "and return its new value.")
    assert m.W.tobytes() == before.tobytes() and m.v.tolist() == [0.0] * 4
    assert info.value.graph.violation_records[-1].call == outside_writes.OUTSIDE


def test_the_scope_forms_fix_replays_as_eager_calls_do():
    m, twin = ScopeMomentum(), ScopeMomentum()
    with cv.CaptureDevice().capture_scope() as scope:
        scope.output(m.fixed(scope.input("g", (4,), "float64")))
    assert sorted(n.name for n in scope.graph.state_nodes) == ["m.W", "m.v"]
    for i in range(2):
        g = np.full(4, 1.0 + i)
        scope.graph.replay({"g": g})
        twin.step(g)
        assert m.W.tobytes() == twin.W.tobytes() and m.v.tobytes() == twin.v.tobytes()


def test_a_scope_that_writes_no_state_notes_no_outside_array():
    m = ScopeMomentum()
    with cv.CaptureDevice().capture_scope() as scope:
        x = scope.input("g", (4,), "float64")
        scope.output(x * m.W)
        assert scope.recorder.marked_outside is None
    assert scope.graph.complete
