"""A name the call binds a new array to each call (``self.W = self.W - lr * g``, CS231n's
``bn_param["running_mean"] = m * running_mean + (1 - m) * mean``) is a *rebind state*
(capviz/trace/rebinding.py): a replay reads the array the name holds when it starts and binds
the new array there after the graph, as an eager call does, leaving the old array as it was.
Each test runs the captured graph against an eager twin for several calls: outputs, the
rebound arrays and their dtypes bit for bit, and which object each name holds."""

from __future__ import annotations

import os
import re

import numpy as np
import pytest

import capviz as cv

BN_PARAM = {"momentum": 0.9}
BN_TWIN = {"momentum": 0.9}


def _batchnorm(param):
    def batchnorm_forward(x):
        running_mean = param.get("running_mean", np.zeros(x.shape[1], dtype=x.dtype))
        sample_mean = x.mean(axis=0)
        param["running_mean"] = 0.9 * running_mean + 0.1 * sample_mean
        return (x - sample_mean) / np.sqrt(x.var(axis=0) + 1e-5)
    return batchnorm_forward


batchnorm_forward = _batchnorm(BN_PARAM)
batchnorm_twin = _batchnorm(BN_TWIN)


def _same(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def test_a_running_mean_rebound_in_a_dict_is_bound_again_by_each_replay_bit_for_bit():
    """CS231n's batchnorm after one eager call (the key made, as the refusal of a first call's
    capture says): refused before this change (BN_PARAM['running_mean'] is rebound)."""
    BN_PARAM.pop("running_mean", None)
    BN_TWIN.pop("running_mean", None)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(3, 2))
    batchnorm_forward(x)
    batchnorm_twin(x)
    graph = cv.capture(batchnorm_forward, cv.spec((3, 2), "float64"))
    assert "state BN_PARAM[\"running_mean\"] : float64[2], bound to a new array each replay" \
        in str(graph)
    for _ in range(4):
        x = rng.normal(size=(3, 2))
        old = BN_PARAM["running_mean"]
        kept = old.copy()
        out = graph.replay({"x": x})["out"]
        want = batchnorm_twin(x)
        assert _same(out, want)
        assert _same(BN_PARAM["running_mean"], BN_TWIN["running_mean"])
        assert BN_PARAM["running_mean"] is not old and _same(old, kept)  # the old one as left
    BN_PARAM.pop("running_mean")
    BN_TWIN.pop("running_mean")


class Linear:
    def __init__(self):
        self.W = np.linspace(-1.0, 1.0, 6).reshape(3, 2).copy()
        self.b = np.full(2, 0.5)

    def step(self, x):
        y = x @ self.W + self.b
        self.W = self.W - 0.1 * (x.T @ y)  # a new array each call
        self.b = self.b * 0.5 + y.mean(axis=0)
        return y


def test_an_attribute_updated_functionally_is_bound_again_by_each_replay():
    """``self.W = self.W - lr * g`` (refused before: self.W is rebound), two of them; a later
    capture of the same method (one lifted run) gives the same program."""
    model, twin = Linear(), Linear()
    graph = cv.capture(model.step, cv.spec((4, 3), "float64"))
    rng = np.random.default_rng(1)
    for _ in range(3):
        x = rng.normal(size=(4, 3))
        old = model.W
        assert _same(graph.replay({"x": x})["out"], twin.step(x))
        assert _same(model.W, twin.W) and _same(model.b, twin.b)
        assert model.W is not old
    again = cv.capture(model.step, cv.spec((4, 3), "float64"))
    assert [line.split("  #")[0] for line in str(again).splitlines()] == \
        [line.split("  #")[0] for line in str(graph).splitlines()]
    x = rng.normal(size=(4, 3))
    assert _same(again.replay({"x": x})["out"], twin.step(x))
    assert _same(model.W, twin.W) and _same(model.b, twin.b)


def test_state_return_binds_nothing_and_states_given_are_left_as_they_are():
    model = Linear()
    graph = cv.capture(model.step, cv.spec((4, 3), "float64"))
    x = np.ones((4, 3))
    W, b = model.W, model.b
    got = graph.replay({"x": x}, state="return")
    assert model.W is W and model.b is b
    twin = Linear()
    assert _same(got["out"], twin.step(x))
    assert _same(got.states["model.W"], twin.W) and _same(got.states["model.b"], twin.b)
    given = {"model.W": W.copy(), "model.b": b.copy()}
    before = {k: v.copy() for k, v in given.items()}
    got = graph.replay({"x": x}, states=given, state="return")  # (a loaded graph's way)
    assert model.W is W and all(_same(given[k], before[k]) for k in given)
    assert _same(got.states["model.W"], twin.W)
    with pytest.raises(cv.ReplayInputError, match=re.escape(
            "state 'model.W': the graph binds a new array to model.W each call (a rebind "
            "state), and a replay given the array by states= has no name to bind it to. Fix: "
            "replay with state='return' and bind result.states['model.W'] to model.W")):
        graph.replay({"x": x}, states=given)  # (writing the given array: silent, review 7)
    assert model.W is W and all(_same(given[k], before[k]) for k in given)


def test_a_saved_graph_keeps_its_rebind_states_and_replays_them_from_states(tmp_path):
    model = Linear()
    graph = cv.capture(model.step, cv.spec((4, 3), "float64"))
    path = os.path.join(tmp_path, "g.json")
    graph.save(path)
    loaded = cv.load(path)
    assert str(loaded).splitlines()[2] == str(graph).splitlines()[2]
    x = np.ones((4, 3))
    with pytest.raises(cv.ReplayInputError, match=re.escape(
            "the graph binds a new array to model.W each replay, and what held it is gone")):
        loaded.replay({"x": x})
    twin = Linear()
    live = {"model.W": model.W, "model.b": model.b}
    with pytest.raises(cv.ReplayInputError, match=r"state 'model\.W': the graph binds a new "):
        loaded.replay({"x": x}, states=live)
    got = loaded.replay({"x": x}, states=live, state="return")
    assert _same(got["out"], twin.step(x)) and _same(got.states["model.W"], twin.W)
    model.W, model.b = got.states["model.W"], got.states["model.b"]  # bound, as eagerly
    assert _same(model.W, twin.W) and _same(model.b, twin.b)


class Schedule:
    def __init__(self):
        self.W = np.ones(3)
        self.rates = iter([0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7])

    def step(self, x):
        lr = next(self.rates)
        self.W = self.W - lr * x
        return x * 2.0


def test_a_rebinding_with_a_rate_that_changes_each_call_is_refused_at_that_line():
    with pytest.raises(cv.UnsupportedOperationError) as info:
        cv.capture(Schedule().step, cv.spec((3,), "float64"))
    what = str(info.value).splitlines()[0]
    assert what.startswith("`lr = next(self.rates)` at ")  # (its own line since stop 36)
    assert what.endswith("in step: self.rates is an iterator that outlives the call, and the "
                         "call takes its next item.")


class Held:
    def __init__(self):
        self.W = np.ones(3)

    def step(self, x):
        self.W = self.W - 0.5 * x
        return x * 2.0


def test_a_rebound_array_held_elsewhere_too_stays_refused_and_so_does_another_dtype():
    """Lifting needs every reference to the array to be a place the capture sees (NumPy could
    read it unseen through another); a new array of another dtype is no state of this one."""
    model = Held()
    elsewhere = model.W
    with pytest.raises(cv.UnsupportedOperationError, match=r"in step: self\.W is rebound to a "
                                                          r"value of the capture\."):
        cv.capture(model.step, cv.spec((3,), "float64"))
    assert model.W is elsewhere and model.W.tolist() == [1.0, 1.0, 1.0]

    class Cast(Held):
        def step(self, x):
            self.W = (self.W - 0.5 * x).astype(np.float32)
            return x * 2.0

    with pytest.raises(cv.UnsupportedOperationError, match=r"self\.W is rebound"):
        cv.capture(Cast().step, cv.spec((3,), "float64"))


EMA = {"ema": np.float64(0.0)}


class Stats:
    def __init__(self):
        self.stats = {"ema": 0.0}
        self.slots = [np.float64(0.0)]

    def step(self, x):
        self.stats["ema"] = 0.9 * self.stats["ema"] + 0.1 * x.sum()
        return x * 2.0

    def slot(self, x):
        self.slots[0] = 0.9 * self.slots[0] + 0.1 * x.sum()
        return x * 2.0


def _ema(x):
    EMA["ema"] = 0.9 * EMA["ema"] + 0.1 * x.sum()
    return x * 2.0


def test_a_number_in_a_container_rebound_to_a_value_of_the_capture_is_refused_at_its_line():
    """Review 7, finding 1: a float or np.float64 in a dict item or list slot was taken back
    silently (every replay left it as it was, each eager call moves it), where an attribute
    or a global was refused."""
    stats = Stats()
    for fn, where, text in [(stats.step, "self.stats['ema']", '`self.stats["ema"] = 0.9 * '),
                            (stats.slot, r"self.slots[0]", "`self.slots[0] = 0.9 * "),
                            (_ema, "EMA['ema']", '`EMA["ema"] = 0.9 * ')]:
        with pytest.raises(cv.UnsupportedOperationError) as info:
            cv.capture(fn, cv.spec((3,), "float64"))
        what, _why, fix = str(info.value).splitlines()
        assert what.startswith(text)
        assert what.endswith(f"{where} is rebound to a value of the capture.")
        assert fix.startswith("Fix: keep it in a 0-d ndarray made before the capture (in "
                              "__init__: np.zeros(())) and update it in place from the capture's "
                              "values (total += x.sum(); an average: ema[...] = 0.9 * "
                              "cv.constant(ema) + 0.1 * x.sum())")
    assert stats.stats == {"ema": 0.0} and stats.slots == [0.0] and EMA == {"ema": 0.0}


class Holders:
    def __init__(self):
        self.bn = {"rm": np.zeros(3)}
        self.opt = Stats()
        self.opt.m = np.zeros(3)
        self.hs = [np.zeros(3)]

    def rebind(self, x):
        self.bn["rm"] = 0.9 * self.bn["rm"] + 0.1 * x
        self.opt.m = 0.9 * self.opt.m + x
        self.hs[0] = np.tanh(self.hs[0] + x)
        return x - self.bn["rm"] + self.opt.m + self.hs[0]


def test_a_rebind_state_inside_a_holder_the_user_replaces_follows_the_new_holder():
    """Review 7, finding 10 (silent on 7cbd9bc): a reset that replaces the dict, the object or
    the list holding the rebound name (model.bn = {...}) left every replay reading and
    binding the old holder. The path from the object the user holds is followed each replay."""
    model, twin = Holders(), Holders()
    graph = cv.capture(model.rebind, cv.spec((3,), "float64"))
    x = np.array([1.0, 2.0, 3.0])
    for step in range(4):
        if step == 2:  # reset_state(): new holders
            for m in (model, twin):
                m.bn = {"rm": np.ones(3)}
                m.opt = Stats()
                m.opt.m = np.full(3, 2.0)
                m.hs = [np.ones(3)]
        assert _same(graph.replay({"x": x})["out"], twin.rebind(x))
        assert _same(model.bn["rm"], twin.bn["rm"]) and _same(model.opt.m, twin.opt.m)
        assert _same(model.hs[0], twin.hs[0])


class Decay:
    def __init__(self):
        self.W = np.array([1.0, 2.0, 3.0])
        self.V = np.array([5.0, 6.0, 7.0])

    def decay(self, x):
        self.W = self.W * 0.99  # NumPy's own operators: no tensor met
        return x * self.W

    def roll(self, x):
        self.W = np.roll(self.W, 1)
        return x * self.W

    def concat(self, x):
        self.W = np.concatenate([self.W[1:], self.W[:1]])
        return x * self.W

    def reverse(self, x):
        self.W = self.W[::-1]  # a view of the old array
        return x * self.W

    def swap(self, x):
        self.W, self.V = self.V, self.W
        return x * self.W


def test_a_name_rebound_to_an_array_numpy_computed_is_a_rebind_state_or_refused_at_its_line():
    """Review 7, finding 8 (silent before: the capture ran the update once, the user's array
    changed by cv.capture, and no replay made it): captured lifted where the new array is a
    fresh one of the old one's kind; a view of the old array or a swap is refused at its line,
    the old arrays put back."""
    x = np.array([1.0, -2.0, 0.5])
    for name in ("decay", "roll", "concat"):
        model, twin = Decay(), Decay()
        graph = cv.capture(getattr(model, name), cv.spec((3,), "float64"))
        assert model.W.tolist() == [1.0, 2.0, 3.0]  # the capture changed nothing
        for _ in range(3):
            assert _same(graph.replay({"x": x})["out"], getattr(twin, name)(x))
            assert _same(model.W, twin.W)
    model = Decay()
    W, V = model.W, model.V
    with pytest.raises(cv.UnsupportedOperationError) as info:
        cv.capture(model.reverse, cv.spec((3,), "float64"))
    what, why, fix = str(info.value).splitlines()
    assert what.startswith("`self.W = self.W[::-1]` at ")
    assert what.endswith("in reverse: self.W is rebound to an array NumPy computed without the "
                         "capture.")
    assert "(it held [1. 2. 3.] (float64[3]) when the call started and NumPy made it " in why
    assert fix == ("Fix: compute it from a tensor, which the capture records: self.W = "
                   "cv.constant(self.W)[::-1], or pass self.W as an input and return its new "
                   "value.")
    with pytest.raises(cv.UnsupportedOperationError) as info:
        cv.capture(model.swap, cv.spec((3,), "float64"))
    assert str(info.value).startswith("`self.W, self.V = self.V, self.W` at ")
    assert model.W is W and model.V is V and W.tolist() == [1.0, 2.0, 3.0]


def test_a_0d_array_in_a_dict_rebound_to_numpys_scalar_is_refused_at_its_line():
    class Rate:
        def __init__(self):
            self.d = {"lr": np.array(0.1)}

        def step(self, x):
            self.d["lr"] = self.d["lr"] * 0.5  # a np.float64 from then on
            return x * self.d["lr"]

    model = Rate()
    lr = model.d["lr"]
    with pytest.raises(cv.UnsupportedOperationError, match=r"in step: self\.d\['lr'\] is "
                       r"rebound to an array NumPy computed without the capture\."):
        cv.capture(model.step, cv.spec((3,), "float64"))
    assert model.d["lr"] is lr and lr.tolist() == 0.1


VELOCITY = {"w": np.zeros(3), "b": np.zeros(1)}
VELOCITY_TWIN = {"w": np.zeros(3), "b": np.zeros(1)}


def _momentum(velocity):
    def step(g):
        for k in velocity:  # a global dict's items, by a loop
            velocity[k] = 0.9 * velocity[k] - 0.1 * g[: velocity[k].size]
        return g * 1.0
    return step


def _forward(x, bn_param):
    running_mean = bn_param["running_mean"]
    mu = x.mean(axis=0)
    bn_param["running_mean"] = 0.9 * running_mean + 0.1 * mu
    return x - mu


def test_an_item_rebound_in_a_dict_held_by_a_closure_or_looped_over_is_a_rebind_state():
    """Review 7, finding 14 (refused since 5178afc, exact at 00ac8f7): CS231n's batchnorm with
    bn_param bound by a lambda, and momentum over a global dict: the walk's own path from the
    closure cell or the module's globals is the place a replay binds."""
    bn, bn_twin = {"running_mean": np.zeros(3)}, {"running_mean": np.zeros(3)}
    graph = cv.capture(lambda x: _forward(x, bn), cv.spec((4, 3), "float64"))
    rng = np.random.default_rng(2)
    for _ in range(3):
        x = rng.normal(size=(4, 3))
        assert _same(graph.replay({"x": x})["out"], _forward(x, bn_twin))
        assert _same(bn["running_mean"], bn_twin["running_mean"])
    step, twin = _momentum(VELOCITY), _momentum(VELOCITY_TWIN)
    graph = cv.capture(step, cv.spec((3,), "float64"))
    for _ in range(3):
        g = rng.normal(size=3)
        assert _same(graph.replay({"g": g})["out"], twin(g))
        assert all(_same(VELOCITY[k], VELOCITY_TWIN[k]) for k in VELOCITY)


class TypeAsked:
    def __init__(self):
        self.W = np.ones(3)

    def step(self, x):
        lr = 0.1 if type(self.W) is np.ndarray else 0.5  # no hook sees type()
        self.W = self.W - lr * x
        return x * 2.0


def test_a_rebinding_whose_code_asks_what_no_hook_sees_is_not_lifted():
    """Review 7, finding 12 (silent on 7cbd9bc..c1b6c8c): a lifted run sees a tensor where
    eager code sees an ndarray (type(), object.__hash__, sys.getsizeof...): as for a later
    capture, nothing is lifted and the first capture's refusal stands."""
    with pytest.raises(cv.UnsupportedOperationError, match=r"in step: self\.W is rebound to a "
                                                          r"value of the capture\."):
        cv.capture(TypeAsked().step, cv.spec((3,), "float64"))


class ClassHeld:
    CW = np.array([1.0, 2.0, 3.0])

    def step(self, x):
        type(self).CW = type(self).CW - 0.1 * x
        return x * type(self).CW


class Shadow:
    W = np.array([1.0, 2.0, 3.0])  # the first call makes the instance's own

    def step(self, x):
        self.W = self.W - 0.1 * x
        return x * self.W


class ModuleHeld:
    def __init__(self):
        import types
        self.cfg = types.ModuleType("cfg_of_a_test")
        self.cfg.W = np.array([1.0, 2.0, 3.0])

    def step(self, x):
        self.cfg.W = self.cfg.W - 0.1 * x
        return x * self.cfg.W


def test_a_class_attribute_a_shadowing_instance_attribute_and_a_module_attribute_are_seen():
    """Review 7, finding 13 (silent, and the capture left its tensor in the class or the
    module: the next eager call raised ScopeClosedError): refused at their line, the arrays
    put back, eager calls work."""
    x = np.array([1.0, -2.0, 0.5])
    cw = ClassHeld.CW
    with pytest.raises(cv.UnsupportedOperationError, match=r"`type\(self\)\.CW = type\(self\)\.CW "
                       r"- 0\.1 \* x` at .* in step: type\(self\)\.CW is rebound"):
        cv.capture(ClassHeld().step, cv.spec((3,), "float64"))
    assert ClassHeld.CW is cw and _same(ClassHeld().step(x), x * (cw - 0.1 * x))
    ClassHeld.CW = cw
    shadow = Shadow()
    with pytest.raises(cv.UnsupportedOperationError) as info:
        cv.capture(shadow.step, cv.spec((3,), "float64"))
    what, _why, fix = str(info.value).splitlines()
    assert what.endswith("in step: self.W is rebound to a value of the capture.")
    assert fix == ("Fix: create self.W in __init__ (an array of its own: self.W = "
                   "Shadow.W.copy()), so that the call rebinds or writes it as a state.")
    assert "W" not in vars(shadow) and _same(shadow.step(x), Shadow().step(x))
    held = ModuleHeld()
    w = held.cfg.W
    with pytest.raises(cv.UnsupportedOperationError, match=r"in step: self\.cfg\.W is rebound"):
        cv.capture(held.step, cv.spec((3,), "float64"))
    assert held.cfg.W is w and _same(held.step(x), x * (w - 0.1 * x))


class ClosureHeld:
    def __init__(self):
        acc = np.zeros(3)

        def f(x):
            nonlocal acc
            acc = acc + x
            return acc * 1.0

        self.f = f

    def step(self, x):
        return self.f(x)


def test_a_nonlocal_rebound_in_a_closure_the_object_holds_is_a_rebind_state():
    """Review 7, finding 7 (silent: replays never accumulated, and the capture left its tensor
    in the cell, so the next eager call raised ScopeClosedError)."""
    model, twin = ClosureHeld(), ClosureHeld()
    graph = cv.capture(model.step, cv.spec((3,), "float64"))
    for k in range(3):
        x = np.full(3, k + 0.5)
        assert _same(graph.replay({"x": x})["out"], twin.step(x))
        assert _same(model.f.__closure__[0].cell_contents, twin.f.__closure__[0].cell_contents)
    assert _same(model.step(np.ones(3)), twin.step(np.ones(3)))  # eager after: works


class Opt:
    def __init__(self):
        self.m = np.zeros(3)


class Model:
    def __init__(self):
        self.opt = Opt()

    def step(self, x):
        self.opt.m = 0.9 * self.opt.m + x
        return x - self.opt.m


ALIAS = {}


def test_a_rebind_state_follows_the_functions_own_path_not_another_name_reaching_it():
    """Review 7, finding 21 (silent on 5178afc..3e311e0): with a global alias OPT =
    model.opt, the state was followed through OPT; after model.opt = Opt() every replay bound
    the old holder."""
    model, twin = Model(), Model()
    ALIAS["opt"] = model.opt  # another name that reaches the holder
    graph = cv.capture(model.step, cv.spec((3,), "float64"))
    x = np.ones(3)
    graph.replay({"x": x})
    twin.step(x)
    model.opt, twin.opt = Opt(), Opt()  # a reset
    assert _same(graph.replay({"x": x})["out"], twin.step(x))
    assert _same(model.opt.m, twin.opt.m) and ALIAS["opt"].m.tolist() == [1.0, 1.0, 1.0]
    ALIAS.clear()


def _make_acc():
    acc = np.zeros(3)

    def add(x):
        nonlocal acc
        acc = acc + x
        return acc * 1.0
    return add


ACC, ACC_TWIN = _make_acc(), _make_acc()


def _global_step(x):
    return ACC(x)


class ListHeld:
    def __init__(self):
        self.fs = [_make_acc(), _make_acc()]

    def step(self, x):
        return self.fs[0](x) + self.fs[1](x * 3.0)


def test_a_nonlocal_in_a_closure_held_by_a_global_or_a_list_is_a_rebind_state():
    """Review 7, finding 7's rest (silent on 3e311e0, ScopeClosedError at the next eager
    call): ACC = make_acc() called by fn, self.fs[0](x)."""
    graph = cv.capture(_global_step, cv.spec((3,), "float64"))
    model, twin = ListHeld(), ListHeld()
    listed = cv.capture(model.step, cv.spec((3,), "float64"))
    for k in range(3):
        x = np.full(3, k + 0.5)
        assert _same(graph.replay({"x": x})["out"], ACC_TWIN(x))
        assert _same(listed.replay({"x": x})["out"], twin.step(x))
    assert _same(ACC(np.ones(3)), ACC_TWIN(np.ones(3)))  # eager after: works
    assert _same(model.step(np.ones(3)), twin.step(np.ones(3)))
