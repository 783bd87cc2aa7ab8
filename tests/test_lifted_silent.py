"""What a lifted pass (capviz/trace/lifted.py) cannot see, and so must not decide (review 4,
finding 11): a weak reference to a state hands NumPy the live array, which a lifted pass leaves
at its start value; ``isinstance(self.W, np.ndarray)`` and ``type(self.W)`` answer otherwise
for a lifted tensor than for the ndarray that eager NumPy (and the two passes) hold. Each
program is captured cold (a first capture) and warm (a later capture of the same function and
object, which lifts where it may), and the graph is replayed against eager calls of a twin over
three calls: outputs and every state, bit for bit, dtypes included."""

import builtins
import collections.abc
import contextlib
import ctypes
import functools
import sys
import weakref

import numpy as np
import pytest

import capviz as cv
from capviz.core.own_weakrefs import OwnRef, only_own


class _Runs(list):
    """Counts the runs of a captured function: a list subclass, which capviz does not walk,
    so each run's append stays (a plain list's Python values are logged by replays)."""


RUNS = _Runs()  # one item per run of a captured step (a side effect both paths make)
REGISTRY = weakref.WeakValueDictionary()  # a cache of the user's, holding arrays weakly
XS = [np.array([1.0, 2.0, 3.0]), np.array([0.5, -1.0, 2.0]), np.array([3.0, 1.0, -2.0])]


@pytest.fixture(autouse=True)
def _fresh():
    RUNS.clear()
    yield
    RUNS.clear()


class Base:
    def __init__(self):
        self.W = np.array([1.0, 2.0, 3.0])


# --- weak references of the user's ------------------------------------------------------------

class WeakCopy(Base):
    """Review 4's lift_weak2.py: NumPy copies the live array through a weakref.ref (``copy``
    is no hook), before the write."""

    def __init__(self):
        super().__init__()
        self._ref = weakref.ref(self.W)

    def step(self, x):
        RUNS.append(1)
        v = self._ref().copy()
        self.W -= 0.1 * x
        return x * v


class WeakProxy(Base):
    def __init__(self):
        super().__init__()
        self._p = weakref.proxy(self.W)

    def step(self, x):
        RUNS.append(1)
        v = np.array(self._p, copy=True)
        self.W -= 0.1 * x
        return x * v


class WeakCache(Base):
    def __init__(self):
        super().__init__()
        REGISTRY[id(self)] = self.W

    def step(self, x):
        RUNS.append(1)
        v = REGISTRY[id(self)].copy()  # NumPy's own read, before the write
        self.W -= 0.1 * x
        return x * v


class RawAlias(Base):
    """An array made from the state's raw address holds no reference to it."""

    def __init__(self):
        super().__init__()
        pointer = ctypes.cast(self.W.ctypes.data, ctypes.POINTER(ctypes.c_double))
        self._raw = np.ctypeslib.as_array(pointer, shape=(3,))

    def step(self, x):
        RUNS.append(1)
        v = self._raw.copy()
        self.W -= 0.1 * x
        return x * v


# --- isinstance and type of a state -----------------------------------------------------------

class IsinstanceRead(Base):
    """Review 4's lift3.py F6: ``isinstance`` chooses what is read."""

    def step(self, x):
        RUNS.append(1)
        W = self.W if isinstance(self.W, np.ndarray) else np.zeros(3)
        y = x * W
        self.W -= 0.1 * x
        return y


class IsinstanceAfterWrite(Base):
    def step(self, x):
        RUNS.append(1)
        self.W -= 0.1 * x
        scale = 2.0 if isinstance(self.W, np.ndarray) else 3.0
        return x * scale


class IsinstanceOfDerived(Base):
    """A value computed from the state: an ndarray in eager NumPy, a tensor when lifted."""

    def step(self, x):
        RUNS.append(1)
        y = self.W * 2.0
        scale = 2.0 if isinstance(y, np.ndarray) else 3.0
        self.W -= 0.1 * x
        return x * scale


class IsinstanceOfAnABC(Base):
    def step(self, x):
        RUNS.append(1)
        scale = 3.0 if isinstance(self.W, collections.abc.Sequence) else 2.0
        self.W -= 0.1 * x
        return x * scale


class TypeRead(Base):
    """Review 4's lift3.py F7."""

    def step(self, x):
        RUNS.append(1)
        self.W -= 0.1 * x
        scale = 2.0 if type(self.W) is np.ndarray else 3.0
        return x * scale


def _scale_for(a):
    return 2.0 if type(a) is np.ndarray else 3.0


class TypeInAHelper(Base):
    def step(self, x):
        RUNS.append(1)
        scale = _scale_for(self.W)
        self.W -= 0.1 * x
        return x * scale


class TypeInAMethod(Base):
    def _scale(self):
        return 2.0 if type(self.W) is np.ndarray else 3.0

    def step(self, x):
        RUNS.append(1)
        self.W -= 0.1 * x
        return x * self._scale()


class Scaler:
    def scale(self, a):
        return 2.0 if type(a).__name__ == "ndarray" else 3.0


class TypeInAPart(Base):
    """``type`` in a method of an object the model holds (``self.scaler.scale``)."""

    def __init__(self):
        super().__init__()
        self.scaler = Scaler()

    def step(self, x):
        RUNS.append(1)
        self.W -= 0.1 * x
        return x * self.scaler.scale(self.W)


class TypeInAHeldFunction(Base):
    """``type`` in a function the model holds (``self.pick``): no name of step's leads to it,
    the walk finds it in the attribute."""

    def __init__(self):
        super().__init__()
        self.pick = _scale_for

    def step(self, x):
        RUNS.append(1)
        self.W -= 0.1 * x
        return x * self.pick(self.W)


class TypeThroughGetattr(Base):
    """``type`` in a method step reaches by a name built at run time."""

    def _sc(self):
        return 2.0 if type(self.W) is np.ndarray else 3.0

    def step(self, x):
        RUNS.append(1)
        self.W -= 0.1 * x
        return x * getattr(self, "_" + "sc")()


# --- identities asked another way (hostile review 5, findings 1 and 5) -------------------------

T = type  # a global bound to the builtin


def _timed(f):
    @functools.wraps(f)
    def wrapper(*args):
        return f(*args)
    return wrapper


@_timed
def _is_array(a):
    return type(a) is np.ndarray


def _step_with_a_default(self, x, _type=type):
    RUNS.append(1)
    self.W -= 0.1 * x
    return x * (2.0 if _type(self.W) is np.ndarray else 3.0)


class IdKeyedRate(Base):
    """A per-parameter rate keyed by ``id(p)`` (optimisers keep their state so): a lifted
    tensor's id is another, and ``.get`` answers the default."""

    def __init__(self):
        super().__init__()
        self.rate = {id(self.W): 0.5}

    def step(self, x):
        RUNS.append(1)
        self.W -= self.rate.get(id(self.W), 0.1) * x
        return x * 1.0


class TypeAlias(Base):
    def step(self, x):
        RUNS.append(1)
        self.W -= 0.1 * x
        return x * (2.0 if T(self.W) is np.ndarray else 3.0)


class BuiltinsType(Base):
    def step(self, x):
        RUNS.append(1)
        self.W -= 0.1 * x
        return x * (2.0 if builtins.type(self.W) is np.ndarray else 3.0)


class TypeInADecoratedHelper(Base):
    def step(self, x):
        RUNS.append(1)
        self.W -= 0.1 * x
        return x * (2.0 if _is_array(self.W) else 3.0)


class TypeAsADefault(Base):
    step = _step_with_a_default


class ObjectRepr(Base):
    def step(self, x):
        RUNS.append(1)
        self.W -= 0.1 * x
        return x * (2.0 if object.__repr__(self.W).startswith("<numpy") else 3.0)


class ReprRead(Base):
    """``repr`` of a lifted state: the tensor's text, not the ndarray's (a hook sees it)."""

    def step(self, x):
        RUNS.append(1)
        shown = f"{self.W!r}"
        self.W -= 0.1 * x
        return x * (2.0 if shown.startswith("array(") else 3.0)


# --- identities asked with no name type/id (hostile review 6, finding 2) ----------------------

HASHED = {}  # a rate keyed by the state's object hash


class ObjectHash(Base):
    def __init__(self):
        super().__init__()
        HASHED[object.__hash__(self.W)] = 0.5

    def step(self, x):
        RUNS.append(1)
        self.W -= HASHED.get(object.__hash__(self.W), 0.1) * x
        return x * 1.0


class InterfaceInATry(Base):
    """An attribute the tensor lacks, the AttributeError caught by the user's code."""

    def __init__(self):
        super().__init__()
        self.address = self.W.__array_interface__["data"][0]

    def step(self, x):
        RUNS.append(1)
        try:
            same = self.W.__array_interface__["data"][0] == self.address
        except Exception:
            same = False
        self.W -= 0.1 * x
        return x * (2.0 if same else 3.0)


class FlagsInASuppress(Base):
    def step(self, x):
        RUNS.append(1)
        scale = 3.0
        with contextlib.suppress(AttributeError):
            scale = 2.0 if self.W.flags.c_contiguous else 3.0
        self.W -= 0.1 * x
        return x * scale


class MemoryviewInATry(Base):
    """The buffer protocol, which the tensor lacks (no attribute is read)."""

    def step(self, x):
        RUNS.append(1)
        try:
            scale = 2.0 if memoryview(self.W).nbytes == 24 else 3.0
        except Exception:
            scale = 3.0
        self.W -= 0.1 * x
        return x * scale


class Sizeof(Base):
    def step(self, x):
        RUNS.append(1)
        scale = 2.0 if self.W.__sizeof__() > 100 else 3.0
        self.W -= 0.1 * x
        return x * scale


class TypeByABuiltinsLookup(Base):
    """``type`` looked up by a name built at run time in ``__builtins__``."""

    def step(self, x):
        RUNS.append(1)
        kind = getattr(builtins, "ty" + "pe")
        self.W -= 0.1 * x
        return x * (2.0 if kind(self.W) is np.ndarray else 3.0)


class TypeByTheBuiltinsName(Base):
    def step(self, x):
        RUNS.append(1)
        found = __builtins__ if isinstance(__builtins__, dict) else vars(__builtins__)
        self.W -= 0.1 * x
        return x * (2.0 if found["ty" + "pe"](self.W) is np.ndarray else 3.0)


class Getsizeof(Base):
    def step(self, x):
        RUNS.append(1)
        scale = 2.0 if sys.getsizeof(self.W) > 100 else 3.0
        self.W -= 0.1 * x
        return x * scale


class PriorityByGetattr(Base):
    """An attribute the tensor has with another value, read by a name in a string."""

    def step(self, x):
        RUNS.append(1)
        scale = 2.0 if getattr(self.W, "__array_priority__", None) == 0.0 else 3.0
        self.W -= 0.1 * x
        return x * scale


WEAK = [WeakCopy, WeakProxy, WeakCache, RawAlias]
CLASS_READS = [IsinstanceRead, IsinstanceAfterWrite, IsinstanceOfDerived, IsinstanceOfAnABC]
TYPE_READS = [TypeRead, TypeInAHelper, TypeInAMethod, TypeInAPart, TypeInAHeldFunction,
              TypeThroughGetattr, IdKeyedRate, TypeAlias, BuiltinsType, TypeInADecoratedHelper,
              TypeAsADefault, ObjectRepr, ObjectHash, InterfaceInATry, FlagsInASuppress,
              MemoryviewInATry, Sizeof, TypeByABuiltinsLookup, TypeByTheBuiltinsName,
              Getsizeof, PriorityByGetattr]
CLASS_READS += [ReprRead]


def _replays_as_eager(graph, model, twin):
    for call, x in enumerate(XS):
        out = graph.replay({"x": x})["out"]
        want = twin.step(x)
        assert out.dtype == want.dtype and np.array_equal(out, want), (call, out, want)
        assert model.W.dtype == twin.W.dtype and np.array_equal(model.W, twin.W), call


@pytest.mark.parametrize("make", WEAK + CLASS_READS + TYPE_READS)
def test_a_first_capture_replays_as_eager(make):
    model, twin = make(), make()
    graph = cv.capture(model.step, cv.spec((3,), "float64"))
    _replays_as_eager(graph, model, twin)


@pytest.mark.parametrize("make", WEAK + CLASS_READS + TYPE_READS)
def test_a_later_capture_replays_as_eager(make):
    """The weak reference and ``type`` keep the later capture from lifting (two passes);
    an ``isinstance`` of a tensor computed from a lifted state throws the lifted run away
    (three runs); every graph replays as eager."""
    model, twin = make(), make()
    cv.capture(model.step, cv.spec((3,), "float64"))
    twin.step(XS[0])  # the twin keeps step with the model: the first graph is not replayed,
    model.step(XS[0])  # the model advanced by an eager call
    RUNS.clear()
    graph = cv.capture(model.step, cv.spec((3,), "float64"))
    assert len(RUNS) == (3 if make in CLASS_READS else 2)
    assert graph.complete
    _replays_as_eager(graph, model, twin)


def test_capviz_s_own_weak_references_do_not_stop_the_lifting():
    """Earlier graphs and their replays hold weak references to the state (OwnRef): a later
    capture still lifts it and runs fn once."""
    class Plain(Base):
        def step(self, x):
            RUNS.append(1)
            self.W -= 0.1 * x
            return x * 2.0

    model, twin = Plain(), Plain()
    graphs = [cv.capture(model.step, cv.spec((3,), "float64")) for _ in range(3)]
    for graph in graphs:
        graph.replay({"x": XS[0]})
        twin.step(XS[0])
    assert weakref.getweakrefcount(model.W) >= 3
    RUNS.clear()
    graph = cv.capture(model.step, cv.spec((3,), "float64"))
    assert len(RUNS) == 1  # lifted: one pass
    _replays_as_eager(graph, model, twin)


def test_an_isinstance_of_an_input_keeps_the_one_pass():
    """An input is a tensor in every capture (the documented trade): its isinstance is the
    same in the lifted run and the two passes, so the lifted run stands."""

    class Checked(Base):
        def step(self, x):
            RUNS.append(1)
            scale = 2.0 if isinstance(x, np.ndarray) else 3.0
            self.W -= 0.1 * x
            return x * scale

    model = Checked()
    first = cv.capture(model.step, cv.spec((3,), "float64"))
    RUNS.clear()
    later = cv.capture(model.step, cv.spec((3,), "float64"))
    assert len(RUNS) == 1
    assert later.replay({"x": XS[0]}, state="return")["out"].tolist() == \
        first.replay({"x": XS[0]}, state="return")["out"].tolist() == [3.0, 6.0, 9.0]


def test_only_own_tells_capviz_s_weak_references_from_the_user_s():
    a = np.zeros(3)
    assert only_own(a)
    own = OwnRef(a)
    assert only_own(a) and own() is a and isinstance(own, weakref.ref)
    for make in (weakref.ref, weakref.proxy):
        held = make(a)
        assert not only_own(a)
        del held
        assert only_own(a)
    cache = weakref.WeakValueDictionary({"a": a})
    assert not only_own(a)
    cache.clear()
    assert only_own(a)


UNREGISTERED = '''
import numpy as np


class Model:
    def __init__(self):
        self.W = np.array([1.0, 2.0, 3.0])

    def _scale(self):
        return 2.0 if type(self.W) is np.ndarray else 3.0

    def step(self, x):
        self.W -= 0.1 * x
        return x * self._scale()
'''


def test_type_in_a_method_of_a_module_not_in_sys_modules_keeps_the_two_passes(tmp_path):
    """A module loaded by importlib.util.module_from_spec and exec_module, not registered in
    sys.modules (plugin loaders, config systems; hostile review 6, finding 2): its class's
    methods are the user's code and are read, so a later capture keeps the two passes."""
    import importlib.util

    path = tmp_path / "plugin_model.py"
    path.write_text(UNREGISTERED)
    spec = importlib.util.spec_from_file_location("plugin_model_unregistered", path)
    plugin = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(plugin)
    model, twin = plugin.Model(), plugin.Model()
    cv.capture(model.step, cv.spec((3,), "float64"))
    twin.step(XS[0])
    model.step(XS[0])
    graph = cv.capture(model.step, cv.spec((3,), "float64"))
    _replays_as_eager(graph, model, twin)


def test_every_ndarray_attribute_a_tensor_lacks_is_listed():
    """code_reach.ARRAY_ONLY covers the ndarray's attributes the capture tensor lacks (an
    error a lifted tensor raises there, caught by the user's code, chooses unseen)."""
    from capviz.trace.code_reach import ARRAY_ONLY
    from capviz.trace.tensor import Tensor

    assert set(dir(np.ndarray)) - set(dir(Tensor)) <= ARRAY_ONLY
