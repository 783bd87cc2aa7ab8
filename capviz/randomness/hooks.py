"""Randomness hooks: reseeds of, and draws from, NumPy's, Python's and CuPy's global generators.

While a capture is open, a call that reseeds a global generator (``np.random.seed``,
``random.setstate``...) is a ``seed`` violation, and a call that draws from one
(``np.random.rand``, ``random.gauss``...) is a ``frozen_random`` violation: its values would be
frozen into the graph as a constant. With ``global_random="record"`` NumPy's common draws are
recorded as capviz random ops instead (:mod:`capviz.randomness.legacy`).

The tables below are the inventory of every RNG entry point and what capviz does with it;
``docs/guide/randomness.md`` shows them (``docs/gen_random_inventory.py`` writes that table and a
test checks it, and checks the tables against ``dir(np.random)`` and ``dir(random)``).

The hooks replace module attributes (and stand in for ``np.random.mtrand._rand`` and the methods
of ``random._inst``) when the first capture scope of the process opens, and are removed when the
last one closes, so outside a capture these functions are the originals and cost exactly what
they always did. While installed, a hooked call from a thread that is not capturing goes straight
to the original.
"""

from __future__ import annotations

import dis
import functools
import linecache
import random
import sys
import threading
import types
import weakref
from collections.abc import Callable, Iterable
from typing import Any

import numpy.random
import numpy.random.mtrand

from capviz.core.source import format_source, is_user_file, user_source
from capviz.core.user_code import UserCode, shorten
from capviz.core.violations import (
    Failure,
    bound_draw_message,
    explain,
    frozen_message,
    make_error,
    seed_message,
)
from capviz.randomness import creation, generator_watch, generators, legacy
from capviz.trace.context import active, active_recorders
from capviz.trace.recapture import line_code
from capviz.trace.recorder import Recorder
from capviz.trace.tensor import Tensor

# --- the inventory -----------------------------------------------------------------------------

NUMPY_SEEDS = ("seed", "set_state", "set_bit_generator")
"""Reseed NumPy's legacy global ``RandomState`` (``np.random.X``, ``np.random.mtrand.X``)."""

NUMPY_DRAWS = (
    "beta", "binomial", "bytes", "chisquare", "choice", "dirichlet", "exponential", "f", "gamma",
    "geometric", "gumbel", "hypergeometric", "laplace", "logistic", "lognormal", "logseries",
    "multinomial", "multivariate_normal", "negative_binomial", "noncentral_chisquare",
    "noncentral_f", "normal", "pareto", "permutation", "poisson", "power", "rand", "randint",
    "randn", "random", "random_integers", "random_sample", "ranf", "rayleigh", "sample",
    "shuffle", "standard_cauchy", "standard_exponential", "standard_gamma", "standard_normal",
    "standard_t", "tomaxint", "triangular", "uniform", "vonmises", "wald", "weibull", "zipf",
)
"""Draw from NumPy's legacy global ``RandomState`` (``tomaxint`` exists only as a method)."""

NUMPY_SEEDED_CREATION = ("default_rng", "RandomState", "MT19937", "PCG64", "PCG64DXSM", "Philox",
                         "SFC64")
"""Create a generator: a ``seed`` violation when given a seed inside a capture (the classes are
replaced by :class:`_ClassStandIn` while hooked)."""

NUMPY_NOT_HOOKED = {
    "get_state": "reads the global state; changes nothing",
    "get_bit_generator": "returns the global bit generator; assigning its `.state` is seen "
                         "when the scope closes (an unhooked use)",
    "Generator": "a class that seeds nothing itself: a Generator object's methods are C code; "
                 "an object the capture reaches is replaced for the scope by a stand-in that "
                 "records its draws (capviz.randomness.generators), and a draw it does not "
                 "record is seen by the object's state when the scope closes "
                 "(capviz.randomness.generator_watch)",
    "BitGenerator": "the base class: assigning `.state` of your own bit generator made before "
                    "the capture is seen when the scope closes, wherever it is held "
                    "(capviz.randomness.backstop)",
    "SeedSequence": "a class: makes seeds, draws nothing",
    "Sequence": "not an RNG entry point (`collections.abc.Sequence`, imported by mtrand)",
    "test": "not an RNG entry point (NumPy's test runner)",
}

PYTHON_SEEDS = ("seed", "setstate")
"""Reseed Python's global ``random.Random`` (``random.X`` and ``random._inst.X``)."""

PYTHON_DRAWS = (
    "betavariate", "binomialvariate", "choice", "choices", "expovariate", "gammavariate", "gauss",
    "getrandbits", "lognormvariate", "normalvariate", "paretovariate", "randbytes", "randint",
    "random", "randrange", "sample", "shuffle", "triangular", "uniform", "vonmisesvariate",
    "weibullvariate",
)
"""Draw from Python's global generator (``binomialvariate``: Python 3.12 and later)."""

PYTHON_NOT_HOOKED = {
    "getstate": "reads the global state; changes nothing",
    "Random": "a class: making `random.Random(seed)` objects is not seen; a draw from one the "
              "capture reaches is recorded as a draw of it, a reseed is a seed violation "
              "(capviz.randomness.generators)",
    "SystemRandom": "a class: draws from the OS entropy source are not seen (and never "
                    "reproducible)",
}

CUPY_SEEDS = ("seed", "set_random_state", "reset_states")
"""Reseed CuPy's global generators (when ``cupy.random`` is loaded; untested without a GPU)."""

CUPY_DRAWS = (
    "beta", "binomial", "chisquare", "choice", "dirichlet", "exponential", "f", "gamma",
    "geometric", "gumbel", "hypergeometric", "laplace", "logistic", "lognormal", "logseries",
    "multinomial", "multivariate_normal", "negative_binomial", "noncentral_chisquare",
    "noncentral_f", "normal", "pareto", "permutation", "poisson", "power", "rand", "randint",
    "randn", "random", "random_integers", "random_sample", "ranf", "rayleigh", "sample",
    "shuffle", "standard_cauchy", "standard_exponential", "standard_gamma", "standard_normal",
    "standard_t", "triangular", "uniform", "vonmises", "wald", "weibull", "zipf",
)
"""Draw from CuPy's global generator (a static list from CuPy's documentation)."""

CUPY_NOT_HOOKED = {
    "get_random_state": "returns the global RandomState; draws through it are not seen",
    "default_rng": "creating a Generator is not seen",
    "RandomState": "a class: its objects' draws are not seen",
    "Generator": "a class: its objects' draws are not seen",
    "BitGenerator": "a class",
    "XORWOW": "a class (bit generator)",
    "MRG32k3a": "a class (bit generator)",
    "Philox4x3210": "a class (bit generator)",
}

# --- reporting -----------------------------------------------------------------------------------

_busy = threading.local()  # set while a hook runs: inner hooked calls go to the original


def call_text(name: str, args: tuple, kwargs: dict) -> str:
    """``np.random.seed(42)``: the call as the user wrote it, shortened."""
    parts = [_short(a) for a in args] + [f"{k}={_short(v)}" for k, v in kwargs.items()]
    text = ", ".join(parts)
    if len(text) > 40:
        text = text[:37] + "..."
    return f"{name}({text})"


def _short(value: Any) -> str:
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        return f"<{type(value).__name__} {value.dtype}{list(value.shape)}>"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _open_here() -> list[Recorder]:
    """The open captures of the current context (thread or asyncio task), innermost first."""
    return list(reversed(active_recorders()))


def report(kind: str, call: str, message: str, source: Any,
           elsewhere: Iterable[Recorder] = (), elsewhere_message: str = "") -> None:
    """Record a violation in every open capture it affects, then raise for the innermost one
    whose policy is ``raise``.

    The captures of this context (nested scopes included) record it at once; a capture of another
    thread or task in ``elsewhere`` records it in its own context, at its next random op or when
    its scope closes (a reseed of the device it draws from), with ``elsewhere_message``.
    """
    here = _open_here()
    for recorder in elsewhere:
        if recorder not in here and not recorder.closed:
            recorder.pending.append((kind, call, elsewhere_message or message, source))
    raising = None
    for recorder in here:
        recorder.violation(kind, call, message, source, raise_now=False)
        if raising is None and recorder.on_violation == "raise" and recorder.raised is not None:
            raising = recorder.raised
    if raising is not None:
        raise raising


def report_seed(call: str, elsewhere: Iterable[Recorder] = ()) -> None:
    """Report a reseed: a ``seed`` violation of every open capture it affects."""
    source = user_source()
    report("seed", call, seed_message(call, source), source, elsewhere,
           seed_message(f"{call}, from another thread or task,", source))


def report_frozen(call: str, generator: str, reason: str = "") -> None:
    """Report a draw from a global generator: a ``frozen_random`` violation."""
    source = user_source()
    report("frozen_random", call, frozen_message(call, generator, source, reason), source)


# --- the hooks ---------------------------------------------------------------------------------


def _wrap(hooked: Callable, original: Callable, name: str) -> Callable:
    hooked.__wrapped__ = original  # type: ignore[attr-defined]
    hooked.__name__ = getattr(original, "__name__", name)
    hooked.__doc__ = getattr(original, "__doc__", None)
    return hooked


def _seed_hook(name: str, original: Callable) -> Callable:
    def hooked(*args: Any, **kwargs: Any) -> Any:
        _calls[0] += 1
        if active() is not None and not getattr(_busy, "on", False):
            _busy.on = True
            try:
                if _open_here():
                    report_seed(call_text(name, args, kwargs))
                return original(*args, **kwargs)
            finally:
                _busy.on = False
        return original(*args, **kwargs)

    return _wrap(hooked, original, name)


def _seeded(args: tuple, kwargs: dict) -> bool:
    """Whether a generator made with these arguments is seeded by them (not fresh entropy, not
    an existing generator or bit generator wrapped)."""
    seeds = list(args) + [kwargs.get("seed"), kwargs.get("key")]
    return any(s is not None and not hasattr(s, "capsule") and not hasattr(s, "bit_generator")
               for s in seeds)


def _report_creation(label: str, args: tuple, kwargs: dict) -> None:
    if _seeded(args, kwargs) and active() is not None and not getattr(_busy, "on", False):
        if _open_here():
            report_seed(call_text(label, args, kwargs))


def _watch_made(made: Any, label: str, args: tuple, kwargs: dict) -> Any:
    """A generator made without a seed inside a capture is watched like one the capture can
    reach (:mod:`capviz.randomness.generator_watch`): a draw from it by scope exit is
    ``frozen_random``."""
    if active() is None or _seeded(args, kwargs):
        return made
    here = _open_here()
    if here:
        source = format_source(user_source())
        watched = generator_watch.note_made(
            made, f"the generator made by {call_text(label, args, kwargs)} at {source}")
        for recorder in here:
            recorder.made_generators += watched
    return made


def _creation_hook(name: str, original: Callable) -> Callable:
    """``default_rng(seed)``: seeding a new generator inside a capture is a reseed."""

    def hooked(*args: Any, **kwargs: Any) -> Any:
        _calls[0] += 1
        _report_creation(name, args, kwargs)
        return _watch_made(original(*args, **kwargs), name, args, kwargs)

    return _wrap(hooked, original, name)


class _ClassStandIn:
    """Stands in for a generator class (``np.random.RandomState``, ``np.random.PCG64``...) while
    hooked: calling it with a seed reports a reseed, then makes a real object. ``isinstance``,
    ``issubclass``, subclassing and attributes go to the real class; only ``type(obj) is
    np.random.RandomState`` differs while a capture is open."""

    __slots__ = ("__wrapped__", "_label")

    def __init__(self, real: type, label: str) -> None:
        self.__wrapped__ = real
        self._label = label

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        _report_creation(self._label, args, kwargs)
        return _watch_made(self.__wrapped__(*args, **kwargs), self._label, args, kwargs)

    def __instancecheck__(self, obj: Any) -> bool:
        return isinstance(obj, self.__wrapped__)

    def __subclasscheck__(self, cls: Any) -> bool:
        if isinstance(cls, _ClassStandIn):
            cls = cls.__wrapped__
        return issubclass(cls, self.__wrapped__)

    def __mro_entries__(self, bases: tuple) -> tuple:
        return (self.__wrapped__,)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.__wrapped__, name)

    def __repr__(self) -> str:
        return repr(self.__wrapped__)


def _draw_hook(name: str, original: Callable, generator: str, numpy_name: str | None) -> Callable:
    """A draw: a ``frozen_random`` violation, or, in a ``global_random="record"`` scope, a
    capviz random op when :mod:`capviz.randomness.legacy` can record ``np.random.<numpy_name>``."""

    def hooked(*args: Any, **kwargs: Any) -> Any:
        if active() is None or getattr(_busy, "on", False):
            _calls[0] += 1
            return original(*args, **kwargs)
        here = _open_here()
        if not here:
            _calls[0] += 1
            return original(*args, **kwargs)
        _busy.on = True
        try:
            if here[0].global_random == "generator" and generator != "CuPy's":
                # a state: drawn from a copy, the live generator left as it is, so not
                # counted: a change of its state by the scope's exit is a draw no hook saw
                # (untracked_state_changes; a pre-bound draw in a helper's module beside a
                # hooked one went unseen, baked as a number: stop 35's particle filter)
                return _record_draw(here[0], name, numpy_name, args, kwargs)
            _calls[0] += 1
            if numpy_name is not None and here[0].global_random == "record":
                try:
                    return legacy.record(here[0], numpy_name, args, kwargs)
                except legacy.NotRecordable:
                    pass  # a violation; _not_recordable says why
            reason = _not_recordable(generator, numpy_name, args, kwargs)
            report_frozen(call_text(name, args, kwargs), generator, reason)
            return original(*args, **kwargs)
        finally:
            _busy.on = False

    return _wrap(hooked, original, name)


def _record_draw(recorder: Recorder, label: str, numpy_name: str | None, args: tuple,
                 kwargs: dict) -> Any:
    """``np.random.<name>(...)`` recorded as a draw of NumPy's global generator (a state:
    :mod:`capviz.randomness.generators`); Python's ``random`` and what a graph cannot hold
    refused at the line with the reason."""
    rand = numpy.random.mtrand._rand
    real = rand._real if isinstance(rand, _GlobalRandomState) else rand
    try:
        if numpy_name is None:  # Python's random
            return generators.record(recorder, random._inst, "random",
                                     label.rsplit(".", 1)[-1], args, kwargs)
        return generators.record(recorder, real, "np.random", numpy_name, args, kwargs)
    except generators.NotRecordable as why:
        raise recorder.refuse_here(call_text(label, args, kwargs), str(why)) from None


def report_stand_in_seed(label: str, args: tuple, kwargs: dict) -> None:
    """A reseed through a generator object's stand-in (``self.rng.seed(1)``)."""
    if _open_here():
        report_seed(call_text(label, args, kwargs))


def _not_recordable(generator: str, numpy_name: str | None, args: tuple, kwargs: dict) -> str:
    """Why ``global_random="record"`` cannot record this draw ("" when it could: the message
    then offers it as a fix)."""
    if numpy_name is None:
        return (f"it records NumPy's array draws only, not {generator} generator")
    try:
        legacy.plan(numpy_name, args, kwargs)
    except legacy.NotRecordable as why:
        return str(why)
    except (TypeError, ValueError):
        return ""  # arguments NumPy refuses too: it will say so
    return ""


class _GlobalRandomState:
    """Stands in for ``np.random.mtrand._rand`` (NumPy's global ``RandomState``, whose methods
    cannot be replaced) while hooks are installed: hooked methods report, the rest is the real
    object's."""

    __slots__ = ("_hooks", "_real")

    def __init__(self, real: Any, hooks: dict[str, Callable]) -> None:
        self._real = real
        self._hooks = hooks

    def __getattr__(self, name: str) -> Any:
        hook = self._hooks.get(name)
        return hook if hook is not None else getattr(self._real, name)

    @property
    def __class__(self) -> type:  # type: ignore[override]
        """``RandomState``, so ``isinstance(np.random.mtrand._rand, np.random.RandomState)``
        holds while hooked (as ``unittest.mock`` does)."""
        return type(self._real)

    def __repr__(self) -> str:
        return repr(self._real)


def _set_bit_generator(real: Any) -> Callable:
    """NumPy's ``set_bit_generator`` reads ``mtrand._rand``, our stand-in while hooked; this does
    the same to the real global ``RandomState`` (``RandomState.__init__`` with a bit generator is
    exactly what ``set_bit_generator`` does)."""

    def set_bit_generator(bitgen: Any) -> None:
        _calls[0] += 1
        if not hasattr(bitgen, "capsule"):
            raise AttributeError(f"'{type(bitgen).__name__}' object has no attribute 'capsule'")
        real.__init__(bitgen)

    return set_bit_generator


_calls = [0]  # hooked calls made so far, from any thread (see untracked_state_changes)
_lock = threading.Lock()
_users: set[Recorder] = set()  # the recorders whose scopes hold the hooks
_installed: list[tuple[Any, Any, Any, Any, bool]] = []  # (target, attr, original, hook,
#     set on an instance); the creation hooks: (numpy, None, {name: original}, {name: hook})


def _hook_for(kind: str, label: str, original: Callable, generator: str,
              numpy_name: str | None = None) -> Callable:
    if kind == "seed":
        return _seed_hook(label, original)
    return _draw_hook(label, original, generator, numpy_name)


def _numpy_plan() -> list[tuple[Any, str, Any, bool]]:
    real_rand = numpy.random.mtrand._rand
    methods: dict[str, Callable] = {}
    plan = []
    for name in NUMPY_SEEDS + NUMPY_DRAWS:
        kind = "seed" if name in NUMPY_SEEDS else "draw"
        for module, label in ((numpy.random, "np.random"),
                              (numpy.random.mtrand, "np.random.mtrand")):
            original = getattr(module, name, None)
            if original is None:
                continue
            if name == "set_bit_generator":
                original = _set_bit_generator(real_rand)
            hook = _hook_for(kind, f"{label}.{name}", original, "NumPy's", name)
            plan.append((module, name, hook, False))
        original = getattr(real_rand, name, None)
        if original is not None:
            methods[name] = _hook_for(kind, f"np.random.mtrand._rand.{name}", original, "NumPy's",
                                      name)
    for name in NUMPY_SEEDED_CREATION:
        for module, label in ((numpy.random, "np.random"),
                              (numpy.random.mtrand, "np.random.mtrand")):
            original = getattr(module, name, None)
            if isinstance(original, type):
                plan.append((module, name, _ClassStandIn(original, f"{label}.{name}"), False))
            elif original is not None:
                plan.append((module, name, _creation_hook(f"{label}.{name}", original), False))
    plan.append((numpy.random.mtrand, "_rand", _GlobalRandomState(real_rand, methods), False))
    return plan


_NUMPY_NAMES = NUMPY_SEEDS + NUMPY_DRAWS + NUMPY_SEEDED_CREATION
_PYTHON_NAMES = PYTHON_SEEDS + PYTHON_DRAWS
_CUPY_NAMES = CUPY_SEEDS + CUPY_DRAWS
_PLAN: list = [None, None]  # (what the plan was made from: _plan_key(), the plan)


def _plan_key() -> tuple:
    """Everything :func:`_plan` reads: the functions under each hooked name, NumPy's global
    ``RandomState``, Python's ``random._inst`` (its class's methods, its own attributes)."""
    inst = random._inst  # type: ignore[attr-defined]
    own = getattr(inst, "__dict__", {})
    cupy_random = sys.modules.get("cupy.random")
    return (numpy.random.mtrand._rand, inst, type(inst), cupy_random,
            tuple(getattr(weakref, n) for n in REFERENCE_COUNTS),
            tuple(getattr(numpy.random, n, None) for n in _NUMPY_NAMES),
            tuple(getattr(numpy.random.mtrand, n, None) for n in _NUMPY_NAMES),
            tuple(getattr(random, n, None) for n in _PYTHON_NAMES),
            tuple(getattr(type(inst), n, None) for n in _PYTHON_NAMES),
            tuple(own.get(n) for n in _PYTHON_NAMES),
            None if cupy_random is None else tuple(getattr(cupy_random, n, None)
                                                   for n in _CUPY_NAMES))


def _plan() -> list[tuple[Any, str, Any, bool]]:
    """``(target, attribute, hook, is an instance attribute)`` for every hook to install: made
    once and again only when something it is made from changed (:func:`_plan_key`; making it
    is ~160 hooks, a tenth of a small capture). The hooks hold no state of their own."""
    key = _plan_key()
    if _PLAN[0] is not None and key == _PLAN[0]:  # (a tuple compares items by identity first)
        return _PLAN[1]
    plan = _make_plan()
    _PLAN[:] = [key, plan]
    return plan


REFERENCE_COUNTS = ("getweakrefcount", "getweakrefs")
"""The functions of :mod:`weakref` that count an object's weak references, which capviz's own
(:class:`capviz.core.own_weakrefs.OwnRef`, held on a state's live array by a capture and by its
graph) change: asked of an array in a capture, refused at the line (review 6, identity2.py
J9: a later capture branched on it with capviz's own counted, silently)."""

_COUNT_REASON = (
    "capviz holds weak references to the arrays a capture records (a state's live array, from "
    "the first capture on), so the count is not your program's, and every replay would keep "
    "the branch this capture took; pass what this line decides in as an input (an argument of "
    "the captured function), computed before the capture")


def _count_hook(name: str, original: Callable) -> Callable:
    """``weakref.<name>(a)`` of an ndarray or a capture tensor in an open capture: refused."""

    def hooked(obj: Any) -> Any:
        if active() is not None and (type(obj) is numpy.ndarray or type(obj) is Tensor) \
                and not getattr(_busy, "on", False):
            here = _open_here()
            if here:
                raise here[0].refuse_here(f"weakref.{name}()", _COUNT_REASON)
        return original(obj)

    return _wrap(hooked, original, name)


# --- NumPy's error state set to raise inside the captured code ---------------------------------

_ERRSTATE_REASON = (
    "a replay runs under its caller's NumPy error state, not one the function sets while it "
    "runs, so it would not raise where this call does; "
    "move it around the replay: `with np.errstate(...): graph.replay(...)`")


_RELAXED_REASON = _ERRSTATE_REASON.replace("so it would not raise where this call does",
                                           "so it would raise where this call does not")


def _raising(settings: Iterable[Any]) -> bool:
    return any(isinstance(v, str) and v in ("raise", "call") for v in settings)


def _relaxes(every: Any, divide: Any, over: Any, under: Any, invalid: Any) -> bool:
    """Whether these settings (``None`` or NumPy's unspecified: unchanged) turn a kind the
    caller's state raises on into one that does not (``@np.errstate(all="ignore")`` under
    ``np.seterr(all="raise")``: the eager call passes, every replay, run under the caller's
    state, raised FloatingPointError; review 9, finding 2)."""
    now = numpy.geterr()
    for kind, value in (("divide", divide), ("over", over), ("under", under),
                        ("invalid", invalid)):
        new = value if isinstance(value, str) else every if isinstance(every, str) else None
        if new is not None and now[kind] in ("raise", "call") and new not in ("raise", "call"):
            return True
    return False


def _capvizs(frame: Any) -> bool:
    """Whether ``frame`` runs capviz's own code (which keeps a caller's setting of "raise") or
    NumPy's (``np.linalg.inv`` enters ``np.errstate(call=...)`` itself to raise LinAlgError:
    9d1c930 refused every np.linalg.inv / qr in a captured function)."""
    name = frame.f_globals.get("__name__", "")
    return name in ("capviz", "numpy") or name.startswith(("capviz.", "numpy."))


def _errstate_enter_hook(original: Callable) -> Callable:
    """``with np.errstate(divide="raise"):`` in the captured code: refused at its line (review
    7 #31: every replay returned inf where the eager call raises FloatingPointError). A setting
    of "ignore" or "warn" changes no value and is left to run."""

    def hooked(self: Any) -> Any:
        if active() is not None and not getattr(_busy, "on", False):
            settings = [getattr(self, f"_{k}", None)
                        for k in ("all", "divide", "over", "under", "invalid")]
            relaxed = not _raising(settings) and _relaxes(*settings)
            if (_raising(settings) or callable(getattr(self, "_call", None)) or relaxed) and \
                    not _capvizs(sys._getframe(1)):
                here = _open_here()
                if here:
                    raise here[0].refuse_here("np.errstate(...)",
                                              _RELAXED_REASON if relaxed else _ERRSTATE_REASON)
        return original(self)

    return _wrap(hooked, original, "__enter__")


def _seterr_hook(original: Callable) -> Callable:
    """``np.seterr(divide="raise")`` in the captured code: refused at its line, as
    :func:`_errstate_enter_hook` (a setting the function undoes before it returns would not
    hold in a replay)."""

    def hooked(*args: Any, **kwargs: Any) -> Any:
        if active() is not None and not getattr(_busy, "on", False) and \
                _raising(list(args) + list(kwargs.values())) and not _capvizs(sys._getframe(1)):
            here = _open_here()
            if here:
                raise here[0].refuse_here("np.seterr(...)", _ERRSTATE_REASON)
        return original(*args, **kwargs)

    return _wrap(hooked, original, "seterr")


def _decorator_hook(original: Callable) -> Callable:
    """NumPy's ``_make_extobj``, which the wrapper ``@np.errstate(...)`` makes calls (looking it
    up in its module each call) before it runs the decorated function: called from that
    wrapper during a capture with a raising setting, refused at the user's line that calls the
    decorated function, however it is reached (a staticmethod, a classmethod, a callable
    object's ``__call__``, a partial, ``getattr``: hostile review 8, finding 29), at the line
    of its decorator (as ``with np.errstate`` is at its line: review 8's remnant of #29 named
    the caller's line)."""

    def hooked(*args: Any, **kwargs: Any) -> Any:
        if active() is not None and not getattr(_busy, "on", False) and \
                sys._getframe(1).f_code is _ERRSTATE_INNER and \
                (_raising(kwargs.values()) or callable(kwargs.get("call")) or (_relaxes(
                    *(kwargs.get(k) for k in ("all", "divide", "over", "under", "invalid")))
                    and _users_code(sys._getframe(1).f_locals.get("func")))):
            here = _open_here()
            if here:
                here[0].check_usable()
                wrapper = sys._getframe(1).f_locals
                call, message, source = _decorator_refusal(wrapper.get("self"),
                                                           wrapper.get("func"))
                here[0].violation("unsupported_op", call, message, source, raise_now=False)
                raise make_error(here[0].graph.violation_records[-1], here[0].graph)
        return original(*args, **kwargs)

    return _wrap(hooked, original, "_make_extobj")


def _make_plan() -> list[tuple[Any, str, Any, bool]]:
    plan = _numpy_plan()
    for name in REFERENCE_COUNTS:
        plan.append((weakref, name, _count_hook(name, getattr(weakref, name)), False))
    plan.append((numpy.errstate, "__enter__", _errstate_enter_hook(numpy.errstate.__enter__),
                 False))
    plan.append((numpy, "seterr", _seterr_hook(numpy.seterr), False))
    config = sys.modules.get("numpy._core._ufunc_config")
    if config is not None and callable(getattr(config, "_make_extobj", None)):
        plan.append((config, "_make_extobj", _decorator_hook(config._make_extobj), False))
    inst = random._inst  # type: ignore[attr-defined]
    for name in PYTHON_SEEDS + PYTHON_DRAWS:
        kind = "seed" if name in PYTHON_SEEDS else "draw"
        for target, label, is_instance in ((random, "random", False),
                                           (inst, "random._inst", True)):
            original = getattr(target, name, None)
            if original is not None:
                hook = _hook_for(kind, f"{label}.{name}", original, "Python's")
                plan.append((target, name, hook, is_instance))
    cupy_random = sys.modules.get("cupy.random")
    if cupy_random is not None:
        for name in CUPY_SEEDS + CUPY_DRAWS:
            original = getattr(cupy_random, name, None)
            if original is not None:
                kind = "seed" if name in CUPY_SEEDS else "draw"
                hook = _hook_for(kind, f"cupy.random.{name}", original, "CuPy's")
                plan.append((cupy_random, name, hook, False))
    return plan


class Hold:
    """A hold on the hooks that is no scope's (:func:`install` and :func:`uninstall` take
    it): ``cv.capture`` holds them across its two captures, whose scopes then find them
    installed instead of each making and removing ~190 hooks."""


def install(recorder: Recorder | Hold) -> None:
    """Install the hooks for ``recorder``'s scope (held while any scope holds them).

    Idempotent per recorder, so a scope's cleanup can safely repeat it.
    """
    with _lock:
        if recorder in _users:
            return
        if type(recorder) is not Hold:  # (a hold notes no states: it is no scope)
            recorder.global_states = (_calls[0], _global_states())
        if not _users:
            try:
                _remove_all()  # what an interrupted removal left behind, before the originals
                for target, attr, hook, is_instance in _plan():
                    original = None if is_instance else getattr(target, attr)
                    # listed before it is placed: an interrupt between the two leaves nothing
                    # that _remove_all cannot see
                    _installed.append((target, attr, original, hook, is_instance))
                    setattr(target, attr, hook)
                    if not is_instance and callable(original):
                        _hooked_ids.add(id(original))
                made = creation.plan()  # NumPy's creation functions, placed in one C call
                _installed.append((numpy, None, made.originals, made.hooks, False))
                vars(numpy).update(made.hooks)
                _hooked_ids.update(made.ids)
                _replacements[0] = None
            except BaseException:
                _remove_all()
                raise
        _users.add(recorder)


def uninstall(recorder: Recorder | Hold) -> None:
    """Release ``recorder``'s hold; the last one out removes the hooks (leaving alone a function
    someone else put in place meanwhile). Idempotent."""
    with _lock:
        _users.discard(recorder)
        if not _users:
            _remove_all()


def _remove_all() -> None:
    _replacements[0] = None
    while _installed:
        target, attr, original, hook, is_instance = _installed[-1]
        if attr is None:  # the creation hooks: each put back unless replaced meanwhile
            space = vars(target)
            for name, placed in hook.items():
                if space.get(name) is placed:
                    space[name] = original[name]
        elif is_instance:
            if vars(target).get(attr) is hook:
                delattr(target, attr)
        elif getattr(target, attr) is hook:
            setattr(target, attr, original)
        _installed.pop()


def _global_states() -> tuple[Any, Any, Any]:
    """The states of NumPy's legacy global generator (comparable, and as it gives it) and of
    Python's ``random``."""
    raw = _real_global().get_state(legacy=False)
    return generator_watch.freeze_state(raw), random._inst.getstate(), raw


def _real_global() -> Any:
    """NumPy's global ``RandomState`` itself (not the stand-in the hooks put in its place)."""
    rand = numpy.random.mtrand._rand
    return rand._real if isinstance(rand, _GlobalRandomState) else rand


def untracked_state_changes(recorder: Recorder) -> None:
    """At scope exit: a global generator whose state changed while no hooked function that
    moves it was called anywhere (a draw recorded as a state leaves it as it is) was used
    through a path no hook sees (a function bound before the capture where
    the scope could not rebind it, ``from numpy.random import rand`` in another module;
    assigning ``bit_generator.state``). No replay reproduces it: queue a ``frozen_random``
    violation for ``recorder`` with its own message, placed at the scope's exit. When any
    hooked call happened meanwhile, in any thread, the change is explained by it (and
    reported there, or not ours to report), so nothing is inferred."""
    snapshot = getattr(recorder, "global_states", None)
    if snapshot is None:
        return
    calls, (numpy_before, python_before, raw_before) = snapshot
    if _calls[0] != calls:
        return
    numpy_after, python_after, _ = _global_states()
    for changed, which, example, owner in (
            (numpy_before != numpy_after, "NumPy's global generator",
             "`from numpy.random import rand`", _real_global()),
            (python_before != python_after, "Python's random", "`from random import random`",
             random._inst)):
        if changed:
            source = user_source()
            site = _bound_site(getattr(recorder, "entry_function", None), owner)
            if site is not None:  # (the helper's line that draws: hostile review 8, #15)
                source, name = site
                example = f"`{name}()` bound before the capture in {source[2]}'s module"
            call = (f"a draw from {which} through a function bound before the capture "
                    "(seen when the scope closed)")
            message = bound_draw_message(which, example, source)
            recorder.pending.append(("frozen_random", call, message, source))
    if numpy_before != numpy_after:  # put back: a refused capture leaves the generators
        _real_global().set_state(raw_before)  # as it found them (as the backstop does)
    if python_before != python_after:
        random.Random.setstate(random._inst, python_before)  # (not the hooked attribute)


def _loaded(fn: Any) -> Iterable[tuple[types.FunctionType, Any, Any]]:
    """``(function, instruction, value)`` for each global ``fn``'s code loads (its lambdas'
    and comprehensions' code too), each method it names of its owner's class or of a user's
    class it loads (``M().f(x)``), then the same in each user's function among those values,
    transitively (64 functions at most)."""
    owner = getattr(fn, "__self__", None)
    while callable(getattr(fn, "func", None)):  # functools.partial
        fn = fn.func
    todo, seen = [getattr(fn, "__func__", fn)], set()
    classes = [type(owner)] if owner is not None and not isinstance(owner, types.ModuleType) \
        else []
    while todo and len(seen) < 64:
        function = todo.pop(0)
        if type(function) is not types.FunctionType or id(function) in seen or \
                not is_user_file(function.__code__.co_filename):
            continue
        seen.add(id(function))
        space = function.__globals__
        named = list(classes)
        for instruction in _loads(function.__code__):
            if instruction.opname == "LOAD_GLOBAL":
                value = space.get(instruction.argval)
                if isinstance(value, type) and value.__module__ not in ("builtins", "numpy"):
                    named.append(value)
            elif isinstance(instruction.argval, str):
                value = next((vars(k)[instruction.argval] for k in named
                              if instruction.argval in vars(k)), None)
            else:
                continue
            yield function, instruction, value
            if type(value) is types.FunctionType:
                todo.append(value)


@functools.lru_cache(maxsize=1024)
def _loads(code: types.CodeType) -> tuple[Any, ...]:
    """The instructions of ``code`` and of the code it makes (a lambda, a comprehension) that
    load a global or an attribute (read once per code object: every capture run looks)."""
    found = [i for i in dis.get_instructions(code)
             if i.opname in ("LOAD_GLOBAL", "LOAD_ATTR", "LOAD_METHOD")]
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            found += _loads(const)
    return tuple(found)


def _site(function: types.FunctionType, instruction: Any) -> tuple[str, int, str]:
    code = function.__code__
    line = instruction.positions.lineno if instruction.positions else None
    return code.co_filename, line or code.co_firstlineno, code.co_name


_ERRSTATE_INNER = numpy.errstate()(lambda: None).__code__  # (what np.errstate(...)(f) makes)


def _decorated(value: Any) -> Any:
    """The ``np.errstate`` of NumPy's decorator wrapper ``value`` (or of one it wraps, by
    ``__wrapped__``) when it raises (a setting of "raise", or ``call=``); else ``None``."""
    inner = value
    while type(inner) is types.FunctionType and inner.__code__ is not _ERRSTATE_INNER:
        inner = getattr(inner, "__wrapped__", None)
    if type(inner) is not types.FunctionType:
        return None
    state = next((c.cell_contents for c in inner.__closure__ or ()
                  if isinstance(c.cell_contents, numpy.errstate)), None)
    settings = [getattr(state, f"_{k}", None)
                for k in ("all", "divide", "over", "under", "invalid")]
    if state is None or not (_raising(settings) or callable(getattr(state, "_call", None))):
        return None
    return state


def errstate_decorated(fn: Any) -> tuple[str, str, Any] | None:
    """``(call, message, source)`` of the refusal of ``fn``, or of a helper it calls, that
    ``@np.errstate(divide="raise")`` decorates (NumPy's wrapper sets the state without
    ``__enter__``, which :func:`_errstate_enter_hook` hooks: every replay returned inf where
    the eager call raises), at the line of the decorator (:func:`_decorator_refusal`);
    ``None`` where none is reached."""
    plain = fn
    while callable(getattr(plain, "func", None)):  # functools.partial
        plain = plain.func
    plain = getattr(plain, "__func__", plain)
    found = plain if _decorated(plain) is not None else None  # (hostile review 8, finding 29:
    if found is None:  # the captured function)
        found = next((value for _, _, value in _loaded(fn) if _decorated(value) is not None),
                     None)
    if found is None:
        return None
    wrapper = _errstate_wrapper(found)
    cells = dict(zip(wrapper.__code__.co_freevars,
                     (c.cell_contents for c in wrapper.__closure__ or ())))
    return _decorator_refusal(cells.get("self"), cells.get("func"))


def _errstate_wrapper(value: Any) -> Any:
    """NumPy's wrapper of ``@np.errstate(...)`` that ``value`` is or wraps (``__wrapped__``)."""
    while type(value) is types.FunctionType and value.__code__ is not _ERRSTATE_INNER:
        value = getattr(value, "__wrapped__", None)
    return value


def _users_code(func: Any) -> bool:
    """Whether ``func`` (what NumPy's ``@np.errstate`` wrapper calls) is the user's code, not
    NumPy's own (``MaskedArray.__setitem__`` is decorated ``over="ignore"``)."""
    code = getattr(getattr(func, "__func__", func), "__code__", None)
    return code is None or is_user_file(code.co_filename)


def _names_errstate(text: str, space: dict) -> bool:
    """Whether the decorator ``text`` (``ER``, ``cfg.ER``) names a ``np.errstate`` object in the
    globals ``space`` (review 9, finding 1: ``@ER`` under ``@staticmethod``)."""
    path = text.split("(", 1)[0].strip().split(".")
    value = space.get(path[0])
    for name in path[1:]:
        value = getattr(value, name, None)
    return isinstance(value, numpy.errstate)


def _decorator_refusal(state: Any, func: Any) -> tuple[str, str, Any]:
    """``(call, message, source)`` refusing ``@np.errstate(...)`` (``state``) on the function
    ``func`` at the decorator's line (the first line above ``func``'s ``def`` naming
    ``errstate`` or a global holding one, else the decorator nearest the ``def``, which
    wraps ``func`` first; a lambda's own line), with the fix of ``with
    np.errstate``: taken off the function, around the replay; at the user's line that calls it
    where ``func`` has no Python code (``np.errstate(...)(np.log)``)."""
    inner = func
    while isinstance(inner, functools.partial) or (
            type(inner) is types.FunctionType and hasattr(inner, "__wrapped__")):
        inner = inner.func if isinstance(inner, functools.partial) else inner.__wrapped__
    inner = getattr(inner, "__func__", inner)
    code = getattr(inner, "__code__", None)
    name = getattr(inner, "__name__", None) or "the function"
    source = text = None
    if isinstance(code, types.CodeType) and is_user_file(code.co_filename):
        first = code.co_firstlineno
        lines = [(n, linecache.getline(code.co_filename, n).strip())
                 for n in range(first, first + 16)]
        decorators = []
        for n, line in lines:
            if not line.startswith("@"):
                break
            decorators.append((n, line))
        line, text = next(((n, t) for n, t in decorators if "errstate" in t or
                           _names_errstate(t[1:], inner.__globals__)),
                          decorators[-1] if decorators else lines[0])
        name = "the lambda" if name == "<lambda>" else name
        source = (code.co_filename, line, code.co_name)
    if source is None:
        source = user_source()
        text = line_code(linecache.getline(source[0], source[1])) if source else ""
    settings = {k: getattr(state, f"_{k}", None)
                for k in ("all", "divide", "over", "under", "invalid")}
    shown = ", ".join(f'{k}="{v}"' for k, v in settings.items() if isinstance(v, str))
    if not shown or callable(getattr(state, "_call", None)):
        shown = "..."
    relaxed = not _raising(settings.values()) and not callable(getattr(state, "_call", None))
    reason = (f"{name} is decorated with np.errstate({shown}), and a replay runs under its "
              "caller's NumPy error state, not one the function sets while it runs, so it "
              f"would {'' if relaxed else 'not '}raise where this call does"
              f"{' not' if relaxed else ''}; take the decorator off {name} and put it "
              f"around the replay: `with np.errstate({shown}): graph.replay(...)`")
    message = explain(Failure("unsupported_op", "np.errstate(...)", "", source,
                              UserCode("other", shorten(text or "")), None, reason))
    return "np.errstate(...)", message, source


def _bound_site(fn: Any, owner: Any) -> tuple[tuple[str, int, str], str] | None:
    """``((file, line, function), name)`` of the first line, in ``fn``'s code or in a user's
    function it names (:func:`_loaded`), that loads a global name bound to a draw of ``owner``
    (NumPy's global ``RandomState``, Python's ``random``) the hooks did not replace there
    (``from numpy.random import random`` in a helper's module, which the scope does not
    rebind); ``None`` where none is found."""
    for function, instruction, value in _loaded(fn):
        if instruction.opname == "LOAD_GLOBAL" and callable(value) and \
                getattr(value, "__self__", None) is owner:
            return _site(function, instruction), str(instruction.argval)
    return None


def hooked_ids() -> set[int]:
    """The ids of every module function hooked while a capture is open, from every install so
    far (a function freed since may leave an id another object takes: a candidate only, which
    :func:`replacements` tells apart)."""
    return _hooked_ids


_hooked_ids: set[int] = set()


def replacements() -> dict[int, tuple[Any, Any]]:
    """``{id(original): (original, hook)}`` of the module functions hooked now, to rebind names
    bound before the capture (``from numpy import zeros``, ``from numpy.random import rand``;
    :func:`capviz.randomness.creation.rebind`)."""
    made = _replacements[0]
    if made is None:
        made = _replacements[0] = {}
        for _, attr, original, hook, instance in _installed:
            if attr is None:
                made.update((id(f), (f, hook[name])) for name, f in original.items()
                            if callable(f))
            elif not instance and callable(original):
                made[id(original)] = (original, hook)
    return made


_replacements: list = [None]  # replacements() of the hooks installed now, made once


def installed() -> bool:
    """True while the hooks are in place."""
    return bool(_installed)
