"""A Python value the call stores that it did not read from the same place (review 9, finding
22; ruling 38 10:50): ``self.called = True``, ``self.model.train()``, ``self.scale = self.base *
2.0``, a flag set at the end of the call, an attribute the call adds. Each replay assigns it as
the call does, cold and warm alike (before: the cold capture was refused as "a Python number
that changes from call to call"); the values it is computed from stay guarded. A store that
reads its own place (``self.on = not self.on``) is still refused."""

from __future__ import annotations

import collections
import dataclasses
import re
import types

import numpy as np
import pytest

import capviz as cv
from capviz.core.errors import GuardError, UnsupportedOperationError

SPEC = cv.spec((3,), "float64")
SCALE = 2.0
ROWS = np.random.default_rng(22).standard_normal((3, 3))


class Flag:
    def __init__(self):
        self.called = False
        self.p = 0.5

    def step(self, x):
        self.called = True
        return x * self.p


class FromOther:
    def __init__(self):
        self.base = 1.0
        self.scale = 0.0

    def step(self, x):
        self.scale = self.base * 2.0
        return x * self.scale


class FromGlobal:
    def __init__(self):
        self.p = 0.0

    def step(self, x):
        self.p = SCALE
        return x * self.p


class Later:
    def __init__(self):
        self.called = False
        self.p = 0.5

    def step(self, x):
        y = x * self.p
        self.called = True
        return y


class Added:
    def __init__(self):
        self.p = 0.5

    def step(self, x):
        y = x * self.p
        self.initialized = True
        return y


class BN:
    def __init__(self):
        self.training = True

    def train(self):
        self.training = True

    def eval(self):
        self.training = False

    def forward(self, x):
        return x * 2.0 if self.training else x


class Trainer:
    def __init__(self):
        self.model = BN()
        self.model.eval()  # evaluated before the first step (cold: the step sets True)

    def step(self, x):
        self.model.train()
        return self.model.forward(x)


def _attributes(obj):
    return {k: (type(v), v) for k, v in vars(obj).items() if not isinstance(v, BN)}


def _same_as_eager(graph, mine, twin, between=None, replay=None):
    replay = replay or (lambda x: graph.replay({"x": x})["out"])
    for k, x in enumerate(ROWS):
        if between is not None and k:
            between(mine)
            between(twin)
        got, want = replay(x), twin.step(x)
        assert np.array_equal(got, want) and got.dtype == want.dtype
        assert _attributes(mine) == _attributes(twin)
        if isinstance(mine, Trainer):
            assert _attributes(mine.model) == _attributes(twin.model)


class TupleOf:
    def __init__(self):
        self.base = 2
        self.shape = None

    def step(self, x):
        self.shape = (self.base, 3)  # (a tuple of a guarded value: 7b75376 refused it cold)
        return x * 1.0


@pytest.mark.parametrize("warm", [False, True])
@pytest.mark.parametrize("kind", [Flag, FromOther, FromGlobal, Later, Added, Trainer, TupleOf])
def test_a_value_the_call_stores_is_set_by_each_replay_cold_and_warm(kind, warm):
    mine, twin = kind(), kind()
    if warm:
        mine.step(ROWS[0])
        twin.step(ROWS[0])
    graph = cv.capture(mine.step, SPEC)
    _same_as_eager(graph, mine, twin)
    compiled = graph.compile()
    _same_as_eager(graph, mine, twin, replay=lambda x: compiled(x)[0])


@pytest.mark.parametrize("kind", [Flag, Later, Added])
def test_the_user_s_loop_resets_the_flag_between_replays(kind):
    """Review 9's g_over.py G18: the call sets it again; so does each replay."""
    mine, twin = kind(), kind()
    graph = cv.capture(mine.step, SPEC)
    _same_as_eager(graph, mine, twin, between=lambda o: setattr(o, "called", False)
                   if kind is not Added else delattr(o, "initialized"))


def test_an_eager_evaluation_between_steps_captured_cold():
    """Review 9's r9_trainstep.py, the model in eval mode at capture: was refused."""
    mine, twin = Trainer(), Trainer()
    graph = cv.capture(mine.step, SPEC)
    assert "  set self.model.training = True  # as step does before reading it" in str(graph)
    _same_as_eager(graph, mine, twin, between=lambda t: t.model.eval())


def test_the_values_a_stored_value_is_computed_from_stay_guarded():
    mine = FromOther()
    graph = cv.capture(mine.step, SPEC)
    assert "  set self.scale = 2.0  # as step does" in str(graph)
    mine.base = 3.0
    with pytest.raises(GuardError, match=r"^self\.base was 1\.0 when step was captured "
                       r"\(read at \S+test_assigned_values\.py:\d+ in step\) and is 3\.0 now"):
        graph.replay({"x": ROWS[0]})


class Toggle:
    def __init__(self):
        self.on = False

    def step(self, x):
        self.on = not self.on
        return x * 2.0


def test_a_store_that_reads_its_own_place_is_still_refused():
    with pytest.raises(UnsupportedOperationError, match=r"^`self\.on = not self\.on` at \S+:"
                       r"\d+ in step: self\.on is a Python number that changes from call to "
                       r"call\."):
        cv.capture(Toggle().step, SPEC)


# --- a new list or dict each call (review 10, finding 3, silent) -------------------------------

class Fresh:
    def __init__(self):
        self.cache = None
        self.p = 0.5

    def empty_dict(self, x):
        self.cache = {}
        return x * 2.0

    def empty_list(self, x):
        y = x * self.p
        self.cache = []
        return y

    def filled(self, x):
        self.cache = {}
        self.cache["n"] = 3
        return x * 2.0

    def nested(self, x):
        self.cache = {"sub": {}, "k": [[]]}
        return x * 2.0

    def made(self, x):
        self.cache = dict()
        return x * 2.0

    def made_set(self, x):
        self.cache = set()
        return x * 2.0

    def defaultdict(self, x):
        self.cache = collections.defaultdict(list)
        return x * 2.0

    def ordered(self, x):
        self.cache = collections.OrderedDict(n=3)
        return x * 2.0

    def _fresh(self):
        return {"n": 3}

    def helper(self, x):
        self.cache = self._fresh()
        return x * 2.0

    def comprehension(self, x):
        self.cache = {k: 0 for k in ("a", "b")}
        return x * 2.0

    def then_read(self, x):
        y = x * 2.0
        self.cache = {"n": 3}
        return y * float(len(self.cache))  # (read after the store: the one it made)


def _write(held, k):
    """The user's loop writes into each step's container, and into the ones inside it."""
    if isinstance(held, list):
        held.append(k)
    elif isinstance(held, set):
        held.add(k)
    else:
        for inner in list(held.values()):
            _write(inner, -k) if isinstance(inner, (list, dict)) else None
        held[f"step{k}"] = k


@pytest.mark.parametrize("warm", [False, True])
@pytest.mark.parametrize("name", ["empty_dict", "empty_list", "filled", "nested", "made",
                                  "made_set", "defaultdict", "ordered", "helper",
                                  "comprehension", "then_read"])
def test_a_new_list_or_dict_each_call_is_a_new_one_each_replay(name, warm):
    """Before: each replay left the capture's one object (cold: the user's writes into it
    showed in every later step's; warm: GuardError on the keys the user wrote)."""
    mine, twin = Fresh(), Fresh()
    if warm:
        getattr(mine, name)(ROWS[0])
        getattr(twin, name)(ROWS[0])
    graph = cv.capture(getattr(mine, name), SPEC)
    kept, kept_eager = [], []
    for k, x in enumerate(ROWS):
        got, want = graph.replay({"x": x})["out"], getattr(twin, name)(x)
        assert np.array_equal(got, want)
        kept.append(mine.cache)
        kept_eager.append(twin.cache)
        _write(mine.cache, k)
        _write(twin.cache, k)
    assert repr(kept) == repr(kept_eager)  # (each step's own object, with its own step; types)
    assert len({id(c) for c in kept}) == len(ROWS)


def _closure_step(o):
    def step(x):
        o.cache = {"n": 3}
        o.cache["m"] = 4
        return x * 2.0
    return step


@pytest.mark.parametrize("warm", [False, True])
def test_a_new_dict_bound_on_an_object_a_closure_holds(warm):
    mine, twin = Fresh(), Fresh()
    step, eager = _closure_step(mine), _closure_step(twin)
    if warm:
        step(ROWS[0])
        eager(ROWS[0])
    graph = cv.capture(step, SPEC)
    kept, kept_eager = [], []
    for k, x in enumerate(ROWS):
        assert np.array_equal(graph.replay({"x": x})["out"], eager(x))
        kept.append(mine.cache)
        kept_eager.append(twin.cache)
        _write(mine.cache, k)
        _write(twin.cache, k)
    assert repr(kept) == repr(kept_eager)
    assert len({id(c) for c in kept}) == len(ROWS)


# --- a value read from the captured arguments' shape or dtype (review 10, finding 7) -----------

class Shaped:
    def __init__(self):
        self.shape = self.n = self.dt = None

    def shape_of(self, x):
        self.shape = x.shape
        return x * 2.0

    def rows(self, x):
        self.n = x.shape[0]
        return x * 2.0

    def dtype_of(self, x):
        self.dt = x.dtype
        return x * 2.0

    def length(self, x):
        self.n = len(x)
        return x * 2.0

    def dims(self, x):
        self.n = x.ndim + 1
        return x * 2.0


@pytest.mark.parametrize("warm", [False, True])
@pytest.mark.parametrize("name", ["shape_of", "rows", "dtype_of", "length", "dims"])
def test_a_value_of_the_input_s_shape_or_dtype_is_set_by_each_replay(name, warm):
    """Before: the cold capture's first replay, nothing changed, was refused 'self.n was None
    when rows was captured ... and is 3 now ... Fix: capture rows again'."""
    mine, twin = Shaped(), Shaped()
    if warm:
        getattr(mine, name)(ROWS[0])
        getattr(twin, name)(ROWS[0])
    graph = cv.capture(getattr(mine, name), SPEC)
    for x in ROWS:
        mine.shape = mine.n = mine.dt = twin.shape = twin.n = twin.dt = None  # (the loop's)
        got, want = graph.replay({"x": x})["out"], getattr(twin, name)(x)
        assert np.array_equal(got, want)
        assert _attributes(mine) == _attributes(twin)


def test_another_shape_is_refused():
    mine = Shaped()
    graph = cv.capture(mine.rows, SPEC)
    mine.n = None
    with pytest.raises(cv.ReplayInputError, match=r"^input 'x': expected float64\[3\], got "
                       r"float64\[4\]"):
        graph.replay({"x": np.ones(4)})


# --- a size the data decides, stored outside (review 10, finding 11, silent) -------------------

EXAMPLE = np.array([1.0, -2.0, 3.0, 4.0])
OTHERS = [np.array([1.0, 2.0, 3.0, -4.0]), np.array([-1.0, -2.0, 3.0, -4.0])]


class Sized:
    def __init__(self):
        self.n = self.shape = None

    def rows(self, x):
        y = x[x > 0]
        self.n = y.shape[0]
        return y * 2.0

    def shape_of(self, x):
        y = x[x > 0]
        self.shape = y.shape
        return y.sum()

    def unique(self, x):
        u = np.unique(np.round(x))
        self.n = u.shape[0]
        return u.sum()

    def fixed(self, x):  # the fix: return what it measures, read its length there
        y = x[x > 0]
        return y * 2.0, y


@pytest.mark.parametrize("warm", [False, True])
@pytest.mark.parametrize("name, label, text", [
    ("rows", "n", "self.n = y.shape[0]"), ("shape_of", "shape", "self.shape = y.shape"),
    ("unique", "n", "self.n = u.shape[0]")])
def test_a_size_the_data_decides_stored_outside_is_refused(name, label, text, warm):
    """Before: the capture left its size symbol (Symbol('n0', ...)) in self.n and no replay
    stored the replay's length (eager 3, then 1)."""
    mine = Sized()
    if warm:
        getattr(mine, name)(EXAMPLE)
    held = getattr(mine, label)
    with pytest.raises(UnsupportedOperationError) as info:
        cv.capture(getattr(mine, name), EXAMPLE)
    first, why, fix = str(info.value).splitlines()
    assert first == (f"`{text}` at {__file__}:{_line_of(getattr(Sized, name), text)} in {name}: "
                     f"self.{label} is rebound to a value of the capture.")
    assert "it holds the length of a result whose size depends on the data" in why
    assert fix == ("Fix: take it from what each replay returns: return the result it measures "
                   "(return out, y) and read its length there.")
    assert getattr(mine, label) is held  # (put back)


class SizedItem:
    def __init__(self):
        self.d = {}
        self.e = {"n": 0}

    def new_key(self, x):
        y = x[x > 0]
        self.d["n"] = y.shape[0]
        return y.sum()

    def old_key(self, x):
        y = x[x > 0]
        self.e["n"] = y.shape[0]
        return y.sum()


@pytest.mark.parametrize("name, label, text", [
    ("new_key", "self.d['n']", 'self.d["n"] = y.shape[0]'),
    ("old_key", "self.e['n']", 'self.e["n"] = y.shape[0]')])
def test_a_size_the_data_decides_stored_in_a_dict_is_refused(name, label, text):
    """Before: Symbol('n0', ...) was left in the user's dict (eager: 3, then 1)."""
    mine = SizedItem()
    with pytest.raises(UnsupportedOperationError) as info:
        cv.capture(getattr(mine, name), EXAMPLE)
    first, _why, fix = str(info.value).splitlines()
    line = _line_of(getattr(SizedItem, name), text)
    assert first == (f"`{text}` at {__file__}:{line} in {name}: {label} is rebound to a value "
                     "of the capture.")
    assert fix.startswith("Fix: take it from what each replay returns")
    assert mine.d == {} and mine.e == {"n": 0}


def test_the_size_s_fix_replays_as_eager():
    graph = cv.capture(Sized().fixed, EXAMPLE)
    for x in OTHERS:
        result = graph.replay({"x": x})
        out, y = Sized().fixed(x)
        assert np.array_equal(result["out0"], out) and len(result["out1"]) == len(y)


def _line_of(fn, text):
    import inspect
    lines, start = inspect.getsourcelines(fn)
    return start + next(k for k, line in enumerate(lines) if text in line)


class Proto:
    def __init__(self):
        self.proto = {"a": 1}
        self.cache = None

    def copy_of(self, x):
        self.cache = dict(self.proto)
        return x * 2.0

    def alias(self, x):
        self.cache = self.proto  # (the same object each call: not copied)
        return x * 2.0


@pytest.mark.parametrize("warm", [False, True])
def test_a_copy_of_an_outliving_dict_is_made_anew_and_its_source_stays_guarded(warm):
    mine, twin = Proto(), Proto()
    if warm:
        mine.copy_of(ROWS[0])
        twin.copy_of(ROWS[0])
    graph = cv.capture(mine.copy_of, SPEC)
    for k, x in enumerate(ROWS[:2]):
        assert np.array_equal(graph.replay({"x": x})["out"], twin.copy_of(x))
        assert mine.cache == twin.cache and mine.cache is not mine.proto
        mine.cache[k] = twin.cache[k] = k  # (the user's write into this step's copy)
    mine.proto["a"] = 5
    with pytest.raises(GuardError, match=r"^self\.proto\['a'\] was 1 when copy_of was captured"):
        graph.replay({"x": ROWS[2]})


def test_an_outliving_dict_bound_each_call_stays_that_object():
    mine = Proto()
    graph = cv.capture(mine.alias, SPEC)
    graph.replay({"x": ROWS[0]})
    assert mine.cache is mine.proto


# --- a Python number rebound by a helper the step holds in a closure (review 10, finding 14) ---

class Running:
    def __init__(self, s=0.0):
        self.s = s


def _update(st, x):
    st.s = st.s + x.mean()
    return x * 2.0


def _update_fixed(st, x):
    st.s += x.mean()  # (the fix: a 0-d ndarray updated in place, a state)
    return x * 2.0


def _make(st, fn):
    def step(x):
        return fn(st, x)
    return step


def test_a_number_rebound_by_a_helper_held_in_a_closure_is_refused_with_its_fix():
    """Before: taken for a cache each replay sets, so every replay restarted from the
    capture's value (replay 1 left 2.0 where eager has 2.8333), silently."""
    st = Running()
    with pytest.raises(UnsupportedOperationError) as info:
        cv.capture(_make(st, _update), SPEC)
    first, _why, fix = str(info.value).splitlines()
    assert first.startswith("`st.s = st.s + x.mean()` at ") and \
        first.endswith(" in _update: st.s is rebound to a value of the capture.")
    assert fix.startswith("Fix: keep it in a 0-d ndarray made before the capture")
    assert st.s == 0.0
    mine, twin = Running(np.zeros(())), Running(np.zeros(()))
    graph = cv.capture(_make(mine, _update_fixed), SPEC)
    eager = _make(twin, _update_fixed)
    for x in ROWS:
        assert np.array_equal(graph.replay({"x": x})["out"], eager(x))
        assert mine.s.tobytes() == twin.s.tobytes() and type(mine.s) is type(twin.s)


def _deep0(st, x):
    st.s = st.s + x.mean()
    return x * 2.0


def _deep1(st, x):
    return _deep0(st, x)


def _deep2(st, x):
    return _deep1(st, x)


HELPERS = [_deep0, _deep2]


class Deep:
    def __init__(self, k):
        self.s = 0.0
        self.k = k

    def step(self, x):
        return HELPERS[self.k](self, x)


@pytest.mark.parametrize("form", ["two_below", "listed", "listed_deep"])
def test_a_number_rebound_two_calls_below_or_through_a_list_is_refused(form):
    """R11 #1 (silent, pre-existing): the update two calls below fn (step -> _deep2 ->
    _deep1 -> _deep0), or by a helper found in a list (HELPERS[k](self, x)), was taken for a
    cache each replay sets (the lines read were fn's, its names' and its closure cells'
    only): every replay restarted from the capture's value. The lines of every function the
    capture recorded an op in are read too."""
    if form == "two_below":
        owner = Running()
        step = _make(owner, _deep2)
    else:
        owner = Deep(0 if form == "listed" else 1)
        step = owner.step
    with pytest.raises(UnsupportedOperationError) as info:
        cv.capture(step, SPEC)
    first = str(info.value).splitlines()[0]
    assert first.startswith("`st.s = st.s + x.mean()` at ") and \
        first.endswith(" in _deep0: " + ("st" if form == "two_below" else "self") +
                       ".s is rebound to a value of the capture."), first
    assert owner.s == 0.0



def _store(st, old, x):
    st.s = old + x.mean()
    return x * 2.0


def _read_then_store(st, x):
    old = st.s  # (the read: no op recorded here, and step names _pass_down only)
    return _store(st, old, x)


def _pass_down(st, x):
    return _read_then_store(st, x)


READERS = [_read_then_store]


class Reading(Running):
    def __init__(self, s=0.0):
        super().__init__(s)
        self.h = _read_then_store

    def listed(self, x):
        return READERS[0](self, x)

    def held(self, x):
        return self.h(self, x)


@pytest.mark.parametrize("form", ["two_below", "listed", "held"])
def test_a_number_read_in_a_helper_that_records_no_op_is_refused(form):
    """R11 #1's rest (silent, pre-existing; ruling 40 17:35, W=20g): ``old = st.s`` read in a
    helper that records no op and that step does not name (step -> _pass_down ->
    _read_then_store; READERS[0](self, x); self.h(self, x)), passed down to the helper that
    stores: taken for a cache each replay sets, every replay restarted from the capture's
    value (replay 1 left 2.0, eager 2.8333). The lines of every function the code reaches by
    name or holds in a walked place are read too."""
    st = Reading()
    step = _make(st, _pass_down) if form == "two_below" else getattr(st, form)
    with pytest.raises(UnsupportedOperationError) as info:
        cv.capture(step, SPEC)
    first = str(info.value).splitlines()[0]
    label = "st" if form == "two_below" else "self"
    assert first.startswith("`st.s = old + x.mean()` at ") and \
        first.endswith(f" in _store: {label}.s is rebound to a value of the capture."), first
    assert st.s == 0.0


def test_the_number_read_in_a_helper_replays_kept_in_a_0d_array():
    mine, twin = Running(np.zeros(())), Running(np.zeros(()))
    graph = cv.capture(_make(mine, _pass_down_fixed), SPEC)
    eager = _make(twin, _pass_down_fixed)
    for x in ROWS:
        assert np.array_equal(graph.replay({"x": x})["out"], eager(x))
        assert mine.s.tobytes() == twin.s.tobytes() and type(mine.s) is type(twin.s)


def _store_fixed(st, old, x):
    st.s[...] = old + x.mean()
    return x * 2.0


def _read_then_store_fixed(st, x):
    old = st.s
    return _store_fixed(st, old, x)


def _pass_down_fixed(st, x):
    return _read_then_store_fixed(st, x)

# --- a new object of a kind no replay can make, bound each call (review 11, finding 7) ----------

class Box:
    def __init__(self):
        self.items = []


@dataclasses.dataclass
class Pair:
    n: int = 0


class Made:
    def __init__(self):
        self.c = None
        self.shared = Box()

    def box(self, x):
        self.c = Box()
        return x * 2.0

    def pair(self, x):
        self.c = Pair()
        return x * 2.0

    def namespace(self, x):
        self.c = types.SimpleNamespace()
        return x * 2.0

    def raw(self, x):
        self.c = bytearray(2)
        return x * 2.0

    def same(self, x):
        self.c = self.shared  # (the same object each call, eagerly too)
        return x * 2.0

    def lazy(self, x):
        if self.c is None:
            self.c = Box()
        return x * 2.0


@pytest.mark.parametrize("warm", [False, True])
@pytest.mark.parametrize("name, code, kind", [
    ("box", "self.c = Box()", "Box"), ("pair", "self.c = Pair()", "Pair"),
    ("namespace", "self.c = types.SimpleNamespace()", "SimpleNamespace"),
    ("raw", "self.c = bytearray(2)", "bytearray"),
])
def test_a_new_object_no_replay_can_make_is_refused_by_name(name, code, kind, warm):
    """R11 #7 (silent, pre-existing): every replay left the capture's one object there (the
    user's writes into it piled up: distinct objects 1, eagerly 3), cold and warm."""
    mine = Made()
    if warm:
        getattr(mine, name)(ROWS[0])
    held = mine.c
    with pytest.raises(UnsupportedOperationError) as info:
        cv.capture(getattr(mine, name), SPEC)
    first, why, fix = str(info.value).splitlines()
    assert re.fullmatch(rf"`{re.escape(code)}` at \S+test_assigned_values\.py:\d+ in {name}: a "
                        r"new object bound each call is not supported by capviz\.", first), first
    assert why == (f"capviz cannot record it: each call binds a new {kind} there, and a replay "
                   f"binds no new one (it cannot make a {kind}: it would leave the capture's one "
                   "object, the same each call).")
    assert fix == (f"Fix: make it outside the captured function and bind it before each replay: "
                   f"self.c = {kind}(...).")
    assert mine.c is held  # (what it held, put back)


@pytest.mark.parametrize("name", ["same", "lazy"])
def test_an_object_held_elsewhere_or_made_once_still_replays(name):
    mine, twin = Made(), Made()
    graph = cv.capture(getattr(mine, name), SPEC)
    for x in ROWS:
        assert np.array_equal(graph.replay({"x": x})["out"], getattr(twin, name)(x))
    assert type(mine.c) is Box and (mine.c is mine.shared) == (name == "same")


def _reset(m):
    setattr(m, "c", {})


def _reset_list(m):
    m.c = []


def _reset_box(m):
    setattr(m, "c", Box())


class Reset:
    def __init__(self):
        self.c = None

    def by_setattr(self, x):
        _reset(self)
        return x * 2.0

    def by_store(self, x):
        _reset_list(self)
        return x * 2.0

    def a_box(self, x):
        _reset_box(self)
        return x * 2.0


@pytest.mark.parametrize("name", ["by_setattr", "by_store"])
def test_a_container_a_helper_binds_each_call_is_a_new_one_each_replay(name):
    """Ruling 39 14:10 / R11 #7 (silent, pre-existing): ``setattr(m, "c", {})`` or ``m.c =
    []`` in another function, cold: every replay left the capture's one container (the user's
    writes into it piled up). No code the call reaches reads ``c``: a store each call makes,
    bound anew by each replay (a lazy init reads it: test above)."""
    mine, twin = Reset(), Reset()
    graph = cv.capture(getattr(mine, name), SPEC)
    held = []
    for k, x in enumerate(ROWS):
        graph.replay({"x": x})
        getattr(twin, name)(x)
        held.append(mine.c)
        if isinstance(mine.c, dict):
            mine.c[k] = k
            twin.c[k] = k
        else:
            mine.c.append(k)
            twin.c.append(k)
        assert mine.c == twin.c
    assert len({id(c) for c in held}) == len(ROWS)


def test_an_object_a_helper_binds_each_call_is_refused_by_name():
    mine = Reset()
    with pytest.raises(UnsupportedOperationError, match=r"a new object bound each call is "
                                                        r"not supported by capviz"):
        cv.capture(mine.a_box, SPEC)
    assert mine.c is None
