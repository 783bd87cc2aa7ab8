"""Tracing a program for the JAX backend: which node each bound call runs, its type, and the
value checks.

:class:`capviz.replay.program.Program` runs its table of steps in order, one call of the bound
callable per op step; :func:`tracing` follows those calls (``Trace.enter``) so that a result is
checked against its node's shape and dtype (:func:`bound`: NumPy's types are kept, or the replay
fails at the node), and a check on values (:func:`require`) is returned as a flag of the traced
function and fails the replay at its node after the run. The replay's fast trace poisons instead
(:func:`poisoned`): a value whose elementwise check fails becomes NaN, tested where it leaves the
program (:mod:`capviz.backends.jax.poison`).
"""

from __future__ import annotations

import contextlib
import contextvars
import math
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from capviz import ops
from capviz.backends.jax.poison import Poisons
from capviz.core.errors import UnsupportedOperationError
from capviz.core.ir import Node
from capviz.core.source import format_source
from capviz.ops import traits


def dtype_of(value: Any) -> np.dtype:
    """The dtype of an array, a NumPy scalar or a Python number (NumPy's reading of it)."""
    return np.dtype(value.dtype) if hasattr(value, "dtype") else np.asarray(value).dtype


def loop_key(value: Any) -> Any:
    """An operand as ``ufunc.resolve_dtypes`` takes it: a dtype, or a Python scalar's type
    (NumPy 2 promotes those weakly)."""
    kind = type(value)
    if kind is int or kind is float or kind is complex:
        return kind
    if kind is bool:
        return np.dtype(bool)
    return dtype_of(value)


class Trace:
    """State of one trace of a program: which node each bound op call belongs to (the steps of
    ``program.table`` run in order, one call per op step), and the value checks made."""

    def __init__(self, nodes: list[Node], precise: bool = True, jnp: Any = None) -> None:
        self._nodes = nodes
        self._jnp = jnp
        self._next = 0
        self.node: Node | None = None
        self.checks: list[tuple[Node | None, str]] = []
        self.flags: list[Any] = []
        self.warnings: list[tuple[Node | None, type[Warning], str]] = []
        """NumPy's warnings that depend only on shapes and types (:func:`warn`): given after
        each run of the trace, at the node's line."""
        self.precise = precise
        self._masks: dict[tuple, Any] = {}
        self._batches: dict[Any, tuple[Callable, list]] = {}
        """The checks :meth:`require_batched` deferred, by kind: the test and, per check,
        its slot among the flags and its operands."""
        self._batched_elements: dict[Any, int] = {}
        self.known_magnitudes: dict[int, tuple[float, float]] = {}
        """The smallest nonzero and the largest finite magnitude of each float constant
        argument of the program, by the id of its traced value: measured once on the host,
        where a check would read a model's weights at every replay
        (:mod:`capviz.backends.jax.subnormals`)."""
        self.constant_hosts: dict[int, np.ndarray] = {}
        """The host array of each large constant argument of the program (a model's weights),
        by the id of its traced value: what a bound may measure once on the host
        (:func:`host_measured`) instead of reading the weights in every replay's program."""
        self._measured: dict[tuple[int, str], np.ndarray] = {}
        self.poisons = None if precise else Poisons(jnp, self.clean, self.flag)
        """What the fast trace poisoned (:mod:`capviz.backends.jax.poison`)."""
        self.lax: Any = None
        """jax.lax, for :func:`capviz.backends.jax.unfused.rounded`."""
        self.apart: Any = None
        """The product nodes nothing adds to (:func:`capviz.backends.jax.unfused._apart`),
        found at the first product."""
        self.constant: Any = None
        """The op nodes whose values XLA computes from constants only (a ``np.zeros``, a
        ``np.full_like``, what reads only them: :func:`capviz.backends.jax.unfused.
        _from_constants`), found at the first arithmetic op that reads a literal or one."""
        self.zero: Any = None
        """An integer 0 the compiler cannot see (an argument of the compiled function), with
        which each floating product is rounded before an add reads it
        (:mod:`capviz.backends.jax.unfused`); ``None``: products are left to XLA."""
        self.carried: Any = None
        """The sums that reach an add or subtract and the bounds carried from them
        (:class:`capviz.backends.jax.carried.Carried`); ``None``: none."""
        self.layouts: Any = None
        """The layout NumPy gives each value (:class:`capviz.backends.jax.layouts.Layouts`),
        for the checks of sums; ``None``: every value taken as C-ordered."""
        self.deferred_widening: Any = None
        """Where the fast trace tests, elementwise and merged (:meth:`require_each`), that no
        contraction's operand XLA holds 0 carries a bound, instead of widening that bound
        under a ``lax.cond`` per contraction (:func:`deferred_widening`): jax's trace state of
        the program's own level (not inside a branch of a ``lax.cond``, from which no mask
        can be kept); ``None``: nowhere."""

    @property
    def nodes(self) -> list[Node]:
        """The nodes of the program's op steps, in order."""
        return self._nodes

    def enter(self, op_name: str) -> Node:
        """The node of the next step running ``op_name``."""
        nodes = self._nodes
        k = self._next
        while k < len(nodes) and nodes[k].op != op_name:
            k += 1
        if k == len(nodes):
            raise RuntimeError(f"capviz's jax backend lost track of the steps at op {op_name!r}")
        self._next = k + 1
        self.node = nodes[k]
        return self.node

    def require(self, ok: Any, message: str) -> None:
        """Check ``ok`` (a boolean jax array) after the run; ``message`` says what failed."""
        self.checks.append((self.node, message))
        self.flags.append(ok)

    def require_each(self, mask: Any, message: str, group: str = "") -> None:
        """Check every element of ``mask`` (a boolean jax array) after the run. In the precise
        trace, one flag for this node, as :meth:`require`; in the fast one, ``mask`` is and-ed
        into one mask per shape, reduced once at the end (:meth:`merged`): XLA fuses the
        elementwise checks of a chain of ops into the chain, where a flag per op is a reduction
        per value that it cannot fuse. A failed merged flag names no node: the replay runs the
        precise trace to find it. ``group``: the fast trace's masks of that group are merged
        apart from the others, and their flag's check names the group (``(None, group)``)."""
        if self.precise:
            self.require(mask.all(), message)
            return
        key = (group, tuple(mask.shape))
        merged = self._masks.get(key)
        self._masks[key] = mask if merged is None else merged & mask

    def poison(self, value: Any, mask: Any, message: str, operand: bool = False) -> Any:
        """``value`` checked element by element against ``mask`` (a boolean jax array of its
        shape, broadcastable): in the precise trace, a flag for this node (:meth:`require`),
        and ``value`` as it is; in the fast one, ``value`` is to be read as NaN where ``mask``
        fails: the op's result (pending, applied by the first reader that is not elementwise),
        or an operand (``operand``: applied now, an elementwise select XLA fuses into the op).
        A NaN where the program's values leave it reruns the precise trace
        (:mod:`capviz.backends.jax.poison`)."""
        if self.precise:
            self.require(mask.all(), message)
            return value
        if self._jnp.broadcast_shapes(mask.shape, value.shape) != tuple(value.shape):
            self.require_each(mask, message)  # a mask wider than the value: merged
            return value
        if operand:
            return self.poisons.operand(self.node, value, mask)
        self.poisons.result(mask)
        return value

    def require_batched(self, kind: Any, operands: tuple, test: Callable, message: str) -> None:
        """:meth:`require` of ``test(*stacked)[0]``, ``stacked`` the ``operands`` each with a
        leading axis of 1: one check of a kind (``kind``, hashable, also naming the operands'
        shapes and dtypes and ``test``'s constants) that a program makes at many nodes (GPT-2's
        subnormal test of each head's ``q @ k.T`` and ``p @ v``: 288 checks of 64 x 64
        operands at 12 layers). Its flag keeps its place among the checks, and so its node,
        but the test is made once per kind, after the program (:meth:`merged`), on the
        operands of every such check stacked: one reduction per kind where a reduction per
        check is a kernel of its own that XLA cannot fuse. ``test`` takes arrays of ``n``
        checks' operands (leading axis ``n``) and gives ``n`` booleans. Operands larger
        than :data:`BATCHED_ELEMENTS` are tested now, and a kind's checks as soon as their
        operands reach :data:`BATCHED_TOTAL` elements (kept alive to the end of the program,
        they would hold memory)."""
        if not batchable(*operands):
            self.require(test(*(a[None] for a in operands))[0], message)
            return
        self.checks.append((self.node, message))
        self.flags.append(None)  # its slot, filled by _tested()
        _, pending = self._batches.setdefault(kind, (test, []))
        pending.append((len(self.flags) - 1, operands))
        held = self._batched_elements.get(kind, 0) + sum(math.prod(a.shape) for a in operands)
        self._batched_elements[kind] = held
        if held >= BATCHED_TOTAL:  # what is kept alive stays small
            self._tested(test, self._batches.pop(kind)[1])
            del self._batched_elements[kind]

    def _tested(self, test: Callable, pending: list) -> None:
        """The flags of deferred checks of one kind (:meth:`require_batched`): one test of
        their operands stacked."""
        jnp = self._jnp
        ok = test(*(jnp.stack(column) for column in zip(*(ops for _, ops in pending))))
        for k, (slot, _) in enumerate(pending):
            self.flags[slot] = ok[k]

    def flag(self, ok: Any) -> None:
        """A flag with no node: when it fails, the precise trace is run, and says which check
        failed, if any."""
        self.checks.append((None, ""))
        self.flags.append(ok)

    def clean(self, value: Any) -> None:
        """A flag with no node: ``value`` (tainted) holds no NaN. A NaN may be a poisoned
        element or the user's own: either way the precise trace is run, and says which. A
        complex value is tested in its real and imaginary parts."""
        if not hasattr(value, "dtype") or np.dtype(value.dtype).kind not in "fc":
            return
        jnp = self._jnp
        if np.dtype(value.dtype).kind == "c":
            nan = jnp.isnan(jnp.real(value)) | jnp.isnan(jnp.imag(value))
        else:
            nan = jnp.isnan(value)
        self.flag(~jnp.any(nan))

    def merged(self) -> None:
        """Make the deferred checks' tests (:meth:`require_batched`, one per kind) and add the
        merged masks' flags (one per shape, no node: see :meth:`require_each`)."""
        for test, pending in self._batches.values():
            self._tested(test, pending)
        self._batches, self._batched_elements = {}, {}
        for (group, _), mask in self._masks.items():
            self.checks.append((None, group))
            self.flags.append(mask.all())
        self._masks = {}


TRACE: contextvars.ContextVar[Trace | None] = contextvars.ContextVar("capviz_jax_trace",
                                                                       default=None)


def require(ok: Any, message: str) -> None:
    """Inside a traced op: fail the replay at this node, after the run, unless ``ok``; in an
    op run on its own (the stepping :class:`capviz.Executor`): fail it now."""
    trace = TRACE.get()
    if trace is not None:
        trace.require(ok, message)
    elif not bool(ok):
        raise ValueError(message)


def refusal(reason: str) -> UnsupportedOperationError:
    """The refusal of a form of the op being traced that the JAX backend does not run as NumPy
    computes it, decided on shapes, dtypes and parameters (``np.linalg.norm(ord=2)`` of float16):
    an :class:`capviz.UnsupportedOperationError` naming the op, the node and the user's line,
    ``reason`` saying why and the fix; raised while tracing, before anything runs. (Raise it:
    ``raise refusal(...)``.)"""
    trace = TRACE.get()
    node = trace.node if trace is not None else None
    if node is None:  # an op run on its own (the stepping Executor)
        return UnsupportedOperationError(f"this op cannot run on the jax backend: {reason}")
    where = format_source(node.source) or "unknown source"
    err = UnsupportedOperationError(f"op {node.op!r} cannot run on the jax backend: {reason} "
                                    f"(node %{node.index}, recorded at {where})")
    err.node = node
    return err


def warn(category: type[Warning], message: str) -> None:
    """Inside a traced op: the warning NumPy gives for this node whatever the values (one that
    depends only on shapes and types: ``Mean of empty slice``), given after each run of the
    compiled function at the node's line (:meth:`capviz.backends.jax.backend._Compiled.
    __call__`); in an op run on its own: now."""
    trace = TRACE.get()
    if trace is not None:
        trace.warnings.append((trace.node, category, message))
    else:
        warnings.warn(message, category, stacklevel=2)


def cast(jnp: Any, value: Any, dtype: Any) -> Any:
    """``value`` as ``dtype``, as NumPy's unsafe cast does; a float cast to an integer outside
    its range (or NaN), which NumPy leaves to the platform and XLA saturates, fails the
    replay."""
    dtype = np.dtype(dtype)
    value = jnp.asarray(value)
    source = np.dtype(value.dtype)
    if source.kind in "fc" and dtype.kind in "iu":
        real = jnp.real(value) if source.kind == "c" else value
        info = np.iinfo(dtype)
        # the bounds as powers of two (exact in every float type); truncation keeps (lo-1, hi+1)
        low, high = float(info.min) - 1.0 if info.min else -1.0, float(info.max) + 1.0
        ok = jnp.all((real > low) & (real < high))
        require(ok, f"a {source} value cast to {dtype} is NaN or outside {dtype}'s range; "
                    "NumPy's result for it is the platform's, XLA's saturates (clip or "
                    "np.nan_to_num the values first)")
        value = real
    elif source.kind == "c" and dtype.kind == "b":  # NumPy: either part nonzero (0+nanj)
        return (jnp.real(value) != 0) | (jnp.imag(value) != 0)
    elif source.kind == "c" and dtype.kind != "c":
        value = jnp.real(value)  # NumPy drops the imaginary part (ComplexWarning)
    return value.astype(dtype)


def known_magnitudes(value: Any) -> tuple[float, float] | None:
    """The smallest nonzero and the largest finite magnitude of ``value`` when it is a constant
    of the traced program (:attr:`Trace.known_magnitudes`), else ``None``."""
    trace = TRACE.get()
    return None if trace is None else trace.known_magnitudes.get(id(value))


HOST_MEASURED = True
"""Whether :func:`host_measured` measures constants on the host (``False``: every bound reads
them in the program, as before stop 38; ``benchmarks/jax_weight_statistics.py``'s baseline)."""


def host_measured(value: Any, what: str,
                  measure: Callable[[np.ndarray], np.ndarray]) -> np.ndarray | None:
    """``measure(host)`` (a NumPy array) when ``value`` is a large constant argument of the
    traced program (:attr:`Trace.constant_hosts`), computed on the host once per trace and
    ``what``; else ``None`` (a computed value, or an op run on its own). Sound for as long as
    the program runs on those values: a graph keeping its weights by reference refuses a
    replay after they changed (:mod:`capviz.core.references`) until ``graph.changed()``, which
    makes a new program, traced and measured again; a graph holding copies holds them
    unchanged. (The lead's ruling 38 10:50: a weight's column norms measured once per
    fingerprint, not at every replay.)"""
    trace = TRACE.get()
    if trace is None or not HOST_MEASURED:
        return None
    host = trace.constant_hosts.get(id(value))
    if host is None:
        return None
    key = (id(value), what)
    kept = trace._measured.get(key)
    if kept is None:
        kept = trace._measured[key] = np.asarray(measure(host))
    return kept


def precise() -> bool:
    """Whether the checks being made must be exact: in the precise trace of a program, and for
    an op run on its own; the fast trace takes a cheaper test that fails at least wherever the
    exact one does (a failure reruns the precise program, which says whether a check failed and
    names its node)."""
    trace = TRACE.get()
    return trace is None or trace.precise


DEFERRED_WIDENING = True
"""Whether a replay's fast program defers the widening of a bound carried through a contraction
whose operand XLA holds 0 (:func:`deferred_widening`); ``False``: a ``lax.cond`` per such
contraction in every program, as before stop 41 (``benchmarks/jax_fast_checks.py``'s
baseline)."""


WIDENING = "widening"
"""The group of the fast trace's merged masks that test "no operand XLA holds 0 carries a
bound" (:func:`deferred_widening`), the message of their flags' checks."""


def deferred_widening() -> bool:
    """Whether this trace is a fast one that defers :func:`capviz.backends.jax.carried_paths.
    _more_terms`'s widening: it then tests "no operand XLA holds 0 carries a bound" with the
    merged masks (:meth:`Trace.require_each`), whose failure reruns the precise program, which
    widens the bound under its ``lax.cond`` (the same bound, the same checks as before), and
    after which the replay traces its fast program with the conds
    (:class:`capviz.backends.jax.backend._Compiled`). A ``lax.cond`` per contraction is a
    reduction and a branch that XLA cannot fuse: 144 of them in GPT-2 small's program, whose
    widening GPT-2's values never take."""
    trace = TRACE.get()
    if trace is None or trace.precise or trace.deferred_widening is None \
            or not DEFERRED_WIDENING:
        return False
    return trace_state() == trace.deferred_widening


def trace_state() -> Any:
    """jax's state of the trace being made (equal at one level of a program, another inside a
    ``lax.cond``'s branch)."""
    from jax.extend.core import get_opaque_trace_state

    return get_opaque_trace_state(convention="flax")


def poisoned(value: Any, mask: Any, message: str, operand: bool = False) -> Any:
    """Inside a traced op: its result ``value`` (or an ``operand``) checked element by element
    against ``mask`` (:meth:`Trace.poison`: NaN where it fails in the fast trace, a flag at
    this node in the precise one); in an op run on its own: ``value``, or a ValueError now."""
    trace = TRACE.get()
    if trace is not None:
        return trace.poison(value, mask, message, operand)
    if not bool(mask.all()):
        raise ValueError(message)
    return value


BATCHED_ELEMENTS = 1 << 16
"""The largest operand (in elements) whose check :meth:`Trace.require_batched` defers to the
end of the program: a model's per-head values (64 x 64) are, its layers' activations and
weights are not."""


BATCHED_TOTAL = 1 << 22
"""The elements of the operands of one kind's deferred checks (:meth:`Trace.require_batched`)
past which they are tested at once (16 MiB of float32): GPT-2 small's 288 head products hold
2.4 million."""


def batchable(*operands: Any) -> bool:
    """Whether :func:`require_batched` defers a check of ``operands`` (each of at most
    :data:`BATCHED_ELEMENTS` elements)."""
    return all(math.prod(a.shape) <= BATCHED_ELEMENTS for a in operands)


def require_batched(kind: Any, operands: tuple, test: Callable, message: str) -> None:
    """Inside a traced op: :meth:`Trace.require_batched` (the check made with every other of
    its kind, after the program); in an op run on its own: :func:`require` now."""
    trace = TRACE.get()
    if trace is not None:
        trace.require_batched(kind, operands, test, message)
    elif not bool(test(*(a[None] for a in operands))[0]):
        raise ValueError(message)


def require_each(mask: Any, message: str, group: str = "") -> None:
    """:func:`require` of every element of ``mask``, fused with the op in a traced program
    (:meth:`Trace.require_each`, merged with the masks of ``group`` in a fast one)."""
    trace = TRACE.get()
    if trace is not None:
        trace.require_each(mask, message, group)
    elif not bool(mask.all()):
        raise ValueError(message)


def _accumulated(op: ops.Op, node: Node | None, args: tuple, params: dict) -> tuple:
    """``args`` with an integer or boolean operand of an accumulating reduction
    (:data:`capviz.ops.traits.ACCUMULATES`) cast to
    NumPy's accumulator (the node's dtype when it is an integer type or float64; a narrower
    ``dtype=`` the user passed is left to jax)."""
    if op.name not in traits.ACCUMULATES or not args or not hasattr(args[0], "dtype"):
        return args
    have = dtype_of(args[0])
    if have.kind not in "biu":
        return args
    want = np.dtype(node.dtype) if node is not None else np.dtype(op.meta(list(args),
                                                                          params)[1])
    if want == have or not (want.kind in "iu" or want == np.float64):
        return args
    return (args[0].astype(want), *args[1:])


def _types(op: ops.Op, node: Node | None, args: tuple, params: dict, result: Any) -> tuple:
    """(what NumPy gives, what jax gave) as lists of ``(shape, dtype)``: the node's type, or
    the op's rule on the operands when no node is known (an op run on its own)."""
    if op.multi:
        want = [(tuple(s), np.dtype(d)) for s, d in op.meta(list(args), params)]
        got = [(tuple(r.shape), np.dtype(r.dtype)) for r in result]
        return want, got
    if node is not None:
        want = [(tuple(node.shape), np.dtype(node.dtype))]
    else:
        shape, dtype = op.meta(list(args), params)
        want = [(tuple(shape), np.dtype(dtype))]
    return want, [(tuple(np.shape(result)), dtype_of(result))]


def _widened(args: tuple, dtype: np.dtype) -> tuple | None:
    """``args`` with their float (complex) arrays cast up to ``dtype``, or ``None`` when none
    is narrower: NumPy computes these functions in float64 when it meets a float64 constant
    (``np.cov`` of float32 is float64), and an exact upcast of the operands does the same."""
    changed = False
    out = []
    for a in args:
        have = np.dtype(a.dtype) if hasattr(a, "dtype") and not isinstance(a, np.generic) \
            else None
        if have is not None and have.kind in "fc" and have.itemsize < dtype.itemsize:
            target = dtype if have.kind == dtype.kind else np.dtype(np.float64)
            out.append(a.astype(target))
            changed = True
        else:
            out.append(a)
    return tuple(out) if changed else None


def _call_conformed(op: ops.Op, node: Node | None, fn: Callable, args: tuple, params: dict) -> Any:
    """``fn(*args, **params)`` with the node's shape and dtype (NumPy's), or the refusal
    naming the node (:func:`refusal`, while tracing): a replay keeps the graph's types."""
    args = _accumulated(op, node, args, params)
    result = fn(*args, **params)
    want, got = _types(op, node, args, params, result)
    if want == got:
        return result
    if not op.multi and want[0][0] == got[0][0]:
        wanted, have = want[0][1], got[0][1]
        if op.name in traits.INDEX_RESULTS and wanted.kind in "iu" and have.kind in "iu":
            return result.astype(wanted)
        if wanted.kind in "fc" and have.kind in "fc" and have.itemsize < wanted.itemsize:
            widened = _widened(args, wanted)
            if widened is not None:
                result = fn(*widened, **params)
                want, got = _types(op, node, widened, params, result)
                if want == got:
                    return result
    text = "; ".join(f"{d}{list(s)}" for s, d in got)
    expected = "; ".join(f"{d}{list(s)}" for s, d in want)
    raise refusal(f"jax.numpy's {op.name} gives {text} where NumPy gives {expected}; replay "
                  "this graph with backend='numpy'")


def bound(op: ops.Op, fn: Callable, eager_context: Callable[[], Any]) -> Callable:
    """``fn`` with its result checked against the node while tracing; called outside a trace
    (one op at a time, by the stepping Executor), it runs inside ``eager_context()`` and is
    checked against the op's rule."""
    if op.name == "unpack":
        return fn

    def run(*args: Any, **params: Any) -> Any:
        trace = TRACE.get()
        if trace is None:  # one op at a time (the stepping Executor)
            with eager_context():
                if op.random:
                    return fn((np.uint64(args[0]), np.float64(0.0)), **params)
                return _call_conformed(op, None, fn, args, params)
        node = trace.enter(op.name)
        poisons = trace.poisons
        if poisons:  # the fast trace, past a poisoned value
            args = poisons.screen(node, args, 1 if op.random else 0)
        result = fn(*args, **params) if op.random else _call_conformed(op, node, fn, args,
                                                                        params)
        if trace.carried is not None:  # a sum's bound carried on, or tested (carried.py)
            result = trace.carried.after(node, args, result)
        if poisons is not None:
            poisons.settle(node, result)
        return result

    run.__name__ = op.name
    return run


@contextlib.contextmanager
def tracing(nodes: list[Node], precise: bool = True, jnp: Any = None) -> Iterator[Trace]:
    """Follow the bound calls of one trace of a program whose op steps run ``nodes``;
    ``precise``: a flag per check (else values poisoned, :meth:`Trace.poison`, and elementwise
    checks merged, :meth:`Trace.require_each`); ``jnp``: jax.numpy."""
    trace = Trace(nodes, precise, jnp)
    token = TRACE.set(trace)
    try:
        yield trace
        trace.merged()
    finally:
        TRACE.reset(token)

