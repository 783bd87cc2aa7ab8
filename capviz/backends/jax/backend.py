"""The JAX backend: a graph replayed as one ``jax.jit``-compiled function, so XLA fuses it.

``graph.replay(inputs, backend="jax")`` traces the graph's compiled program
(:class:`capviz.replay.program.Program`, built without the memory plan since jax arrays take no
``out=``) once under ``jax.jit``: the traced function of the inputs (and the seed, when the graph
draws random numbers) is cached per program, that is per graph and ``graph.version``, and jax
caches its executable per input signature. A second replay runs the executable; it does not
trace again (:attr:`JaxBackend.traces` counts traces).

What this module decides, and why:

* **x64, locally.** NumPy computes with 64-bit defaults (``intp`` indices, ``int64`` sums of
  ``int32``, float64 scalars), so every replay traces and runs inside ``jax.enable_x64(True)``,
  a context manager: the user's global ``jax_enable_x64`` is never changed. Values moved onto
  the backend (:meth:`JaxBackend.from_host`) keep their dtype the same way.
* **Constants.** A graph's constants of :data:`BAKED_CONSTANT_BYTES` or more (a model's
  weights) are arguments of the compiled function: baked into it, XLA copies and constant-folds
  each at compile time (on a 12-layer, width-768 model: 6.0 s first call and 2.3 GB resident,
  against 3.0 s and 1.3 GB as arguments, the steady replay unchanged). Smaller ones stay
  baked in, where XLA may fold them.
* **Precision.** Matmuls run at ``"highest"`` precision (no TF32 or bfloat16 passes on GPUs).
* **Ops.** Each op of :data:`capviz.ops.table.OPS` is bound to ``jax.numpy``; the ops that write in
  place are bound to functional forms (:mod:`capviz.backends.jax.ops`, ``OVERRIDES``), and the
  ops jax cannot run as NumPy does are refused by name at bind time with the reason
  (``UNSUPPORTED``, imported here). While tracing, every result is checked against the node's
  shape and dtype (NumPy's, :mod:`capviz.backends.jax.trace`): a difference is a
  :class:`capviz.ReplayError` at the user's line, never a silently different result.
* **Values NumPy refuses.** Where NumPy raises on values (an index out of bounds) or gives a
  result that XLA defines otherwise (an integer divided by zero, a float cast to an integer
  out of its range, ties in a default-kind ``argsort``), the traced function also returns a flag
  per check; a failed check raises :class:`capviz.ReplayError` naming the node after the run.
* **Layouts.** NumPy adds a sum in its operand's memory order, which a jax array does not
  have: each input's layout (its host array's, remembered by :meth:`JaxBackend.from_host`) is
  a static argument of the compiled function (an F-ordered input traces again), and the checks
  of sums follow it through the graph (:mod:`capviz.backends.jax.layouts`).
* **Random ops** (:mod:`capviz.backends.jax.random`) follow capviz's Philox streams with the
  seed as a traced ``uint64``, so a new seed does not retrace: uniform and bernoulli draws
  equal the NumPy replay's bit for bit; normal draws agree within the backend's tolerance
  (XLA's ``log``, ``cos``, ``sin``).
* **Products.** XLA's CPU compiler contracts a multiply and the add that reads it into one
  fused multiply-add (one rounding; NumPy rounds the product first): each floating product is
  rounded to its type before an add reads it, with an integer zero passed to the compiled
  function (:mod:`capviz.backends.jax.unfused`), so ``s - a * b`` is NumPy's bits.
* **Exactness.** XLA rounds some float results differently from NumPy: it approximates
  transcendental functions
  (``exp``, ``tanh``, ``log``...) its own way, and associates reductions (``sum``, ``mean``,
  ``cumsum``, matmul) in another order. So :attr:`JaxBackend.exact` is ``False`` and
  :meth:`JaxBackend.tolerance_for` gives the ``(rtol, atol)`` that comparisons use per dtype
  (:attr:`JaxBackend.tolerance`, or :attr:`JaxBackend.float16_tolerance` for float16); integer,
  boolean and comparison results are exact when computed from exact values, and not when
  computed from floats XLA rounds otherwise (``np.exp(x).astype(np.int64)``): a replay returning
  such outputs warns, naming them (:mod:`capviz.replay.exactness`).

jax is imported only when the backend is used (``import capviz`` never imports it).
"""

from __future__ import annotations

import sys
import warnings
import weakref
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

from capviz import ops
from capviz.backends.jax import (  # noqa: F401 (forms)
    cancellation,
    layouts,
    subnormals,
    ufunc_methods,
    writes,
)
from capviz.backends.jax.ops import OVERRIDES, UNSUPPORTED, functional
from capviz.backends.jax.trace import WIDENING, bound, trace_state, tracing
from capviz.backends.registry import Backend, install_hint, register, unsupported
from capviz.core.errors import (
    BackendUnavailableError,
    CapvizError,
    ReplayError,
    UnsupportedOperationError,
)
from capviz.core.guards import READS, check_all
from capviz.core.ir import Node
from capviz.core.source import format_source

# --- loading jax -------------------------------------------------------------------------------


def _load() -> Any:
    """``jax`` (BackendUnavailableError naming the extra when it is not installed)."""
    try:
        import jax
        import jax.numpy
    except ImportError as err:
        raise BackendUnavailableError(f"the jax backend needs jax, which is not installed "
                                      f"({err}); {install_hint('jax')}") from None
    return jax


def x64() -> Any:
    """A context manager enabling 64-bit types in jax for the block only: ``jax.enable_x64``
    (older jax: ``jax.experimental.enable_x64``); the global setting is left as it is."""
    jax = _load()
    enable = getattr(jax, "enable_x64", None)
    if enable is None:  # pragma: no cover - jax before enable_x64 moved out of experimental
        from jax.experimental import enable_x64 as enable
    return enable(True)


# --- the backend -------------------------------------------------------------------------------


class JaxBackend(Backend):
    """Replay on JAX: the graph as one ``jax.jit``-compiled function (see the module doc).

    Attributes:
        traces: how many times a program was traced (a replay that reuses the compiled function
            does not add one).
    """

    name = "jax"
    extra = "jax"
    mutable = False
    exact = False
    tolerance = (1e-4, 1e-4)
    float16_tolerance = (1e-2, 1e-1)
    """float16 reductions and products (XLA adds float16 partial sums in another order than
    NumPy): sums of up to 1000 unit-scale terms, matmul and var measured within ``rtol=1e-2``
    plus ``atol`` 0.035; see ``docs/guide/replay.md``."""
    own_arithmetic_option = "arithmetic='xla'"
    options: frozenset[str] = frozenset({"arithmetic"})
    """``arithmetic="numpy"`` (the default): a node whose result XLA's arithmetic may change
    beyond the tolerance with no run-time check to see it (:meth:`own_arithmetic`) is refused
    by name before anything runs; ``arithmetic="xla"``: such nodes run with XLA's arithmetic
    (a subnormal float they make is 0)."""

    def own_arithmetic(self, node: Node) -> str | None:
        """Why XLA's flush of subnormal floats to zero may change ``node``'s result with no
        run-time check to see it (:func:`capviz.backends.jax.subnormals.unchecked`)."""
        why = subnormals.unchecked(node)
        if why is None:
            return None
        return (f"XLA flushes subnormal floats (below np.finfo(dtype).tiny) to zero where NumPy "
                f"keeps them, and {why}")

    def tolerance_for(self, dtype: Any) -> tuple[float, float]:
        """:attr:`float16_tolerance` for float16, exact for integers and booleans computed
        from exact values (see :meth:`Backend.tolerance_for`), else :attr:`tolerance`."""
        if np.dtype(dtype) == np.float16:
            return self.float16_tolerance
        return super().tolerance_for(dtype)

    def __init__(self) -> None:
        self.traces = 0
        self._compiled: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self._bind_cache: dict[str, Callable] = {}
        self._host_layouts: dict[int, tuple[weakref.ref, str | None]] = {}

    def namespace(self) -> Any:
        return _load().numpy

    def from_host(self, value: np.ndarray) -> Any:
        jax = _load()
        with x64():  # a float64 array stays float64
            moved = jax.device_put(np.asarray(value))
        layout = layouts.host_layout(value)
        if layout != layouts.C:  # NumPy adds a sum in this array's memory order: remembered
            key = id(moved)
            held = self._host_layouts
            try:
                held[key] = (weakref.ref(moved, lambda _, key=key: held.pop(key, None)), layout)
            except TypeError:  # pragma: no cover - an array type without weak references
                pass
        return moved

    def host_layout(self, value: Any) -> str | None:
        """The layout NumPy held ``value`` in: a host array's, or, for a jax array moved from
        one by :meth:`from_host`, that array's (C for any other: NumPy's ``asarray`` of it is
        C-ordered); see :mod:`capviz.backends.jax.layouts`."""
        if isinstance(value, np.ndarray):
            return layouts.host_layout(value)
        held = self._host_layouts.get(id(value))
        return held[1] if held is not None and held[0]() is value else layouts.C

    def to_host(self, value: Any) -> np.ndarray:
        return np.asarray(value)

    def is_native(self, value: Any) -> bool:
        jax = sys.modules.get("jax")  # a jax array exists only when jax was imported
        return jax is not None and isinstance(value, jax.Array)

    def bind(self, op: ops.Op) -> Callable:
        fn = self._bind_cache.get(op.name)
        if fn is not None:
            return fn
        fn = self._bind_cache[op.name] = bound(op, self.bind_unchecked(op), x64)
        return fn

    def refusal(self, op: ops.Op) -> str | None:
        """Why this backend refuses ``op`` (``None``: it runs it): a reason of
        :data:`UNSUPPORTED`, or the function missing from the installed jax.numpy."""
        reason = UNSUPPORTED.get(op.name)
        if reason is not None or op.name in OVERRIDES:
            return reason
        try:
            op.bind(self.namespace())
        except UnsupportedOperationError:
            return f"jax.numpy has no {op.name} (replay with backend='numpy')"
        return None

    def bind_unchecked(self, op: ops.Op) -> Callable:
        """:meth:`bind` without the trace's check of the node's shape and dtype."""
        reason = self.refusal(op)
        if reason is not None:
            raise unsupported(self, op.name, reason)
        return functional(op, self.namespace())

    def admit(self, program: Any, options: Any) -> _Compiled:
        """The program's compiled function; refuses, before anything runs, a node of
        :meth:`own_arithmetic` unless ``options`` take ``arithmetic="xla"``."""
        arithmetic = options.get("arithmetic", "numpy")
        if arithmetic not in ARITHMETIC:
            raise ValueError(f"arithmetic={arithmetic!r}: the jax backend takes "
                             f"{' or '.join(map(repr, ARITHMETIC))}")
        compiled = self._compiled.get(program)
        if compiled is None:
            compiled = self._compiled[program] = _Compiled(self, program)
        if arithmetic == "numpy" and compiled.own_arithmetic:
            raise _arithmetic_refusal(*compiled.own_arithmetic[0])
        return compiled

    def execute(self, program: Any, args: list | tuple, seed: int, options: Any) -> tuple:
        xla = options.get("arithmetic", "numpy") == "xla"
        return self.admit(program, options)(tuple(args), seed, xla)


def _refuse_raising() -> None:
    """Refuse a replay while NumPy's error settings say ``raise`` (``np.errstate(divide=
    "raise")`` around ``graph.replay``, ``np.seterr``): XLA computes IEEE's ``inf`` and ``nan``
    and raises nothing, where eager NumPy and the NumPy and Dask replays fail at the op
    (hostile review 13, finding 28: ``1.0 / x`` of a 0 gave ``inf`` with no error)."""
    raising = sorted(k for k, v in np.geterr().items() if v == "raise")
    if raising:
        settings = ", ".join(f"{k}='raise'" for k in raising)
        raise ReplayError(
            f"NumPy's error settings say {settings} (np.errstate or np.seterr), which the jax "
            "backend cannot honour: XLA computes inf and nan and raises nothing, where NumPy "
            "raises FloatingPointError at the op. Fix: replay with backend='numpy' (or "
            "'dask'), which fails at the node, or replay outside the 'raise' setting")


ARITHMETIC = ("numpy", "xla")
"""The values of the jax backend's ``arithmetic=`` option (:attr:`JaxBackend.options`)."""


def _arithmetic_refusal(node: Node, why: str) -> UnsupportedOperationError:
    """The refusal of a node XLA's arithmetic may compute otherwise than NumPy, unchecked."""
    where = format_source(node.source) or "unknown source"
    return UnsupportedOperationError(
        f"op {node.op!r} cannot run on the jax backend: {why}; replay with backend='numpy', "
        "or take XLA's arithmetic for such ops with backend='jax', arithmetic='xla' (a value "
        "below tiny is then 0, and what is computed from it may differ from NumPy's beyond "
        f"the tolerance) (node %{node.index}, recorded at {where})")


def _reads_subnormal(node: Node, subnormal: dict[int, str]) -> str | None:
    """Why ``node`` reads a constant XLA reads otherwise (``subnormal``: what each such
    constant holds, by node index; :func:`capviz.backends.jax.subnormals.subnormal_constant`)."""
    if node.kind != "op":
        return None
    for a in node.args:
        held = subnormal.get(a.index) if isinstance(a, Node) else None
        if held is not None:
            name = f" {a.name!r}" if a.name else ""
            return (f"XLA flushes subnormal floats (below np.finfo(dtype).tiny) to zero where "
                    f"NumPy keeps them, and the constant{name} (node %{a.index}) holds {held}: "
                    "XLA reads it as 0")
    return None


BAKED_CONSTANT_BYTES = 1024
"""Constants smaller than this are baked into the compiled function (XLA may fold them);
larger ones are passed as its arguments."""


def _transposed(host: Any) -> bool:
    """Whether a host constant is a Fortran-ordered view of a C array (``w.T``)."""
    return (isinstance(host, np.ndarray) and host.ndim >= 2 and host.flags.f_contiguous
            and not host.flags.c_contiguous)


def _no_subnormals(jax: Any, inputs: tuple) -> Any:
    """One flag per float input: true when it holds no subnormal value (XLA flushes them to
    zero, so a result depending on one would differ from NumPy's beyond any tolerance)."""
    jnp = jax.numpy

    def normal(x: Any) -> Any:
        dtype = np.dtype(x.dtype)
        tiny = np.finfo(dtype).tiny
        # a complex value's parts each (its abs would flush a subnormal magnitude first)
        parts = (jnp.real(x), jnp.imag(x)) if dtype.kind == "c" else (x,)
        return jnp.all(jnp.stack([jnp.all((jnp.abs(p) == 0) | ~(jnp.abs(p) < tiny))
                                  for p in parts]))

    return jnp.stack([normal(x) for x in inputs])


def _sinks(poisons: Any, program: Any, outputs: tuple, guard_values: list) -> None:
    """The fast trace's tests for a poisoned NaN where values leave the program: each output
    (the states' written values included) and each value a guard reads
    (:mod:`capviz.backends.jax.poison`)."""
    for value, node in zip(outputs, program.output_nodes):
        poisons.sink(value, node)
    for value, guard in zip(guard_values, program.guards):
        if guard.op in READS:
            poisons.sink(value, guard.args[0])


_ZERO = np.int64(0)
"""The zero each floating product is rounded with (:mod:`capviz.backends.jax.unfused`): an
argument of the compiled function, so XLA cannot see it is 0."""


def _floating(value: Any) -> bool:
    return np.dtype(value.dtype).kind in "fc"


def _failed(flags: Any) -> list[int]:
    """The positions of the failed checks among a trace's ``flags``."""
    return np.flatnonzero(~np.asarray(flags)).tolist()


def _give(given: list[tuple[Node | None, type[Warning], str]]) -> None:
    """NumPy's warnings of a trace (:func:`capviz.backends.jax.trace.warn`), each at its
    node's line of the user's code."""
    for node, category, message in given:
        source = node.source if node is not None else None
        if source is None:
            warnings.warn(message, category, stacklevel=4)
        else:
            warnings.warn_explicit(message, category, source[0], source[1])


class _Compiled:
    """One program as a ``jax.jit`` function of ``(inputs, seed)`` returning the outputs and
    the value checks' flags, and the check of its float inputs for subnormals, a program of
    its own run beside it until an input array on the device passed it."""

    def __init__(self, backend: JaxBackend, program: Any) -> None:
        self._jax = _load()
        self._backend = backend
        self.random = program.random
        # the checks of each trace, by the trace's number, which its flags come back with: the
        # compiled function is traced again per input layout and signature, and each trace has
        # checks of its own (review 4, finding 9: the flags of an F-ordered input's trace read
        # against a C-ordered one's checks ended in an IndexError, or could name another node)
        self.traced_checks: list[list[tuple[Node | None, str]]] = []
        # NumPy's warnings of each trace, by its number (trace.warn: they depend only on the
        # shapes and types a trace is made for), given after each run
        self.traced_warnings: list[list[tuple[Node | None, type[Warning], str]]] = []
        # the latest trace's checks, fast (False) and precise (True), for inspection
        self.checks: dict[bool, list[tuple[Node | None, str]]] = {}
        self.input_names = program.input_names
        self.guards = program.guards
        # large constants are arguments of the compiled function: baked into it, XLA would
        # copy and constant-fold every weight at compile time (seconds, and a second copy in
        # memory, for a model's weights)
        large = [(k, value, host) for k, value, host in zip(
            program.constant_registers, program.constants, program.host_constants)
            if value.size * value.dtype.itemsize >= BAKED_CONSTANT_BYTES]
        registers = [k for k, _, _ in large]
        # a transposed C array (the `w.T` of `x @ w.T`, which NumPy hands over as a Fortran-
        # ordered view) goes to the device as the C array it views and is transposed back in
        # the program, where XLA folds the transpose into the product, as jax.jit of the same
        # code does: a (768, 50257) row-major copy made `x @ wte.T` 1.2x slower on the CPU
        flipped = tuple(_transposed(host) for _, _, host in large)
        with x64():
            self.constants = tuple(self._jax.device_put(np.asarray(host).T) if flip else value
                                   for (_, value, host), flip in zip(large, flipped))
        program.drop_constants(k for (k, _, _), flip in zip(large, flipped) if flip)
        # the float constants' smallest and largest magnitudes, for the subnormal checks
        bounds = [subnormals.magnitudes(host)
                  if np.dtype(value.dtype) in subnormals.FLUSHED else None
                  for _, value, host in large]
        # the backend's cache holds this object weakly keyed by the program: a strong reference
        # from here would keep every program alive (the large constants it holds are also the
        # program's, and die with it)
        program_ref = weakref.ref(program)
        # the nodes XLA's arithmetic may compute otherwise, unchecked: refused unless the
        # replay takes arithmetic="xla" (JaxBackend.execute)
        # and the nodes reading a constant that holds a subnormal value (XLA reads it as 0)
        low = {k: known[0] for (k, _, _), known in zip(large, bounds) if known is not None}
        subnormal = {}
        for k, index, host in zip(program.constant_registers, program.constant_nodes,
                                  program.host_constants):
            held = subnormals.subnormal_constant(host, low.get(k))
            if held is not None:
                subnormal[index] = held
        self.own_arithmetic: list[tuple[Node, str]] = []
        for step in program.table:
            if step[1] is None:
                continue
            why = backend.own_arithmetic(step[-1]) or _reads_subnormal(step[-1], subnormal)
            if why is not None:
                self.own_arithmetic.append((step[-1], why))

        # the layout NumPy gives each constant (the checks of sums follow it: layouts.py)
        constant_layouts = {index: layouts.host_layout(host) for index, host in zip(
            program.constant_nodes, program.host_constants)}

        def traced(inputs: tuple, constants: tuple, seed: Any, zero: Any, precise: bool,
                   input_layouts: tuple = (), xla: bool = False,
                   deferred: bool = False) -> tuple:
            backend.traces += 1
            program = program_ref()  # alive: a trace runs inside execute(program, ...)
            nodes = [step[-1] for step in program.table if step[1] is not None]
            guard_values: list = []  # what the guards read, checked after the run
            with tracing(nodes, precise, self._jax.numpy) as trace:
                trace.zero, trace.lax = zero, self._jax.lax  # products rounded: unfused.py
                if deferred:  # carried_paths._more_terms, at this level of the program
                    trace.deferred_widening = trace_state()
                given = len(program.input_names)  # the states' values follow the inputs'
                trace.layouts = layouts.Layouts(
                    dict(zip(program.input_names, input_layouts[:given])), constant_layouts,
                    {node.index: layout for node, layout in zip(program.states,
                                                                input_layouts[given:])})
                # arithmetic="xla": the contractions of linear algebra and what is computed
                # from them take XLA's order, untested (the lead's ruling 37 07:30 (c))
                trace.carried = cancellation.of(nodes, self._jax.numpy, contractions=not xla)
                constants = [c.T if flip else c for c, flip in zip(constants, flipped)]
                trace.known_magnitudes = {id(c): known for c, known in zip(constants, bounds)
                                          if known is not None}
                trace.constant_hosts = {id(c): host for c, (_, _, host) in zip(constants, large)}
                outputs = program(list(inputs), 0 if seed is None else seed,
                                  dict(zip(registers, constants)), guard_values)
                if trace.poisons:  # the fast trace poisoned values: test where they leave
                    _sinks(trace.poisons, program, outputs, guard_values)
            self.checks[precise] = trace.checks
            number = len(self.traced_checks)
            self.traced_checks.append(trace.checks)
            self.traced_warnings.append(trace.warnings)
            # one array: one transfer to read them all after the run; the trace's number with
            # them, to read them against this trace's checks and give its warnings
            flags = self._jax.numpy.stack(trace.flags) if trace.flags else None
            known = flags is not None or trace.warnings
            return (tuple(outputs), flags, tuple(guard_values),
                    np.int64(number) if known else None)

        # the fast program merges the elementwise checks (one flag per shape, fused by XLA);
        # the precise one, traced only when a merged flag fails, names the node
        self._fn = self._jax.jit(traced, static_argnums=(4, 5, 6, 7))
        # whether the fast program defers the widening of a bound carried through a contraction
        # whose operand XLA holds 0 to the precise program (trace.deferred_widening): until the
        # fast program's test for such a 0 once failed (the precise program then ran), after
        # which the fast program is traced with that widening (no precise run at each replay)
        self._deferred = True
        # the subnormal check of the float inputs not known normal: a pass over each, as long
        # as a fused elementwise chain's, in a program of its own, so that the replay's program
        # has no branch, argument or result for it once its inputs are known (a conditional
        # in the program cost a small replay a quarter of its time)
        self._check_fn = self._jax.jit(partial(_no_subnormals, self._jax))
        # the input arrays found free of subnormals, by id: a jax array is immutable, so its
        # check is made once
        self._normal: dict[int, weakref.ref] = {}

    def _fail(self, inputs: tuple, key: Any, flags: Any, number: int,
              input_layouts: tuple, xla: bool) -> tuple:
        """Raise for the first failed check of a node. A check with no node (a merged one, or a
        test for a poisoned NaN, :mod:`capviz.backends.jax.poison`) runs the precise program
        once: its first failed check names the node; when none fails, the fast program's test
        fired where NumPy's value is the one XLA gave (an underflow to 0 that NumPy's result
        shares, :func:`capviz.backends.jax.subnormals.elementwise._fast`, or a NaN of the
        user's, which the poison tests cannot tell from a poisoned one), and this returns the
        precise program's outputs and guard values: the replay goes on with them (the fast
        program's may hold poisoned NaNs)."""
        jax = self._jax
        checks, failed = self.traced_checks[number], _failed(flags)
        if any(checks[k] == (None, WIDENING) for k in failed):  # an operand XLA holds 0 with a
            self._deferred = False  # bound: from now on widened in the fast program (its cond)
        merged = any(node is None for node, _ in checks)
        if merged:  # a merged check may have failed first
            with x64(), jax.default_matmul_precision("highest"):
                outputs, flags, guard_values, number = self._fn(
                    inputs, self.constants, key, _ZERO, True, input_layouts, xla)
            if flags is None:
                return outputs, guard_values
            checks, failed = self.traced_checks[int(number)], _failed(flags)
            if not failed:
                return outputs, guard_values
        node, message = checks[failed[0]]
        if node is None:  # pragma: no cover - the precise program has a node for each check
            raise ReplayError("a value check of the jax replay failed, and the precise replay "
                              "did not find which; replay with backend='numpy'")
        err = ReplayError(f"replay failed at node %{node.index} ({node.op}), recorded "
                          f"at {format_source(node.source) or 'unknown source'}: {message}")
        err.node = node
        raise err

    def _is_array(self, x: Any) -> bool:
        return isinstance(x, self._jax.Array)

    def _known_normal(self, x: Any) -> bool:
        ref = self._normal.get(id(x))
        return ref is not None and ref() is x

    def _remember_normal(self, arrays: list) -> None:
        normal = self._normal
        for x in arrays:
            key = id(x)
            try:
                normal[key] = weakref.ref(x, lambda _, key=key: normal.pop(key, None))
            except TypeError:  # pragma: no cover - an array type without weak references
                pass

    def _unknown_floats(self, inputs: tuple) -> list[int]:
        """The float inputs to check for subnormals: all but the device arrays that passed."""
        known = self._known_normal
        return [k for k, x in enumerate(inputs) if _floating(x) and not known(x)]

    def __call__(self, inputs: tuple, seed: int, xla: bool = False) -> tuple:
        jax = self._jax
        _refuse_raising()
        # the seed, and a zero only known at run time (see capviz.backends.jax.random.uniform)
        key = (np.uint64(seed), np.float64(0.0)) if self.random else None
        unknown = self._unknown_floats(inputs)
        given, is_array = inputs, self._is_array
        # NumPy adds a sum in its operand's memory order: a host input's layout is a static
        # argument (an F-ordered one traces again), followed by the checks of sums
        input_layouts = tuple(self._backend.host_layout(x) for x in inputs)
        with x64(), jax.default_matmul_precision("highest"):
            try:
                if unknown:  # a host array goes to the device once, for the check and the run
                    inputs = tuple(x if k not in unknown or is_array(x) else jax.device_put(x)
                                   for k, x in enumerate(inputs))
                outputs, flags, guard_values, number = self._fn(
                    inputs, self.constants, key, _ZERO, False, input_layouts, xla,
                    self._deferred)
                normal = self._check_fn(tuple(inputs[k] for k in unknown)) if unknown else None
            except CapvizError:
                raise
            except Exception as err:  # XLA refused the traced program (no node to name)
                raise ReplayError(f"jax could not compile or run this graph: "
                                  f"{type(err).__name__}: {err}; replay with "
                                  "backend='numpy'") from err
        if normal is not None:
            normal = np.asarray(normal)
            if not normal.all():
                name = self.input_names[unknown[int(np.argmin(normal))]]
                raise ReplayError(
                    f"input {name!r} holds subnormal floats, which XLA "
                    "flushes to zero where NumPy keeps them; replay with backend='numpy', or "
                    "flush them first: np.where(np.abs(x) < np.finfo(x.dtype).tiny, 0, x)")
        failing = flags is not None and not np.asarray(flags).all()
        if failing or (number is not None and any(self.traced_warnings)):
            number = int(number)  # read only then: one more transfer
            if failing:
                outputs, guard_values = self._fail(inputs, key, flags, number, input_layouts,
                                                   xla)
            _give(self.traced_warnings[number])
        if self.guards:  # the values the guards read, fetched together, checked before return
            check_all(self.guards, jax.device_get(guard_values))
        if unknown:  # the caller's arrays on the device are immutable: checked once
            self._remember_normal([given[k] for k in unknown if is_array(given[k])])
        return outputs


BACKEND = register(JaxBackend())
