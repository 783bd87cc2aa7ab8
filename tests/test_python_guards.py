"""Guards on the Python values a capture read from objects that outlive the call (review 8,
finding 31: silent, common): a flag or hyperparameter the user changes between replays
(``model.training = False``, ``self.p``, ``self.lr``, a module's flag, a closure value, a class
attribute) refuses the replay naming the place, both values, the line that read it and the fix;
the fix (capture again) replays as eager computes."""

from __future__ import annotations

import enum
import gc
import re
import types

import numpy as np
import pytest

import capviz as cv
from capviz.core.errors import GuardError
from capviz.core.python_guards import same

X = np.arange(12.0).reshape(4, 3)
SPEC = cv.spec((4, 3), "float64")
HERE = "test_python_guards.py"


class BN:
    def __init__(self):
        self.training = True
        self.rm = np.zeros(3)

    def forward(self, x):
        if self.training:  # the line the guard names
            mu = x.mean(0)
            self.rm[...] = 0.9 * cv.constant(self.rm) + 0.1 * mu
        else:
            mu = cv.constant(self.rm)
        return x - mu


class Drop:
    def __init__(self):
        self.p = 0.5

    def forward(self, x):
        return x * (1.0 - self.p)


class Scaled:
    scale = 2.0  # a class attribute

    def forward(self, x):
        return x * self.scale


class Net:
    def __init__(self):
        self.bn = BN()
        self.drop = Drop()
        self.lr = 0.1
        self.epoch = 0  # set by the user's loop, never read by forward

    def forward(self, x):
        return self.drop.forward(self.bn.forward(x)) * self.lr


DEBUG = False


def flagged(x):
    if DEBUG:
        return x + 1.0
    return x * 2.0


def make_scale(k):
    def scale(x):
        return x * k
    return scale


class Mode(enum.Enum):
    SUM = 1
    MEAN = 2


class Reducer:
    def __init__(self):
        self.mode = Mode.SUM
        self.axes = (0,)

    def forward(self, x):
        return x.sum(self.axes) if self.mode is Mode.SUM else x.mean(self.axes)


def _line(fn, text):
    """The line number of the line of ``fn``'s source holding ``text``."""
    import inspect
    lines, start = inspect.getsourcelines(fn)
    return start + next(k for k, line in enumerate(lines) if text in line)


def _refused(graph, label, was, now, fn, line, call=None):
    with pytest.raises(GuardError) as info:
        (call or (lambda: graph.replay({"x": X})))()
    text = str(info.value)
    first, fix = text.splitlines()
    assert re.fullmatch(
        rf"{re.escape(label)} was {re.escape(was)} when {fn} was captured \(read at "
        rf"\S*{HERE}:{line} in \w+\) and is {re.escape(now)} now, so the graph computes what "
        r"the code did with the old value\.", first), first
    assert fix == (f"Fix: capture {fn} again after changing {label} (a graph per value: keep "
                   "one for each), or pass it to the function as an argument (an input the "
                   "graph reads)")
    assert info.value.place == label
    return info.value


def test_model_eval_after_a_training_capture_is_refused_then_captured_again_replays():
    """The probe of review 8, finding 31: was silent (the replay trained: it updated the
    running mean and normalised by the batch's mean)."""
    model, twin = BN(), BN()
    graph = cv.capture(model.forward, SPEC)
    assert np.array_equal(graph.replay({"x": X})["out"], twin.forward(X))
    model.training = twin.training = False
    before = model.rm.copy()
    err = _refused(graph, "self.training", "True", "False", "forward",
                   _line(BN.forward, "if self.training:"))
    assert err.recorded is True and err.got is False
    assert np.array_equal(model.rm, before)  # refused before any write
    again = cv.capture(model.forward, SPEC)  # the fix
    assert np.array_equal(again.replay({"x": X})["out"], twin.forward(X))
    assert np.array_equal(model.rm, twin.rm)


def test_a_changed_dropout_p_is_refused():
    layer = Drop()
    graph = cv.capture(layer.forward, SPEC)
    layer.p = 0.1
    _refused(graph, "self.p", "0.5", "0.1", "forward", _line(Drop.forward, "self.p"))
    layer.p = 0.5  # back: replays
    assert np.array_equal(graph.replay({"x": X})["out"], X * 0.5)


def test_nested_flags_and_an_lr_name_their_path_from_self():
    net = Net()
    graph = cv.capture(net.forward, SPEC)
    net.bn.training = False
    _refused(graph, "self.bn.training", "True", "False", "forward",
             _line(BN.forward, "if self.training:"))
    net.bn.training = True
    net.lr = 0.01
    _refused(graph, "self.lr", "0.1", "0.01", "forward", _line(Net.forward, "self.lr"))
    net.lr = 0.1
    net.epoch = 7  # a value forward does not name: no guard, replays
    graph.replay({"x": X})


def test_a_module_flag_is_refused():
    global DEBUG
    graph = cv.capture(flagged, SPEC)
    try:
        DEBUG = True
        _refused(graph, "DEBUG", "False", "True", "flagged", _line(flagged, "if DEBUG:"))
    finally:
        DEBUG = False
    assert np.array_equal(graph.replay({"x": X})["out"], X * 2.0)


def test_a_closure_value_is_refused():
    fn = make_scale(2.0)
    graph = cv.capture(fn, SPEC)
    fn.__closure__[0].cell_contents = 3.0
    _refused(graph, "k", "2.0", "3.0", "scale", _line(fn, "return x * k"))


def test_a_class_attribute_changed_on_the_class_or_shadowed_on_the_object_is_refused():
    layer = Scaled()
    graph = cv.capture(layer.forward, SPEC)
    line = _line(Scaled.forward, "self.scale")
    try:
        Scaled.scale = 3.0
        _refused(graph, "self.scale", "2.0", "3.0", "forward", line)
    finally:
        Scaled.scale = 2.0
    layer.scale = 4.0  # an attribute of the object now, read first by self.scale
    _refused(graph, "self.scale", "2.0", "4.0", "forward", line)
    del layer.scale
    assert np.array_equal(graph.replay({"x": X})["out"], X * 2.0)


def test_an_enum_and_a_tuple_are_guarded_whole():
    r = Reducer()
    graph = cv.capture(r.forward, SPEC)
    r.mode = Mode.MEAN
    _refused(graph, "self.mode", "<Mode.SUM: 1>", "<Mode.MEAN: 2>", "forward",
             _line(Reducer.forward, "self.mode"))
    r.mode = Mode.SUM
    r.axes = (1,)
    _refused(graph, "self.axes", "(0,)", "(1,)", "forward", _line(Reducer.forward, "self.axes"))


def test_a_warm_capture_and_a_compiled_replay_and_an_executor_are_guarded():
    layer = Drop()
    cv.capture(layer.forward, SPEC)
    graph = cv.capture(layer.forward, SPEC)  # the warm capture (one pass)
    fn = graph.compile()
    fn(X)
    layer.p = 0.25
    line = _line(Drop.forward, "self.p")
    _refused(graph, "self.p", "0.5", "0.25", "forward", line)
    _refused(graph, "self.p", "0.5", "0.25", "forward", line, call=lambda: fn(X))
    _refused(graph, "self.p", "0.5", "0.25", "forward", line,
             call=lambda: graph.executor({"x": X}))


def test_the_type_of_a_value_counts_and_nan_is_itself():
    assert not same(1, 1.0) and not same(1, True) and not same(0.0, -0.0)
    assert same(float("nan"), float("nan")) and same((1, 2.0), (1, 2.0))
    assert not same(np.float32(0.5), np.float64(0.5)) and same(np.float32(0.5), np.float32(0.5))
    layer = Drop()
    graph = cv.capture(layer.forward, SPEC)
    layer.p = 1  # 1 - 1 is an int: another program for an int array
    _refused(graph, "self.p", "0.5", "1", "forward", _line(Drop.forward, "self.p"))


def test_a_value_the_replay_logs_is_not_guarded():
    class Tagged:
        def __init__(self):
            self.hist = {"phase": "eval"}

        def forward(self, x):
            self.hist["phase"] = "train"
            return x * 2.0

    tagged = Tagged()
    graph = cv.capture(tagged.forward, SPEC)
    for _ in range(2):
        graph.replay({"x": X})
    assert tagged.hist == {"phase": "train"}


def test_an_object_freed_since_is_not_checked():
    graph = cv.capture(Drop().forward, SPEC)
    gc.collect()
    assert np.array_equal(graph.replay({"x": X})["out"], X * 0.5)


def test_str_lists_the_guards_and_a_saved_graph_keeps_them_as_data(tmp_path):
    r = Reducer()
    graph = cv.capture(r.forward, SPEC)
    line = _line(Reducer.forward, "self.mode")
    text = str(graph)
    assert text.splitlines()[0].endswith("[1 ops, 3 guards, 0 violations]")
    assert f"\n  guard Mode == <enum 'Mode'>  # read at {HERE}:{line} in forward" in text
    assert re.search(rf"\n  guard self\.mode == <Mode\.SUM: 1>  # read at {HERE}:{line} in "
                     r"forward\n", text + "\n")
    assert f"\n  guard self.axes == (0,)  # read at {HERE}:{line} in forward" in text
    path = str(tmp_path / "g.json")
    graph.save(path)
    with pytest.warns(cv.UncheckedGuardWarning) as caught:
        loaded = cv.load(path)
    assert str(caught[0].message) == (
        "g.json was captured reading 3 Python values from live objects (self.mode == "
        "<Mode.SUM: 1>, self.axes == (0,), Mode == <enum 'Mode'>); a loaded graph cannot read "
        "them, so it replays as captured whatever they hold now: capture again if one changed")
    assert caught[0].filename == __file__
    assert [(g.label, repr(g.value), g.live) for g in loaded.python_guards] == [
        ("self.mode", "<Mode.SUM: 1>", False), ("self.axes", "(0,)", False),
        ("Mode", "<enum 'Mode'>", False)]
    assert str(loaded) == text  # (the listing round-trips)
    r.mode = Mode.MEAN  # the loaded graph has no live object: replays as saved
    assert np.array_equal(loaded.replay({"x": X})["out"], X.sum(0))


# --- values read with no name of fn's own (review 9's guard matrix, gh.py) -------------------

K = 2.0


def _helper(x):
    return x * K


class Helped:
    def forward(self, x):
        return _helper(x)


class Prop:
    def __init__(self):
        self._t = True

    @property
    def training(self):
        return self._t

    def forward(self, x):
        return x * 2.0 if self.training else x * 3.0


class Called:
    def __init__(self):
        self.s = 2.0

    def __call__(self, x):
        return x * self.s

    def forward(self, x):
        return self(x)


class Optional:
    def forward(self, x):
        return x * getattr(self, "p", 0.5)


class Layers:
    class L:
        def fwd(self, x):
            return x * 0.5

    def __init__(self):
        self.layers = [self.L()]
        self.cfg = {}
        self.dt = np.float64
        self.f = lambda x, s=2.0: x * s

    def forward(self, x):
        for layer in self.layers:
            x = layer.fwd(x)
        if "s" in self.cfg:
            x = x * self.cfg["s"]
        return self.f(x).astype(self.dt)


class Fallback:
    def __init__(self):
        self.cfg = {"lr": 0.1}

    def __getattr__(self, name):
        if name == "cfg":
            raise AttributeError(name)
        return self.cfg[name]

    def forward(self, x):
        return x * self.lr


def test_a_global_a_helper_reads_and_a_helper_swapped_are_refused():
    global K, _helper
    graph = cv.capture(Helped().forward, SPEC)
    kept = _helper
    try:
        K = 3.0
        _refused(graph, "K", "2.0", "3.0", "forward", _line(_helper, "return x * K"))
        K = 2.0
        _helper = lambda x: x  # noqa: E731  (monkeypatched)
        with pytest.raises(GuardError, match=r"^_helper was <function _helper> when forward "
                           r"was captured \(read at \S*test_python_guards\.py:\d+ in forward\) "
                           r"and is <function test_\w+\.<locals>\.<lambda>> now"):
            graph.replay({"x": X})
    finally:
        K, _helper = 2.0, kept
    assert np.array_equal(graph.replay({"x": X})["out"], X * 2.0)


def test_a_property_and_a_callable_object_are_read_through():
    p = Prop()
    graph = cv.capture(p.forward, SPEC)
    p._t = False
    _refused(graph, "self._t", "True", "False", "forward", _line(Prop.training.fget, "_t"))
    c = Called()
    graph = cv.capture(c.forward, SPEC)
    c.s = 5.0
    _refused(graph, "self.s", "2.0", "5.0", "forward", _line(Called.__call__, "self.s"))


def test_an_attribute_added_later_where_getattr_read_a_default_is_refused():
    o = Optional()
    graph = cv.capture(o.forward, SPEC)
    assert np.array_equal(graph.replay({"x": X})["out"], X * 0.5)
    o.p = 0.9
    with pytest.raises(GuardError, match=r"^self\.p was absent when forward was captured "
                       r"\(read at \S*test_python_guards\.py:\d+ in forward\) and holds 0\.9 "
                       r"now, so the graph computes what the code did with the old value\."):
        graph.replay({"x": X})


def test_a_layer_added_a_key_added_a_dtype_and_a_default_changed_are_refused():
    m = Layers()
    graph = cv.capture(m.forward, SPEC)
    m.layers.append(Layers.L())
    _refused(graph, "len(self.layers)", "1", "2", "forward",
             _line(Layers.forward, "self.layers"))
    m.layers.pop()
    m.cfg["s"] = 4.0
    with pytest.raises(GuardError) as info:  # (R12 #14: the key named, stop 41)
        graph.replay({"x": X})
    assert re.fullmatch(
        rf"self\.cfg\['s'\] added since forward was captured, whose code reads self\.cfg \(read "
        rf"at \S*{HERE}:{_line(Layers.forward, 'self.cfg')} in \w+\), so the graph is the program "
        r"for the keys self\.cfg had then\.\nFix: capture forward again after changing the keys "
        r"of self\.cfg \(a graph per set of keys: keep one for each\)", str(info.value)), \
        str(info.value)
    del m.cfg["s"]
    m.dt = np.float32
    _refused(graph, "self.dt", "<class 'numpy.float64'>", "<class 'numpy.float32'>",
             "forward", _line(Layers.forward, "self.dt"))
    m.dt = np.float64
    m.f.__defaults__ = (3.0,)
    _refused(graph, "self.f.__defaults__", "(2.0,)", "(3.0,)", "forward",
             _line(Layers.forward, "self.f"))
    m.f.__defaults__ = (2.0,)
    assert np.array_equal(graph.replay({"x": X})["out"], X)


def test_a_class_with_getattr_has_every_value_inside_guarded():
    f = Fallback()
    graph = cv.capture(f.forward, SPEC)
    f.cfg["lr"] = 0.3
    _refused(graph, "self.cfg['lr']", "0.1", "0.3", "forward", _line(Fallback.forward, "lr"))


# --- a module tree deeper than the walk of places.py; values the loop changes, not fn ----------

class Module:
    def __init__(self):
        self.__dict__["_modules"] = {}
        self.training = True

    def __setattr__(self, k, v):
        if isinstance(v, Module):
            self._modules[k] = v
        else:
            object.__setattr__(self, k, v)

    def __getattr__(self, k):
        modules = self.__dict__.get("_modules", {})
        if k in modules:
            return modules[k]
        raise AttributeError(k)

    def __call__(self, x):
        return self.forward(x)

    def eval(self):
        self.training = False
        for m in self._modules.values():
            m.eval()


class Dropout(Module):
    def __init__(self, p):
        super().__init__()
        self.p = p

    def forward(self, x):
        return x * (1.0 - self.p) if self.training else x


class Block(Module):
    def __init__(self):
        super().__init__()
        self.drop = Dropout(0.5)

    def forward(self, x):
        return self.drop(x)


class Tree(Module):
    def __init__(self):
        super().__init__()
        self.body = Block()
        self.head = Block()

    def forward(self, x):
        return self.head(self.body(x))


def test_a_dropout_p_six_levels_down_a_module_tree_and_its_eval_are_refused():
    """Review 9, finding 5 (silent): the walk of places.py stops three levels down."""
    tree = Tree()
    graph = cv.capture(tree, SPEC)
    tree.body.drop.p = 0.1
    _refused(graph, "self._modules['body']._modules['drop'].p", "0.5", "0.1", "__call__",
             _line(Dropout.forward, "self.p"))
    tree.body.drop.p = 0.5
    tree.eval()
    with pytest.raises(GuardError, match=r"^self\.training was True when __call__ was captured"):
        graph.replay({"x": X})


class Trainer:
    def __init__(self):
        import random
        self.rng = random.Random(0)
        self.p = 0.5

    def forward(self, x):
        return x * self.p


def test_a_library_object_s_attributes_the_code_does_not_name_are_not_guarded():
    """Review 9, finding 8 (refusal of common code): random.Random's gauss_next."""
    trainer = Trainer()
    graph = cv.capture(trainer.forward, SPEC)
    trainer.rng.gauss(0.0, 1.0)  # the loop draws: gauss_next changes
    assert np.array_equal(graph.replay({"x": X})["out"], X * 0.5)


class Phased:
    def __init__(self):
        self.phase = "init"

    def forward(self, x):
        self.phase = "train"
        return x * 2.0 if self.phase == "train" else x


def test_a_value_the_call_assigns_first_is_assigned_by_each_replay():
    """Review 9's g_over.py G16 (the first replay after a cold capture was refused)."""
    m = Phased()
    graph = cv.capture(m.forward, SPEC)
    for _ in range(2):
        m.phase = "init"  # the user's loop resets it: the call sets it again
        assert np.array_equal(graph.replay({"x": X})["out"], X * 2.0)
        assert m.phase == "train"


def test_a_guard_is_checked_after_a_state_s_place_in_a_replay_with_states():
    """A rebound state is told so first (its message is the more precise)."""
    model = BN()
    graph = cv.capture(model.forward, SPEC)
    model.rm = np.zeros(3)
    model.training = False
    with pytest.raises(cv.ReplayInputError, match=r"^self\.rm was rebound after the capture|"
                       r".*rm was rebound after the capture"):
        graph.replay({"x": X})


# --- values the call assigns before it reads them (review 9, finding 17) ------------------------

class Trained:
    def __init__(self):
        self.model = BN()

    def train_step(self, x):
        self.model.train()
        return self.model.forward(x) * 2.0

    def eval_step(self, x):
        self.model.eval()
        return self.model.forward(x)



def _train(self):
    self.training = True


def _eval(self):
    self.training = False


BN.train, BN.eval = _train, _eval


def test_a_train_step_that_calls_model_train_replays_after_an_eager_evaluation():
    """Review 9, finding 17 (regression of fdda064): every replay after the first eager
    eval_step was refused, where the step sets training = True before reading it."""
    trainer, twin = Trained(), Trained()
    trainer.model.train()
    twin.model.train()
    graph = cv.capture(trainer.train_step, SPEC)
    line = _line(_train, "self.training = True")
    assert (f"\n  set self.model.training = True  # as train_step does before reading it, at "
            f"{HERE}:") in str(graph)
    for k in range(3):
        x = X + k
        assert np.array_equal(graph.replay({"x": x})["out"], twin.train_step(x))
        assert trainer.model.training is True and np.array_equal(trainer.model.rm, twin.model.rm)
        assert np.array_equal(trainer.eval_step(x), twin.eval_step(x))  # eager, between steps
        assert trainer.model.training is False
    assert line > 0


class Once:
    def __init__(self):
        self.ready = True
        self.scale = 2.0

    def forward(self, x):
        if not self.ready:  # read before the write below: guarded
            self.scale = 3.0
        self.ready = True
        return x * self.scale


def test_a_flag_read_before_the_call_sets_it_stays_guarded():
    once = Once()
    graph = cv.capture(once.forward, SPEC)
    once.ready = False
    _refused(graph, "self.ready", "True", "False", "forward", _line(Once.forward, "if not"))


class Wide:
    def __init__(self, n):
        self.cfg = types.SimpleNamespace(**{f"c{k}": 0.5 for k in range(n)})
        self.v = [0.5] * n
        self.training = True

    def forward(self, x):
        x = x * self.cfg.c299 * self.v[299]
        for k in range(0, 300, 60):  # (names 5 more of them: getattr reads strings)
            x = x * getattr(self.cfg, f"c{k}")
        return x * 2.0 if self.training else x


def test_values_past_the_walk_s_limits_are_guarded():
    """Review 9, finding 21 (silent): past 256 attributes or items, and past 4096 guards."""
    wide = Wide(300)
    graph = cv.capture(wide.forward, SPEC)
    assert len(graph.python_guards) > 300
    wide.cfg.c299 = 0.25
    with pytest.raises(GuardError, match=r"^self\.cfg\.c299 was 0\.5 when forward"):
        graph.replay({"x": X})
    wide.cfg.c299 = 0.5
    wide.v[299] = 0.25
    with pytest.raises(GuardError, match=r"^self\.v\[299\] was 0\.5 when forward"):
        graph.replay({"x": X})
    wide.v[299] = 0.5
    big = Wide(5000)
    graph = cv.capture(big.forward, SPEC)
    big.training = False
    with pytest.raises(GuardError, match=r"^self\.training was True when forward"):
        graph.replay({"x": X})


STEP = 0  # a loop counter of the user's module, which the captured code never reads
SCALE0 = 2.0


class Named:
    def __init__(self):
        self.layer0 = np.full(3, 1.0)
        self.layer1 = np.full(3, 2.0)

    def forward(self, x):
        for i in range(2):
            x = x * getattr(self, f"layer{i}")  # an attribute by a name built at run time
        return x


def scaled(x):
    return x * globals()[f"SCALE{0}"]  # a global by a name built at run time


def test_getattr_of_a_built_name_reads_attributes_and_globals_does_globals():
    """Review 10, finding 1 (refusal of common code): ``getattr(self, f"layer{i}")`` made every
    global of the module a guard, so a warm-up loop's ``step`` changed refused each replay
    (read at the def line). ``globals()[k]`` reads globals: still guarded."""
    global STEP, SCALE0
    layers = Named()
    graph = cv.capture(layers.forward, SPEC)
    assert not [g for g in graph.python_guards if g.label == "STEP"]
    for STEP in range(1, 4):
        assert np.array_equal(graph.replay({"x": X})["out"], layers.forward(X))
    graph = cv.capture(scaled, SPEC)
    SCALE0 = 3.0
    try:
        with pytest.raises(GuardError, match=r"^SCALE0 was 2\.0 when scaled was captured"):
            graph.replay({"x": X})
    finally:
        SCALE0 = 2.0


class LayerDict(dict):
    pass


class LayerList(list):
    pass


class Held:
    def __init__(self):
        self.layers = LayerDict(a=Drop())
        self.blocks = LayerList([Drop()])

    def forward(self, x):
        for layer in self.layers.values():
            x = layer.forward(x)
        for block in self.blocks:
            x = block.forward(x)
        return x


def test_layers_held_in_a_user_s_dict_or_list_subclass_are_guarded():
    """20p's finding (silent): ``class Layers(dict)`` holding the layers: no guard at all."""
    held = Held()
    graph = cv.capture(held.forward, SPEC)
    held.layers["a"].p = 0.25
    with pytest.raises(GuardError, match=r"^self\.layers\['a'\]\.p was 0\.5 when forward"):
        graph.replay({"x": X})
    held.layers["a"].p = 0.5
    held.blocks[0].p = 0.25
    with pytest.raises(GuardError, match=r"^self\.blocks\[0\]\.p was 0\.5 when forward"):
        graph.replay({"x": X})
    held.blocks[0].p = 0.5
    assert np.array_equal(cv.capture(held.forward, SPEC).replay({"x": X})["out"],
                          held.forward(X))


class Memo:
    def __init__(self):
        self.memo = {}
        self.last = {}

    def forward(self, x):
        if "s" not in self.memo:
            self.memo["s"] = 2.0  # filled when missing
        self.last["s"] = 3.0  # set by each call, whatever it held
        return x * self.memo["s"] * self.last["s"]


def test_a_memo_entry_the_user_put_there_between_replays_is_refused():
    """A cold capture of a memo (review 8's memo kinds): each replay sets the entry the call
    set when it found none; an entry the user put there with another value, which an eager
    call reads instead, was silently overwritten."""
    memo = Memo()
    graph = cv.capture(memo.forward, SPEC)
    for _ in range(2):  # (the first replay fills it, the second finds it filled)
        assert np.array_equal(graph.replay({"x": X})["out"], X * 6.0)
        assert memo.memo == {"s": 2.0}
    memo.last["s"] = 7.0  # (each call sets it again: no guard)
    assert np.array_equal(graph.replay({"x": X})["out"], X * 6.0)
    memo.memo["s"] = 5.0
    with pytest.raises(GuardError, match=r"^self\.memo\['s'\] was 2\.0 when forward was "
                                         r"captured .* and is 5\.0 now"):
        graph.replay({"x": X})
    memo.memo.clear()
    assert np.array_equal(graph.replay({"x": X})["out"], X * 6.0)
    memo.memo["s"] = 5.0
    again = cv.capture(memo.forward, SPEC)  # the fix
    assert np.array_equal(again.replay({"x": X})["out"], memo.forward(X))


class Defaults(dict):
    def __missing__(self, key):
        return 0.0


class WithDefaults:
    def __init__(self):
        self.sub = Defaults()

    def forward(self, x):
        return x * (1.0 + self.sub.get("s", 0.0))


def test_a_key_added_to_a_user_s_dict_subclass_is_refused():
    """Review 10 (12:06, regression of the squash): a dict subclass's keys were not guarded,
    so m.sub['s'] = 2.0 between replays replayed the default (1.0 where eager gives 3.0)."""
    m = WithDefaults()
    graph = cv.capture(m.forward, SPEC)
    m.sub["s"] = 2.0
    with pytest.raises(GuardError, match=r"^self\.sub\['s'\] added since forward was captured"):
        graph.replay({"x": X})


class HelperMemo:
    def __init__(self):
        self.memo = {}

    def scale(self, n):
        if n not in self.memo:
            self.memo[n] = 1.0 / n
        return self.memo[n]

    def forward(self, x):
        return x * self.scale(4)


def test_a_memo_filled_in_a_helper_is_refused_when_the_user_puts_another_value():
    """Review 10, finding 12 (silent): the memo tested in a helper with a variable key."""
    m = HelperMemo()
    graph = cv.capture(m.forward, SPEC)
    assert np.array_equal(graph.replay({"x": X})["out"], X * 0.25)
    m.memo[4] = 0.5
    with pytest.raises(GuardError, match=r"^self\.memo\[4\] was 0\.25 when forward"):
        graph.replay({"x": X})
