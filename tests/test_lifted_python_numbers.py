"""Python numbers an object keeps across calls, updated from tensors, replay as Python numbers
(ruling 39 14:10, #20, lifted Python numbers; capviz/trace/kept_numbers.py): an AverageMeter
(``self.sum += loss.item() * n; self.count += n; self.avg = self.sum / self.count``),
``self.correct += int((pred == y).sum())``, ``self.best = min(self.best, float(loss))``. Each is
a state of the graph (float64 for a float, int64 for an int), read from the object when a
replay starts and written back as its Python type, with Python's arithmetic (``python_number``
nodes: an int never wraps, ``int / int`` is Python's quotient, ``min``/``max`` keep Python's
NaN order). Before (7c07ffd): each of these was refused at the read ("Fix: keep self.correct in
a 0-d array ...")."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

import capviz as cv
from capviz.core.errors import ReplayError, ReplayInputError

ROWS = np.random.default_rng(39).standard_normal((5, 4))
ROWS[3, 1] = np.nan  # (a NaN loss on the fourth call)


class Meter:
    def __init__(self):
        self.sum = 0.0
        self.count = 0
        self.avg = 0.0

    def step(self, x):
        loss = (x * x).mean()
        n = x.shape[0]
        self.sum += loss.item() * n
        self.count += n
        self.avg = self.sum / self.count
        return x * 2.0


class Accuracy:
    def __init__(self):
        self.correct = 0
        self.seen = 0
        self.rate = 0.0

    def step(self, x):
        pred = x > 0
        self.correct += int((pred == (x > 0.5)).sum())
        self.seen += x.shape[0]
        self.rate = self.correct / self.seen  # (int / int: Python's quotient)
        return x * 2.0


class Best:
    def __init__(self):
        self.best = float("inf")
        self.worst = -float("inf")

    def step(self, x):
        loss = (x * x).sum()
        self.best = min(self.best, float(loss))
        self.worst = max(loss.item(), self.worst)
        return x * 2.0


class Ema:
    def __init__(self):
        self.ema = 0.0

    def step(self, x):
        self.ema = 0.9 * self.ema + 0.1 * (x * x).mean().item()
        return x / (1.0 + abs(self.ema))


def _same(a, b):
    if type(a) is not type(b):
        return False
    if type(a) is float:
        return (a == b and math.copysign(1, a) == math.copysign(1, b)) or (a != a and b != b)
    return a == b


def _replays_as_eager(kind, warm, example, compiled=False, rows=ROWS):
    mine, eager = kind(), kind()
    if warm:
        mine.step(rows[0])
        eager.step(rows[0])
    graph = cv.capture(mine.step, rows[0] if example else cv.spec((4,), str(rows.dtype)))
    assert graph.state_nodes and {n.params["python"] for n in graph.state_nodes} <= \
        {"float", "int"}
    run = graph.compile() if compiled else None
    for x in rows[1:]:
        got = run(x)[0] if compiled else graph.replay({"x": x})["out"]
        want = eager.step(x)
        assert got.tobytes() == want.tobytes() and got.dtype == want.dtype
        for name, value in vars(eager).items():
            assert _same(getattr(mine, name), value), (name, getattr(mine, name), value)
    return mine


@pytest.mark.parametrize("example", [False, True])
@pytest.mark.parametrize("warm", [False, True])
@pytest.mark.parametrize("kind", [Meter, Accuracy, Best, Ema])
def test_a_kept_python_number_replays_as_eager_with_its_type(kind, warm, example):
    """Four calls against eager (one of them a NaN loss), cold and warm, values and types
    (``type(m.sum) is float``, ``type(m.count) is int``). Before: refused at the read."""
    mine = _replays_as_eager(kind, warm, example)
    if kind is Meter:
        assert type(mine.sum) is float and type(mine.count) is int and type(mine.avg) is float


def test_a_compiled_replay_writes_them_back_too():
    _replays_as_eager(Meter, True, False, compiled=True)


def test_a_float32_loss_is_read_as_python_reads_it():
    """``.item()`` of a float32 scalar is the Python float of its value (exact in float64)."""
    _replays_as_eager(Meter, False, False, rows=ROWS.astype(np.float32))


@pytest.mark.parametrize("losses", [[3.0, float("nan"), 1.0], [float("nan"), 2.0, 1.0],
                                    [0.0, -0.0, 0.0], [2.0, float("nan"), float("nan")]])
def test_min_and_max_keep_python_s_nan_order(losses):
    """``min(best, nan)`` is best, ``min(nan, x)`` is nan (``b if b < a else a``), not
    np.minimum's NaN nor np.fmin's; ``-0.0`` against ``0.0`` as Python's."""
    mine, eager = Best(), Best()
    mine.best = eager.best = losses[0]
    graph = cv.capture(mine.step, cv.spec((1,), "float64"))
    for loss in losses[1:]:
        x = np.array([math.sqrt(loss) if loss == loss and loss > 0 else loss])
        graph.replay({"x": x})
        eager.step(x)
        assert _same(mine.best, eager.best) and _same(mine.worst, eager.worst)


def test_the_user_s_own_edit_between_replays_is_read():
    mine, eager = Meter(), Meter()
    graph = cv.capture(mine.step, cv.spec((4,), "float64"))
    for x in ROWS:
        graph.replay({"x": x})
        eager.step(x)
        mine.sum = eager.sum = 5.0  # (a reset, as an epoch's start)
        mine.count = eager.count = 1
    graph.replay({"x": ROWS[0]})
    eager.step(ROWS[0])
    assert (mine.sum, mine.count, mine.avg) == (eager.sum, eager.count, eager.avg)


def test_an_int_past_int64_fails_at_its_node():
    """Python's int never wraps: the graph's int64 is checked where it is computed, and the
    replay fails there, naming the node and the line (eager: 2**63 + 1, exactly)."""
    mine = Accuracy()
    mine.seen = 2 ** 63 - 3
    graph = cv.capture(mine.step, cv.spec((4,), "float64"))
    with pytest.raises(ReplayError) as info:
        graph.replay({"x": ROWS[0]})
    message = str(info.value)
    assert re.search(r"replay failed at node %\d+ \(python_number\) of int64\[\], recorded at "
                     r"\S+test_lifted_python_numbers\.py:\d+ in step: OverflowError: Python int "
                     r"9223372036854775809 past int64", message), message
    assert mine.seen == 2 ** 63 - 3  # (left as it was)


def test_int_over_int_is_python_s_quotient():
    """``int / int`` is Python's exactly rounded quotient, not float64(a) / float64(b) (which
    rounds each int first): (2**60 + 49) / 7."""
    mine, eager = Accuracy(), Accuracy()
    mine.correct = eager.correct = 2 ** 60 + 49
    mine.seen = eager.seen = 3
    graph = cv.capture(mine.step, cv.spec((4,), "float64"))
    x = np.array([-1.0, -1.0, -1.0, -1.0])  # (no new correct: the quotient of the kept ints)
    graph.replay({"x": x})
    eager.step(x)
    assert mine.rate == eager.rate == (2 ** 60 + 49) / 7
    assert mine.rate != float(np.float64(2 ** 60 + 49) / np.float64(7))


@pytest.mark.parametrize("value, shown", [(True, "bool True"), (2.5, "float 2.5"),
                                          (np.int64(3), "int64 3")])
def test_a_kept_int_given_another_type_is_refused(value, shown):
    """A replay computes with the type the capture met: another (a bool, a float, a NumPy
    scalar), which eager Python would compute otherwise with, is refused by name."""
    mine = Meter()
    graph = cv.capture(mine.step, cv.spec((4,), "float64"))
    mine.count = value
    with pytest.raises(ReplayInputError) as info:
        graph.replay({"x": ROWS[0]})
    assert re.fullmatch(rf"self\.count holds {shown}, and the graph replays it as the Python int "
                        r"it held when captured \(recorded at \S+test_lifted_python_numbers\.py:"
                        r"\d+ in step\), with that type's arithmetic\. Fix: set it to an int, "
                        r"or capture again", str(info.value)), str(info.value)


class Kept:
    def __init__(self):
        self.best = float("inf")
        self.improved = False

    def step(self, x):
        prev = self.best
        self.best = min(self.best, float((x * x).sum()))
        self.improved = self.best < prev  # (a bool the call stores: not a kept number)
        return x * 2.0


def test_what_the_lifted_run_cannot_keep_is_refused_as_before():
    """A bool computed from them and stored, ``float(t)`` inside Python's own arithmetic: the
    lifted run is thrown away and the two captures refuse as before, at the read."""
    with pytest.raises(cv.CapvizError, match=r"`float\(\(x \* x\)\.sum\(\)\)` at \S+:\d+ in "
                                             r"step: updates a Python number the object keeps"):
        cv.capture(Kept().step, cv.spec((4,), "float64"))


class Counter:
    def __init__(self):
        self.count = 0
        self.t = 0
        self.seen = 0

    def step(self, x):
        self.count += 1
        self.t = self.t + 1
        self.seen += x.shape[0]
        return x * 2.0


@pytest.mark.parametrize("warm", [False, True])
def test_a_counter_alone_replays_as_a_python_int(warm):
    """R11 #11 (refusal of common code, d24473e): `self.count += 1` alone was refused ('a
    Python number that changes from call to call', fix: an ndarray) while the same counter
    beside `self.sum += loss.item()` replayed."""
    mine = _replays_as_eager(Counter, warm, False)
    assert type(mine.count) is int and type(mine.t) is int and type(mine.seen) is int


class Compared:
    def __init__(self):
        self.n = 0
        self.s = 0.0

    def step(self, x):
        self.n += (x * x).mean().item() > 0.5
        self.s += (x[0].item() > 0) * 0.5
        return x * 2.0


def test_a_comparison_of_an_item_replays_as_python_s():
    """``self.n += loss.item() > 3.0`` (an int plus a bool), ``(x[0].item() > 0) * 0.5``:
    Python's comparison and bool arithmetic (R11 #10's rows; refused before)."""
    mine = _replays_as_eager(Compared, False, False)
    assert type(mine.n) is int and type(mine.s) is float


def test_state_return_gives_the_numbers_as_python_numbers():
    """``state="return"`` leaves the object as it is and gives each kept number as the Python
    number eager code holds (``type(r.states["self.sum"]) is float``), which ``states=`` takes
    back, type checked: three replays chained against eager. Before: 0-d arrays
    (``{'self.sum': array(4.)}``), refused by ``states=`` ("expected an ndarray")."""
    mine, eager = Meter(), Meter()
    graph = cv.capture(mine.step, cv.spec((4,), "float64"))
    given = None
    for x in ROWS[:4]:
        result = graph.replay({"x": x}, state="return", states=given)
        eager.step(x)
        assert sorted(result.states) == [f"self.{k}" for k in sorted(vars(eager))]
        for name, value in vars(eager).items():
            assert _same(result.states[f"self.{name}"], value), name
        given = result.states
    assert vars(mine) == vars(Meter())  # (left as it was)
    with pytest.raises(ReplayInputError, match=r"self\.count holds float 4\.0, and the graph "
                                               r"replays it as the Python int"):
        graph.replay({"x": ROWS[0]}, state="return", states={**given, "self.count": 4.0})


class ResetMeter:
    """PyTorch's ImageNet AverageMeter reset to ints (``self.sum = 0``), updated in fn."""

    def __init__(self):
        self.sum = 0
        self.count = 0
        self.avg = 0

    def step(self, x):
        loss = (x * x).mean()
        n = x.shape[0]
        self.sum += loss.item() * n
        self.count += n
        self.avg = self.sum / self.count
        return x * 2.0


@pytest.mark.parametrize("example", [False, True])
@pytest.mark.parametrize("warm", [False, True])
def test_a_meter_reset_to_int_zero_replays_as_eager(warm, example):
    """Cold, the sum and avg are the int 0 and the call makes them floats (``0 + 3.2``):
    lifted as floats read from the int as Python's ``int + float`` converts it (every use of
    it makes it a float first, checked), four calls against eager with their types. Before
    (d24473e): refused at the read, with the fix ``np.array(self.sum, dtype=float)``."""
    mine = _replays_as_eager(ResetMeter, warm, example)
    assert type(mine.sum) is float and type(mine.count) is int and type(mine.avg) is float


def test_a_meter_reset_to_int_zero_between_replays_is_read_as_python_does():
    mine, eager = ResetMeter(), ResetMeter()
    graph = cv.capture(mine.step, cv.spec((4,), "float64"))
    for k, x in enumerate(ROWS):
        if k == 2:  # (an epoch's start: reset to ints)
            mine.sum = eager.sum = 0
            mine.count = eager.count = 0
        graph.replay({"x": x})
        eager.step(x)
        for name, value in vars(eager).items():
            assert _same(getattr(mine, name), value), (name, getattr(mine, name), value)


class IntItems:
    def __init__(self):
        self.total = 0

    def step(self, x):
        self.total += (x > 0).sum().item()  # (an int tensor's .item(): int + int)
        return x * 2.0


def test_an_int_kept_from_an_int_item_stays_an_int():
    """``.item()`` of an int tensor into an int: no float is made, so the int is kept as an
    int (the guess of a float is checked and dropped): four calls exact, ``type`` int."""
    mine = _replays_as_eager(IntItems, False, False)
    assert type(mine.total) is int


class InlinedMeter:
    """PyTorch's ImageNet AverageMeter (reset to ints) with its update inlined in fn."""

    def __init__(self):
        self.val = 0
        self.avg = 0
        self.sum = 0
        self.count = 0

    def step(self, x):
        loss = (x * x).mean()
        n = x.shape[0]
        val = loss.item()
        self.val = val
        self.sum += val * n
        self.count += n
        self.avg = self.sum / self.count
        return x * 2.0


class StoredItems:
    def __init__(self):
        self.val = 0.0
        self.positives = 0

    def step(self, x):
        self.val = (x * x).mean().item()
        self.positives = (x > 0).sum().item()  # (an int tensor's: an int)
        return x * 2.0


@pytest.mark.parametrize("example", [False, True])
@pytest.mark.parametrize("warm", [False, True])
@pytest.mark.parametrize("kind", [InlinedMeter, StoredItems])
def test_a_number_set_from_an_item_each_call_replays_as_eager(kind, warm, example):
    """R12 #4's rest: ``self.val = val`` (``val = loss.item()``) and ``self.val = t.item()``:
    a kept number set from a tensor each call (a state whose new value is the item, as a
    Python number), four calls against eager with a NaN loss, types included. Before: refused
    (at the read from a spec; at every replay from an example: 'another branch')."""
    mine = _replays_as_eager(kind, warm, example)
    assert type(mine.val) is float


@pytest.mark.parametrize("kind", [Meter, InlinedMeter])
def test_a_float_reset_to_int_zero_after_a_warm_capture_is_read_as_python_does(kind):
    """R12 #14: a meter captured warm (its sum a float) and reset to the int ``0`` between
    replays (an epoch's start) is read as Python's ``0 + 3.2`` reads it: every use of the
    sum makes it a float first (checked when captured). Before: refused 'set it to a float'."""
    mine, eager = kind(), kind()
    mine.step(ROWS[0])
    eager.step(ROWS[0])
    graph = cv.capture(mine.step, cv.spec((4,), "float64"))
    for k, x in enumerate(ROWS[1:]):
        if k == 1:
            mine.sum = eager.sum = 0
            mine.count = eager.count = 0
        graph.replay({"x": x})
        eager.step(x)
        for name, value in vars(eager).items():
            assert _same(getattr(mine, name), value), (name, getattr(mine, name), value)
