"""No capture tensor is left in what ``cv.capture(fn)`` can reach by name (capviz/trace/rebound.py;
review 3, findings 10, 17, 19 and 4): a tuple or list of capture tensors bound to an attribute
is refused at its line and the original put back; an item appended to a walked list, dict or
deque, or bound to an item the capture did not read, is taken out again (the container holds
what it held before the call), refused when arrays the graph read were moved on; an attribute
the capture added holding a tensor is removed."""

import types
from collections import deque

import numpy as np
import pytest

import capviz as cv
from capviz.core.errors import UnsupportedOperationError
from capviz.trace.tensor import Tensor


def _no_tensor(value, depth=4):
    """Whether no capviz Tensor is inside ``value`` (attributes, lists, tuples, dicts)."""
    if type(value) is Tensor:
        return False
    if depth == 0:
        return True
    if isinstance(value, dict):
        return all(_no_tensor(v, depth - 1) for v in value.values())
    if isinstance(value, (list, tuple, deque)):
        return all(_no_tensor(v, depth - 1) for v in value)
    if hasattr(value, "__dict__") and not isinstance(value, type):
        return all(_no_tensor(v, depth - 1) for v in vars(value).values())
    return True


class Cell:
    """An LSTM-like cell keeping ``(h, c)`` as a tuple attribute (review 3, s14)."""

    def __init__(self):
        self.state = (np.zeros(3), np.zeros(3))

    def step(self, x):
        h, c = self.state
        c = 0.5 * c + x
        h = np.tanh(c)
        self.state = (h, c)
        return h


def test_a_tuple_of_capture_tensors_bound_to_an_attribute_is_refused_and_put_back():
    cell = Cell()
    before = cell.state
    with pytest.raises(UnsupportedOperationError) as info:
        cv.capture(cell.step, np.ones(3))
    message = str(info.value)
    assert "self.state is rebound to a value of the capture" in message
    assert "test_rebound_containers.py" in message
    assert "Fix: keep each value in an ndarray written in place (self.h[...] = h)" in message
    assert cell.state is before and _no_tensor(cell)


class Rotating:
    """Frames rotated into a new list (review 3, s15 ListStack)."""

    def __init__(self):
        self.frames = [np.zeros(2), np.ones(2), np.full(2, 2.0)]

    def step(self, obs):
        self.frames[0] = obs * 1.0
        self.frames = self.frames[1:] + self.frames[:1]
        return np.stack(self.frames).sum(0)


def test_a_new_list_of_capture_tensors_bound_to_an_attribute_is_refused():
    r = Rotating()
    frames = r.frames
    items = list(frames)
    with pytest.raises(UnsupportedOperationError, match=r"self\.frames is rebound"):
        cv.capture(r.step, np.ones(2))
    assert r.frames is frames and all(a is b for a, b in zip(frames, items))
    assert _no_tensor(r)


class Stacked:
    """Frames in a deque(maxlen=2), appended to (review 3, s15 Deque)."""

    def __init__(self):
        self.frames = deque([np.zeros(2), np.ones(2)], maxlen=2)

    def step(self, obs):
        self.frames.append(obs * 1.0)
        return np.stack(list(self.frames)).sum(0)


def test_a_deque_whose_read_frames_a_capture_tensor_moved_on_is_refused_and_put_back():
    s = Stacked()
    items = list(s.frames)
    with pytest.raises(UnsupportedOperationError) as info:
        cv.capture(s.step, np.ones(2))
    message = str(info.value)
    assert "self.frames is rebound to a value of the capture" in message
    assert "Fix: keep the values in one ndarray written in place" in message
    assert [id(a) for a in s.frames] == [id(a) for a in items] and _no_tensor(s)


class Ring:
    """A ring-buffer slot written with a value computed from the input (review 3, s15 Ring):
    a call stores it and a replay could not, so it is refused (review 3, finding 34: c8985fd
    put it back silently), and the slot gets its array back. The fix, a write into the slot's
    array, replays as calls do."""

    def __init__(self):
        self.frames = [np.zeros(2), np.ones(2), np.full(2, 2.0)]

    def step(self, obs):
        self.frames[2] = obs * 1.0
        return np.stack(self.frames).sum(0)

    def fixed(self, obs):  # (np.stack of the ndarrays would be NumPy's own read: refused)
        self.frames[2][...] = obs * 1.0
        return np.stack([obs * 0.0 + f for f in self.frames]).sum(0)


def test_a_ring_buffer_slot_stored_over_is_refused_and_gets_its_array_back():
    r = Ring()
    items = list(r.frames)
    with pytest.raises(UnsupportedOperationError) as info:
        cv.capture(r.step, np.ones(2))
    what, _why, fix = str(info.value).splitlines()
    assert what.endswith("in step: self.frames[2] is rebound to a value of the capture.")
    assert fix == ("Fix: write the new value into the array in place (a[...] = value, or a -= "
                   "d), which the capture records as a state, or return it.")
    assert all(a is b for a, b in zip(r.frames, items)) and _no_tensor(r)
    del items
    graph = cv.capture(r.fixed, np.ones(2))
    twin = Ring()
    for v in (3.0, 4.0):
        x = np.full(2, v)
        assert np.array_equal(graph.replay({"obs": x})["out"], twin.fixed(x))
        assert all(np.array_equal(a, b) for a, b in zip(r.frames, twin.frames))


class Optimiser:
    """An EMA kept on a sub-object (review 3, s33): ``self.opt.m = 0.9 * self.opt.m + ...``."""

    def __init__(self):
        self.opt = types.SimpleNamespace(m=np.zeros(3))

    def step(self, g):
        self.opt.m = 0.9 * self.opt.m + 0.1 * g
        return g * 1.0


def test_an_attribute_of_a_sub_object_stored_over_is_refused_and_put_back():
    o = Optimiser()
    kept = o.opt.m
    with pytest.raises(UnsupportedOperationError, match=r"self\.opt\.m is rebound"):
        cv.capture(o.step, cv.spec((3,), "float64"))
    assert o.opt.m is kept and not kept.any()


def test_a_scratch_list_emptied_and_filled_again_is_not_refused():
    calls = [np.zeros(2), np.zeros(2)]  # what an earlier eager call left

    def fn(x):
        calls.clear()
        calls.append(x * 2.0)
        calls.append(x * 3.0)
        return calls[0] + calls[1]

    items = list(calls)
    graph = cv.capture(fn, cv.spec((2,), "float64"))
    assert graph.complete and all(a is b for a, b in zip(calls, items))


class Logger:
    """A training step that logs its loss (review 3, s8b)."""

    def __init__(self):
        self.W = np.ones(3)
        self.history = []
        self.stats = {}

    def step(self, x):
        loss = ((x * self.W) ** 2).sum()
        self.history.append(loss)
        self.stats["last"] = loss
        self.W -= 0.1 * x
        return loss


def test_a_logged_value_is_taken_out_of_the_list_and_dict_again():
    log = Logger()
    log.history.append(1.5)
    graph = cv.capture(log.step, cv.spec((3,), "float64"))
    assert graph.complete and len(graph.state_nodes) == 1
    assert log.history == [1.5] and log.stats == {} and _no_tensor(log)
    assert np.mean(log.history) == 1.5  # the user's own code after the capture
    assert np.array_equal(log.W, np.ones(3))


class Linear:
    """A layer keeping its input and gradients on self (review 3, s21)."""

    def __init__(self, declared):
        self.W = np.full((3, 2), 0.5)
        if declared:
            self.x = None
            self.dW = None

    def forward(self, x):
        self.x = x
        return x @ self.W

    def backward(self, dout):
        self.dW = self.x.T @ dout
        return dout @ self.W.T


class Net:
    def __init__(self, declared):
        self.l1 = Linear(declared)

    def step(self, x):
        out = self.l1.forward(x)
        self.l1.backward(out)
        self.l1.W -= 0.1 * self.l1.dW
        return out


@pytest.mark.parametrize("declared", [True, False])
def test_activations_and_gradients_kept_on_self_are_taken_back(declared):
    net = Net(declared)
    x = np.ones((4, 3))
    graph = cv.capture(net.step, x)
    assert _no_tensor(net)
    if declared:
        assert net.l1.x is None and net.l1.dW is None
    else:
        assert not hasattr(net.l1, "x") and not hasattr(net.l1, "dW")
    twin = Net(declared)
    for _ in range(2):
        assert np.array_equal(graph.replay({"x": x})["out"], twin.step(x))
    assert np.array_equal(net.l1.W, twin.l1.W)


class Scalar:
    def __init__(self):
        self.W = np.ones(3)
        self.last_loss = 0.0

    def step(self, x):
        loss = ((x * self.W) ** 2).sum()
        self.last_loss = loss
        self.W -= 0.1 * x
        return loss


def test_an_attribute_that_held_a_number_is_set_by_each_replay():
    """Refused before this stop ('keep it a result: return it'; review 7, finding 20): the
    last loss kept on an attribute no line reads is set by each replay, as each call sets it."""
    s, twin = Scalar(), Scalar()
    graph = cv.capture(s.step, cv.spec((3,), "float64"))
    assert s.last_loss == 0.0 and type(s.last_loss) is float  # the capture changes nothing
    for k in range(2):
        x = np.arange(3.0) + k
        graph.replay({"x": x})
        twin.step(x)
        assert type(s.last_loss) is type(twin.last_loss) and s.last_loss == twin.last_loss
        assert np.array_equal(s.W, twin.W)


# --- where the walk looks (review 3, finding 4) ------------------------------------------------


class Model:
    def __init__(self):
        self.W = np.ones(3)


def sgd(model, g):
    model.W = model.W - 0.5 * g
    return g * 2.0


@pytest.mark.parametrize("bound", ["positional", "keyword"])
def test_a_functools_partial_s_arguments_are_walked(bound):
    import functools

    m = Model()
    W = m.W
    fn = functools.partial(sgd, m) if bound == "positional" else functools.partial(
        lambda g, model: sgd(model, g), model=m)
    with pytest.raises(UnsupportedOperationError, match=r"model\.W is rebound"):
        cv.capture(fn, cv.spec((3,), "float64"))
    assert m.W is W


class Slotted:
    __slots__ = ("W",)

    def __init__(self):
        self.W = np.ones(3)

    def step(self, g):
        self.W = self.W - g
        return g * 1.0


def test_a_slots_object_s_attributes_are_walked():
    m = Slotted()
    W = m.W
    with pytest.raises(UnsupportedOperationError, match=r"self\.W is rebound"):
        cv.capture(m.step, cv.spec((3,), "float64"))
    assert m.W is W


class Many:
    def __init__(self):
        self.ws = [np.ones(3) for _ in range(300)]

    def step(self, g):
        for i in range(len(self.ws)):
            self.ws[i] = self.ws[i] - g
        return g * 1.0


def test_every_item_of_a_long_list_gets_its_array_back():
    m = Many()
    items = list(m.ws)
    with pytest.raises(UnsupportedOperationError, match=r"self\.ws\[0\] is rebound"):
        cv.capture(m.step, cv.spec((3,), "float64"))
    assert all(a is b for a, b in zip(m.ws, items)) and _no_tensor(m)


def test_an_attribute_of_a_user_module_the_function_names_is_walked(tmp_path, monkeypatch):
    (tmp_path / "rebound_params.py").write_text("import numpy as np\nW = np.ones(3)\n")
    (tmp_path / "rebound_step.py").write_text(
        "import rebound_params as params\n\n\n"
        "def sgd(g):\n    params.W = params.W - 0.5 * g\n    return g * 2.0\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import rebound_params
    import rebound_step

    W = rebound_params.W
    with pytest.raises(UnsupportedOperationError, match=r"params\.W is rebound"):
        cv.capture(rebound_step.sgd, cv.spec((3,), "float64"))
    assert rebound_params.W is W


# --- a buffer made lazily (review 3, finding 12) -----------------------------------------------


class Attention:
    def __init__(self, declared=True):
        if declared:
            self.mask = None

    def step(self, x):
        if getattr(self, "mask", None) is None:
            self.mask = np.tril(np.ones((4, 4)))  # built on the first call, cached
        return (x @ x.T) * self.mask


@pytest.mark.parametrize("declared", [True, False])
def test_a_buffer_made_lazily_from_constants_is_bound_as_a_call_binds_it(declared):
    m = Attention(declared)
    x = np.arange(8.0).reshape(4, 2)
    graph = cv.capture(m.step, x)
    assert type(m.mask) is np.ndarray and np.array_equal(m.mask, np.tril(np.ones((4, 4))))
    twin = Attention(declared)
    assert np.array_equal(graph.replay({"x": x})["out"], twin.step(x))
    assert np.array_equal(m.step(x), twin.step(x))  # the user's next call, as after a call


class Scaled:
    """A buffer made lazily from an input is no constant: refused, the original kept."""

    def __init__(self):
        self.scale = None

    def step(self, x):
        if self.scale is None:
            self.scale = x * 2.0
        return x * self.scale


def test_a_buffer_made_lazily_from_an_input_is_refused():
    m = Scaled()
    with pytest.raises(UnsupportedOperationError, match=r"self\.scale is rebound"):
        cv.capture(m.step, np.ones(3))
    assert m.scale is None


class Decayed:
    """A value computed from an outside array the capture read (not from constants it made):
    a value of this call, refused."""

    def __init__(self):
        self.W = np.ones(3)
        self.W2 = None

    def step(self, x):
        self.W2 = cv.constant(self.W) * 2.0
        return x * 1.0


def test_an_array_computed_from_an_outside_array_is_set_by_each_replay():
    """Refused before this stop: an attribute that held None, set to a value of the data no
    line reads back, is set by each replay (the constant read by reference, as ever)."""
    m, twin = Decayed(), Decayed()
    graph = cv.capture(m.step, np.ones(3))
    assert m.W2 is None
    graph.replay({graph.inputs[0]: np.ones(3)})
    twin.step(np.ones(3))
    assert np.array_equal(m.W2, twin.W2) and m.W2 is not m.W


# --- a Python number the call changes (review 3, finding 25) -----------------------------------


class Annealed:
    """A step counter with no array state: the graph would freeze t at 1."""

    def __init__(self):
        self.t = 0

    def step(self, x):
        self.t += 1
        return x / np.sqrt(self.t)


def test_a_python_number_the_call_changes_is_refused_and_put_back():
    m = Annealed()
    with pytest.raises(UnsupportedOperationError) as info:
        cv.capture(m.step, np.ones(3))
    what, why, fix = str(info.value).splitlines()
    assert what.endswith("self.t is a Python number that changes from call to call.")
    assert "(the call changes self.t (0 -> 1) every time it runs" in why
    assert fix.startswith("Fix: pass it as an input")
    assert m.t == 0 and type(m.t) is int


def test_a_python_number_the_call_sets_to_the_same_value_is_no_change():
    class Same:
        def __init__(self):
            self.scale = 2.0

        def step(self, x):
            self.scale = float(self.scale)  # another object, the same number
            return x * self.scale

    m = Same()
    graph = cv.capture(m.step, np.ones(3))
    assert graph.complete and m.scale == 2.0
