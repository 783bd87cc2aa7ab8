"""Common logging code in training loops replays exactly as eager, or is refused at the user's
line with the one fix that applies, and the fix, applied, replays exactly (issue #20, stop 37):
a 0-d ndarray logged (review 7, finding 23), ``losses.append(loss.item())`` (review 8, finding
18), a dict or a tuple holding a tensor appended (``history.append({"loss": l})``, ``(step,
loss)``), an AverageMeter on Python floats, a cold ``setdefault(k, []).append``.
Each replay is compared with an eager twin: outputs, and the containers' items with their types
(``np.float64`` is not a 0-d ndarray, a tuple is not a list)."""

from __future__ import annotations

import collections
import inspect
import math

import numpy as np
import pytest

import capviz as cv
from capviz.core.errors import DataReadError, UnsupportedOperationError
from tests.helpers.twins import same

SPEC = cv.spec((3,), "float64")
XS = [np.array([1.0, 2.0, 3.0]), np.array([0.5, -1.0, 2.0]), np.array([3.0, 1.0, -2.0])]


def _replays_as_eager(make, world, given=SPEC, warm=False):
    """Capture ``make()``'s step (after one eager call on both twins where ``warm``), then
    replay it and call the eager twin on each of XS: outputs and ``world(obj)`` the same."""
    eager, captured = make(), make()
    if warm:
        eager.step(XS[0])
        captured.step(XS[0])
    graph = cv.capture(captured.step, given)
    assert same(world(captured), world(eager))  # (the capture leaves them as it found them)
    for x in XS:
        out = graph.replay({"x": x})
        assert same(out[next(iter(out))], eager.step(x))
        assert same(world(captured), world(eager)), (world(captured), world(eager))
    return graph


class ZeroD:
    def __init__(self):
        self.log = []

    def step(self, x):
        self.log.append(np.asarray(x.sum()))
        self.log.append(np.array(x[1]))
        self.log.append(np.asarray(x.mean(), dtype=np.float32))
        self.log.append(x.sum())
        return x * 2.0


def test_a_logged_0d_ndarray_comes_back_a_0d_ndarray_as_eager():
    # review 7, finding 23: np.asarray(x.sum()) was logged back as np.float64
    for warm in (False, True):
        _replays_as_eager(ZeroD, lambda m: m.log, warm=warm)
    m = ZeroD()
    cv.capture(m.step, SPEC).replay({"x": XS[0]})
    assert [type(v) for v in m.log] == [np.ndarray, np.ndarray, np.ndarray, np.float64]
    assert m.log[2].dtype == np.float32 and m.log[2].shape == ()


class ItemLog:
    def __init__(self):
        self.losses = []
        self.ppl = []

    def step(self, x):
        loss = (x ** 2).mean()
        self.losses.append(loss.item())
        return x * 2.0

    def step_float(self, x):
        loss = (x ** 2).mean()
        self.losses.append(float(loss))
        return x * 2.0

    def step_exp(self, x):
        self.ppl.append(math.exp((x ** 2).mean()))
        return x * 2.0

    def step_two_lines(self, x):
        loss = (x ** 2).mean()
        value = loss.item()
        self.losses.append(value)
        return x * 2.0


class ItemLogFixed(ItemLog):  # the fix each refusal quotes, applied
    def step(self, x):
        loss = (x ** 2).mean()
        self.losses.append(loss)
        return x * 2.0

    def step_exp(self, x):
        self.ppl.append(np.exp((x ** 2).mean()))
        return x * 2.0


@pytest.mark.parametrize("method, fixed", [
    ("step", "self.losses.append(loss)"), ("step_float", "self.losses.append(loss)"),
    ("step_exp", "self.ppl.append(np.exp((x ** 2).mean()))")])
@pytest.mark.parametrize("given", [SPEC, XS[0]], ids=["spec", "example"])
def test_a_number_read_on_a_logging_line_is_refused_with_log_the_tensor(method, fixed, given):
    # review 8, finding 18: spec -> "capture with an example"; applied -> a guard, and every
    # replay on other data refused "another branch" (there is none)
    m = ItemLog()
    with pytest.raises(DataReadError) as err:
        cv.capture(getattr(m, method), given)
    message = str(err.value)
    assert "logs the value of" in message and "as a Python number" in message
    assert f"Fix: log the tensor itself: {fixed} " in message
    assert len(message.splitlines()) <= 3 and m.losses == [] and m.ppl == []
    step = "step_exp" if method == "step_exp" else "step"

    class Fixed(ItemLogFixed):
        pass

    Fixed.step = getattr(ItemLogFixed, step)
    _replays_as_eager(Fixed, lambda m: (m.losses, m.ppl), given=given)
    _replays_as_eager(Fixed, lambda m: (m.losses, m.ppl), given=given, warm=True)


def test_a_number_read_then_logged_is_refused_at_the_logging_line_with_its_fix():
    m = ItemLog()
    with pytest.raises(DataReadError, match="capture with an example array"):
        cv.capture(m.step_two_lines, SPEC)  # (its fix applied below)
    with pytest.raises(UnsupportedOperationError) as err:
        cv.capture(m.step_two_lines, XS[0])
    message = str(err.value)
    line = inspect.getsourcelines(ItemLog.step_two_lines)[1] + 3
    assert f"test_logging_idioms.py:{line}" in message.splitlines()[0]
    assert "self.losses is given a Python number read from a tensor" in message
    assert "(.item() at " in message
    assert "Fix: keep it the tensor (value = loss) and log that" in message
    assert m.losses == []

    class Fixed(ItemLog):
        def step(self, x):
            loss = (x ** 2).mean()
            value = loss
            self.losses.append(value)
            return x * 2.0

    _replays_as_eager(Fixed, lambda m: m.losses, given=XS[0])


class History:
    def __init__(self):
        self.history = []
        self.last = {}
        self.t = 0

    def step(self, x):
        loss = (x ** 2).mean()
        self.history.append({"loss": loss, "phase": "train", "parts": [x.sum(), x.max()]})
        self.history.append((0, loss))
        self.last["pair"] = ("step", x.min())
        return x * 2.0


def test_a_dict_or_tuple_holding_tensors_appended_is_built_by_each_replay():
    # R7 #20's remnants: refused before ("the call put a value of the capture among its items")
    for warm in (False, True):
        _replays_as_eager(History, lambda m: (m.history, m.last), warm=warm)
    m = History()
    graph = cv.capture(m.step, SPEC)
    text = str(graph)
    assert "log self.history.append {'loss': %" in text and "'phase': 'train'" in text
    graph.replay({"x": XS[1]})
    assert type(m.history[0]["loss"]) is np.float64 and type(m.history[1]) is tuple
    assert m.history[0]["parts"][0] == XS[1].sum() and m.last["pair"][1] == XS[1].min()


def test_a_logged_dict_holding_tensors_is_compiled_saved_and_returned(tmp_path):
    m = History()
    graph = cv.capture(m.step, SPEC)
    eager = History()
    eager.step(XS[1])
    graph.compile()(XS[1])
    assert same((m.history, m.last), (eager.history, eager.last))
    path = tmp_path / "g.json"
    graph.save(path)
    loaded = cv.load(path)
    assert "{'loss': %" in str(loaded)
    result = loaded.replay({"x": XS[1]}, state="return")
    logged = [v for k, v in result.states.items() if k.startswith("self.history")]
    assert same(logged, eager.history)


class Aliased:
    def __init__(self):
        self.a, self.b = [], []

    def step(self, x):
        record = {"loss": x.sum()}
        self.a.append(record)
        self.a.append(record)
        return x * 2.0


class AliasedTwo(Aliased):
    def step(self, x):
        record = {"loss": x.sum()}
        self.a.append(record)
        self.b.append(record)
        return x * 2.0


class AliasedFixed(Aliased):  # the fix: the second a copy
    def step(self, x):
        record = {"loss": x.sum()}
        self.a.append(record)
        self.b.append(dict(record))
        return x * 2.0


@pytest.mark.parametrize("make, where", [(Aliased, "twice into it"),
                                         (AliasedTwo, "into two containers")])
def test_one_dict_logged_twice_is_refused_at_its_line(make, where):
    # review 9, finding 11 (silent, two lists): eager a[-1] is b[-1], replays built two dicts
    with pytest.raises(UnsupportedOperationError) as err:
        cv.capture(make().step, SPEC)
    message = str(err.value)
    assert f"one list or dict holding values of the capture that the call logs {where}" \
        in message
    assert "Fix: log a new one each time (the second a copy: dict(rec), list(rec))" in message
    _replays_as_eager(AliasedFixed, lambda m: (m.a, m.b))


NO_SOURCE = """
class Hist:
    def __init__(self):
        self.hist = {}
        self.pairs = {}

    def step(self, x):
        self.hist.setdefault("loss", []).append(x.sum())
        return x * 2.0

    def pair(self, x):
        if "p" not in self.pairs:
            self.pairs["p"] = ("first", x.sum())
        return x * 2.0
"""


@pytest.mark.parametrize("method", ["step", "pair"])
def test_a_value_made_at_a_key_in_code_with_no_source_text_is_refused(method):
    # review 9, finding 12 (silent): with no line to read, a test of the key is not seen; each
    # replay made a new list where eager calls add to the first
    space: dict = {}
    exec(compile(NO_SOURCE, "<generated>", "exec"), space)
    m = space["Hist"]()
    with pytest.raises(UnsupportedOperationError, match="at a key that held nothing"):
        cv.capture(getattr(m, method), SPEC)
    assert m.hist == {} and m.pairs == {}


class Cold:
    def __init__(self):
        self.m = {}
        self.d = collections.defaultdict(list)

    def step(self, x):
        self.m.setdefault("loss", []).append(x.sum())
        return x * 2.0

    def step_default(self, x):
        self.d["loss"].append(x.sum())
        return x * 2.0


@pytest.mark.parametrize("method, label", [("step", "self.m['loss']"),
                                           ("step_default", "self.d['loss']")])
def test_a_list_made_at_a_key_on_the_first_call_is_refused_with_create_it_first(method, label):
    # the cold setdefault(k, []).append / defaultdict(list): refused before with "return the
    # value ... or keep it in an ndarray", neither of which applies
    m = Cold()
    with pytest.raises(UnsupportedOperationError) as err:
        cv.capture(getattr(m, method), SPEC)
    message = str(err.value)
    assert "given a new list or dict at a key that held nothing" in message
    assert f"Fix: create {label} before the capture (in __init__, or by one eager call)" \
        in message
    assert m.m == {} and dict(m.d) == {} and len(message.splitlines()) <= 3

    class Fixed(Cold):  # the fix applied: created in __init__
        def __init__(self):
            super().__init__()
            self.m["loss"] = []
            self.d["loss"] = []

        step = getattr(Cold, method)

    _replays_as_eager(Fixed, lambda m: (m.m, dict(m.d)))
    _replays_as_eager(Cold, lambda m: (m.m, dict(m.d)), warm=True)  # (or one eager call)


class Counted:
    def __init__(self):
        self.history = []

    def step(self, x):
        self.history.append({"loss": x.sum(), "n": len(self.history)})
        return x * 2.0


def test_a_logged_dict_reading_the_list_it_grows_is_refused():
    # (built by each replay, n would be 0 each time where the calls count 0, 1, 2...)
    with pytest.raises(UnsupportedOperationError, match="self.history is a list that grows"):
        cv.capture(Counted().step, SPEC)


class Spellings:
    def __init__(self):
        self.hist = []
        self.d = {"loss": []}
        self.buf = np.zeros(4)

    def plus_eq(self, x):
        loss = (x ** 2).mean()
        self.hist += [loss.item()]
        return x * 2.0

    def chained(self, x):
        loss = (x ** 2).mean()
        self.d.setdefault("loss", []).append(loss.item())
        return x * 2.0

    def flag(self, x):
        self.hist.append(bool(x.any()))
        return x * 2.0

    def listed(self, x):
        self.hist.append(x.tolist())
        return x * 2.0

    def stored(self, x):
        self.d["s"] = float(x.std())
        return x / self.d["s"]

    def printed(self, x):
        print(f"loss {(x ** 2).mean().item():.3f}", end="")
        return x * 2.0

    def sliced(self, x):  # an int() read as a slice bound on an appending line: no log
        n = x[0]
        self.hist.append(x[: int(n)] * 1.0)
        return x * 2.0


class SpellingsFixed(Spellings):  # each fix as the message quotes it
    def plus_eq(self, x):
        loss = (x ** 2).mean()
        self.hist.extend([loss])
        return x * 2.0

    def chained(self, x):
        loss = (x ** 2).mean()
        self.d.setdefault("loss", []).append(loss)
        return x * 2.0

    def flag(self, x):
        self.hist.append(x.any())
        return x * 2.0

    def listed(self, x):
        self.hist.append(x)
        return x * 2.0

    def stored(self, x):
        self.d["s"] = x.std()
        return x / self.d["s"]


@pytest.mark.parametrize("method, fix", [
    ("plus_eq", "log the tensor itself: self.hist.extend([loss]) (each replay logs NumPy's scalar"),
    ("chained", "log the tensor itself: self.d.setdefault(\"loss\", []).append(loss) ("),
    ("flag", "log the tensor itself: self.hist.append(x.any()) (each replay logs NumPy's bool"),
    ("listed", "log the tensor itself: self.hist.append(x) (each replay logs a new ndarray"),
    ("stored", "log the tensor itself: self.d[\"s\"] = x.std() ("),
    ("printed", "print after the replay: return the value from the function")])
@pytest.mark.parametrize("given", [SPEC, XS[0]], ids=["spec", "example"])
def test_each_logging_spelling_of_a_read_is_refused_with_its_fix_and_the_fix_replays(
        method, fix, given):
    # review 9, finding 10: these still said "capture with an example", or failed every replay
    with pytest.raises(DataReadError) as err:
        cv.capture(getattr(Spellings(), method), given)
    assert "Fix: " + fix in str(err.value)
    if method == "printed":
        return

    class Fixed(SpellingsFixed):
        step = getattr(SpellingsFixed, method)

    _replays_as_eager(Fixed, lambda m: (m.hist, m.d), given=given)


def test_a_read_inside_a_subscript_of_a_logged_value_is_a_guard_again():
    # review 9, finding 9 (regression of c99f1d9): x[: int(n)] reads n for a slice, no log
    m, eager = Spellings(), Spellings()
    graph = cv.capture(m.sliced, np.array([2.0, 1.0, 3.0]))
    x = np.array([2.0, 5.0, 1.0])  # the same n: the guard holds
    assert same(graph.replay({"x": x})["out"], eager.sliced(x)) and same(m.hist, eager.hist)
    with pytest.raises(cv.GuardError):
        graph.replay({"x": np.array([1.0, 5.0, 1.0])})


class AverageMeter:
    """The meter of the PyTorch ImageNet example, on Python floats."""

    def __init__(self):
        self.val = 0.0
        self.sum = 0.0
        self.count = 0
        self.avg = 0.0

    def update(self, val, n=1):
        self.val = val
        self.sum += val * n
        self.count += n
        self.avg = self.sum / self.count


class Trainer:
    def __init__(self):
        self.losses = AverageMeter()
        self.W = np.array([1.0, -2.0, 0.5])

    def step(self, x):
        loss = ((x * self.W) ** 2).mean()
        self.losses.update(loss, 3)
        return x * 2.0

    def step_item(self, x):
        loss = ((x * self.W) ** 2).mean()
        self.losses.update(loss.item(), 3)
        return x * 2.0


@pytest.mark.parametrize("method, given, call", [
    ("step", SPEC, "self.losses.update(loss, 3)"),
    ("step_item", XS[0], "self.losses.update(loss.item(), 3)")])
def test_an_average_meter_the_call_updates_is_refused_with_keep_it_outside(method, given, call):
    # was: "keep it a result: return it ... set the attribute" (0-d tensor) or "keep the counter
    # in an ndarray written with a tensor" (.item()), neither of which makes a meter work
    m = Trainer()
    with pytest.raises((UnsupportedOperationError, DataReadError)) as err:
        cv.capture(getattr(m, method), given)
    message = str(err.value)
    line = inspect.getsourcelines(getattr(Trainer, method))[1] + 2
    assert f"`{call}` at " in message and f"test_logging_idioms.py:{line}" in message
    assert "is updated by a method of its object, which the call calls" in message
    assert ("Fix: keep self.losses outside the captured function: return the value the call "
            f"gives it (return out, loss), and after each replay call {call} with the value "
            "the replay returns") in message
    assert vars(m.losses) == vars(AverageMeter())

    def fixed(x, W=m.W):  # the fix applied: the meter updated from each replay's value
        loss = ((x * W) ** 2).mean()
        return x * 2.0, loss

    graph = cv.capture(fixed, given)
    eager = Trainer()
    for x in XS:
        out = graph.replay({"x": x})
        loss = list(out.values())[1]
        m.losses.update(loss.item() if method == "step_item" else loss[()], 3)
        eager.step_item(x) if method == "step_item" else eager.step(x)
        assert same(vars(m.losses), vars(eager.losses))


NO_SOURCE_READS = """
import collections
import numpy as np


class Reads:
    def __init__(self):
        self.hist = []
        self.m = collections.defaultdict(float)
        self.log = []

    def first(self, x):
        self.hist.append(x.sum())
        return x * self.hist[0]

    def total(self, x):
        self.hist.append(x.sum())
        return x + sum(self.hist)

    def running(self, x):
        self.m["loss"] += x.sum()
        return x * 2.0

    def logs(self, x):
        self.log.append(x.sum())
        return x * 2.0
"""


@pytest.mark.parametrize("method, what", [("first", "self.hist is a list that grows"),
                                          ("total", "self.hist is a list that grows"),
                                          ("running", "cannot read the function's lines")])
@pytest.mark.parametrize("warm", [False, True])
def test_a_read_of_a_log_in_code_with_no_source_text_is_refused(method, what, warm):
    # review 9, finding 13 (silent): with no lines to read (python -c, exec, <stdin>), a list
    # appended and read back, a defaultdict(float) added to, replayed the capture's reads
    space: dict = {}
    exec(compile(NO_SOURCE_READS, "<generated>", "exec"), space)
    m = space["Reads"]()
    if warm:
        getattr(m, method)(XS[0])
    with pytest.raises(UnsupportedOperationError) as err:
        cv.capture(getattr(m, method), SPEC)
    if warm and method == "running":  # (a number there already: the running number's fix)
        what = "Fix: keep it in a 0-d ndarray made before the capture"
    assert what in str(err.value)


def test_a_log_in_code_with_no_source_text_is_still_replayed():
    space: dict = {}
    exec(compile(NO_SOURCE_READS, "<generated>", "exec"), space)
    Reads = space["Reads"]

    class Logs(Reads):
        step = Reads.logs

    _replays_as_eager(Logs, lambda m: m.log)


@pytest.mark.parametrize("given", [SPEC, XS[0]], ids=["spec", "example"])
def test_a_number_read_for_a_meter_is_refused_at_once_with_keep_it_outside(given):
    # review 9, finding 20: with a spec, "capture with an example" came first (two steps)
    m = Trainer()
    with pytest.raises(DataReadError) as err:
        cv.capture(m.step_item, given)
    message = str(err.value)
    assert message.startswith("`self.losses.update(loss.item(), 3)` at ")
    assert "self.losses is updated by a method of its object, which the call calls" in message
    assert ("Fix: keep self.losses outside the captured function: return the value the call "
            "gives it (return out, loss), and after each replay call self.losses.update("
            "loss.item(), 3) with the value the replay returns") in message


class Clipper:
    def __init__(self):
        self.k = 2.0

    def scale(self, v):  # computes, updates nothing
        return min(1.0, self.k / v)


def test_a_number_read_for_a_method_that_updates_nothing_is_a_guard_as_before():
    clip = Clipper()

    def step(x):
        return x * clip.scale(np.linalg.norm(x).item())

    graph = cv.capture(step, XS[0])
    assert same(graph.replay({"x": XS[0]})["out"], step(XS[0]))
    with pytest.raises(cv.GuardError):
        graph.replay({"x": XS[1]})


def test_a_truth_test_or_a_local_list_on_an_appending_line_is_a_guard_as_before():
    # (c1b797c took both for logs: tests/test_value_properties.py failed on main)
    def branch(x):
        out = []
        out.append(x * 2 if np.any(x > 2.5) else x - 1)
        return out[0]

    def scaled(x):
        out = []
        out.append(x * float(x.sum() > 0))
        return out[0]

    for fn in (branch, scaled):
        graph = cv.capture(fn, XS[0])
        assert same(graph.replay({"x": XS[0]})["out"], fn(XS[0]))
        with pytest.raises(cv.GuardError):
            graph.replay({"x": -XS[0]})
