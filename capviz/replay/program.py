"""The compiled replay: a graph turned into a flat table of steps run by one tight loop.

:class:`Program` is what :func:`capviz.replay.run.replay` and ``graph.compile()`` run. Building
it is one pass over the graph (:func:`capviz.replay.plan.schedule` gives every value a
register, decides when it dies and which results go into a dead buffer with ``out=``), then
one tuple per op: ``(kind, fn, a, b, o, node)``, where ``fn`` is the op's callable as the backend
binds it (:meth:`capviz.backends.registry.Backend.bind`), ``a`` and ``b`` the registers of its
operands, ``o`` its result's register. Literals,
constants and the seed sit in registers too, so a step never tests what its operands are.

Why a table and not generated Python code (torch.fx's way, and capviz's before): CPython's
``compile()`` costs 20-50 us per generated line here, and its time and memory grow with the
function's size, while building a tuple costs about a microsecond; the loop below runs as fast
as the generated code did (a global lookup per op there, a tuple unpack here; measured by
``benchmarks/replay.py``). No string from a graph is ever evaluated: there is no code to
evaluate.

A failing op is re-raised as :class:`capviz.ReplayError` naming the node; NumPy's
floating-point warnings are issued at the user's line (:mod:`capviz.replay.warnings`).

The program names no backend: constants go onto the backend with its ``from_host``, ops are
bound by its ``bind`` (which may refuse one by name), and the memory plan (``out=`` steps) is
made only for a backend whose arrays are ``mutable``. A backend whose ``execute`` does not call
the program may still read its :attr:`Program.table` (Dask builds one lazy expression from it,
JAX traces it under ``jax.jit``).
"""

from __future__ import annotations

import math
import operator
from typing import Any

import numpy as np

from capviz import ops
from capviz.backends.registry import Backend, replay_error
from capviz.backends.registry import get as get_backend
from capviz.core.errors import CapvizError, UnsupportedOperationError
from capviz.core.ir import Graph, Node
from capviz.core.source import format_source
from capviz.replay import guards
from capviz.replay.plan import ALWAYS_C, MIN_PLAN_BYTES, schedule
from capviz.replay.warnings import user_warnings

# step kinds, most frequent first (the loop tests them in this order)
BINARY, UNARY, PLANNED, CALL, INTO, KILL = range(6)


def run_table(table: list, r: list) -> None:
    """Run the steps of ``table`` on the registers ``r``."""
    node = None
    try:  # the kinds are written as literals: a constant compares faster than a global
        for kind, fn, a, b, o, node in table:  # noqa: B007 - node names a failing step
            if kind == 0:  # BINARY
                r[o] = fn(r[a], r[b])
            elif kind == 1:  # UNARY
                r[o] = fn(r[a])
            elif kind == 2:  # PLANNED
                r[o] = planned(fn, r, a, b, o)
            elif kind == 3:  # CALL
                r[o] = fn(*[r[k] for k in a], **b)
            elif kind == 4:  # INTO: a ufunc writing into a state's live array (replay/state.py)
                r[o] = fn(r[a], out=r[o]) if b is None else fn(r[a], r[b], out=r[o])
            else:  # KILL
                for k in a:
                    r[k] = None
    except Exception as err:
        raise _StepFailed(node, err) from err


def planned(fn: Any, r: list, a: tuple, params: dict, o: int) -> Any:
    """A step of the memory plan: ``fn(*args, out=buffer)`` with the dead buffer in ``r[o]``.

    ``a`` is (the registers of the arguments, those of the array operands). ``out=`` is passed
    only when the buffer and every array operand are C-contiguous: NumPy then makes a C-ordered
    result too, so the result has eager's layout as well as its bits. Otherwise (an operand that
    is a transpose, a Fortran-ordered input) the op allocates, as in eager NumPy. matmul makes a
    C-ordered result from any operands, so only its buffer is checked.
    """
    regs, arrays = a
    buffer = r[o]
    for k in arrays:
        if not r[k].flags.c_contiguous:
            return fn(*[r[k] for k in regs], **params)
    if not buffer.flags.c_contiguous:
        return fn(*[r[k] for k in regs], **params)
    return fn(*[r[k] for k in regs], out=buffer, **params)


class _StepFailed(Exception):
    def __init__(self, node: Node | None, err: Exception) -> None:
        super().__init__(node, err)
        self.node = node
        self.err = err


_RUN_CODE = run_table.__code__


def _literal_key(value: Any) -> Any:
    """Literals equal under this key share a register: the type and the exact value (0.0 and
    -0.0 stay apart, so do ``0.5`` and ``np.float32(0.5)``); ``None`` for values never shared."""
    t = type(value)
    if t is float:
        return (t, value, math.copysign(1.0, value))
    if t is int or t is bool:
        return (t, value)
    if isinstance(value, np.generic):
        return (t, value.tobytes())
    return None


class Program:
    """A graph compiled for one backend: a table of steps and its register file.

    Args:
        graph: the graph (not kept: the graph holds its programs).
        backend: the :class:`~capviz.backends.registry.Backend`, or its name.
        min_bytes: results at least this large are planned (written into dead buffers).
        plan: ``False`` compiles without the memory plan (every result freshly allocated); a
            backend whose arrays are not ``mutable`` never has one.
        into: op nodes that write their result into a state's live array (its register),
            by the state node (see :func:`capviz.replay.state.in_place`).

    Raises:
        UnsupportedOperationError: an op the backend refuses, named with the reason.

    Attributes:
        backend: the backend.
        table: the steps.
        constant_registers: the registers holding the graph's constants, in program order.
        constant_nodes: the constants' node indices, in that order.
        host_constants: the graph's constant arrays (host memory, not copies), in that order.
        n_inputs: how many inputs a call takes, in graph input order.
        random: the graph has random ops (only then does a call need a seed).
        guards: the guard nodes, in program order (each a step of the table).
        output_nodes: the node each output returns, in the order of a call's outputs.
    """

    def __init__(self, graph: Graph, backend: Backend | str,
                 min_bytes: int = MIN_PLAN_BYTES, plan: bool = True,
                 into: dict[int, int] | None = None) -> None:
        if isinstance(backend, str):
            backend = get_backend(backend)
        self.backend = backend
        self.xp = backend.namespace()
        sched = schedule(graph, min_bytes, plan and backend.mutable, into)
        reg = sched.reg
        template: list = [None] * sched.registers
        shared: dict[Any, int] = {}

        def literal(value: Any) -> int:
            key = _literal_key(value)
            if key is not None and key in shared:
                return shared[key]
            template.append(value)
            if key is not None:
                shared[key] = len(template) - 1
            return len(template) - 1

        seed_reg = len(template)
        template.append(None)
        table: list = []
        kills = sched.kills
        out = sched.out
        constants = graph.constant_values
        bound: dict[str, tuple] = {}  # op name -> (op, its callable on the backend)
        from_host = backend.from_host
        random = False
        constant_registers: list[int] = []
        constant_nodes: list[int] = []
        host_constants: list = []
        guard_reg = len(template)  # where a call's guard sink goes (see guards.step)
        template.append(None)
        guard_nodes: list[Node] = []
        for n in graph.nodes:
            if n.kind != "op":
                if n.kind == "constant":  # before its first reader, in program order
                    value = constants[n.index]
                    reg[n.index] = len(template)
                    constant_registers.append(len(template))
                    constant_nodes.append(n.index)
                    host_constants.append(value)
                    template.append(from_host(value))
                elif n.kind == "guard":  # checked where it was read, before what follows
                    guard_nodes.append(n)
                    table.append((CALL, guards.step(n), (reg[n.args[0].index], guard_reg), {},
                                  guard_reg, n))
                    dead = kills.get(n.index)
                    if dead:
                        table.append((KILL, None, tuple(dead), 0, 0, n))
                continue
            i = n.index
            o = reg[i]
            if n.op == "unpack":
                step = (UNARY, operator.itemgetter(int(n.params["index"])), reg[n.args[0].index],
                        0, o, n)
            else:
                pair = bound.get(n.op)
                if pair is None:
                    op = ops.OPS[n.op]
                    pair = bound[n.op] = (op, _bind(backend, op, n))
                op, fn = pair
                random = random or op.random
                regs = [seed_reg] if op.random else []
                for a in n.args:
                    regs.append(reg[a.index] if isinstance(a, Node) else literal(a))
                if into and i in into:  # the live array of a state, in its register
                    step = (INTO, fn, regs[0], regs[1] if len(regs) == 2 else None, o, n)
                elif i in out:  # the operands whose layout the step checks (see planned())
                    arrays = () if n.op in ALWAYS_C else \
                        tuple(reg[a.index] for a in n.args if isinstance(a, Node))
                    step = (PLANNED, fn, (tuple(regs), arrays), n.params, o, n)
                elif n.params or len(regs) > 2 or not regs:
                    step = (CALL, fn, tuple(regs), n.params, o, n)
                elif len(regs) == 2:
                    step = (BINARY, fn, regs[0], regs[1], o, n)
                else:
                    step = (UNARY, fn, regs[0], 0, o, n)
            table.append(step)
            dead = kills.get(i)
            if dead:
                table.append((KILL, None, tuple(dead), 0, 0, n))
        self.table = table
        self.guards = tuple(guard_nodes)
        self._guard_reg = guard_reg
        self.random = random
        self.constant_registers = tuple(constant_registers)
        self.constant_nodes = tuple(constant_nodes)
        self.host_constants = tuple(host_constants)  # the graph's arrays (references)
        self._template = template
        self._seed_reg = seed_reg
        self.states = tuple(graph.state_nodes)  # their values follow the inputs' in a call
        self.n_states = len(self.states)
        self.n_views = sum("of" in n.params for n in self.states)  # view states: no output
        self.n_generators = sum(n.dtype is None for n in self.states)
        self.n_rebinds = sum("rebind" in n.params for n in self.states)  # (replay/state.py)
        self.live_plan: Any = None  # the states' live arrays as a replay finds them
        #                             (replay/state.py), made at the first replay
        self.live_program: Any = None  # this program writing the states' last values into the
        #                                live arrays (replay/state.py), made at the first replay
        self.n_inputs = len(graph.input_nodes) + self.n_states
        self.input_names = tuple(n.name for n in graph.input_nodes)
        self.effects = tuple(graph.effect_outputs)  # values logged after the graph (last)
        self.n_effects = len(self.effects) + len(graph.logged_values)  # (and Python values)
        outputs = graph.output_nodes + graph.state_outputs + list(self.effects)
        self.output_names = tuple(n.name for n in graph.output_nodes)
        self._outputs = tuple(reg[n.args[0].index] for n in outputs)
        self.output_nodes = tuple(n.args[0] for n in outputs)  # what each output returns
        self._pick = picker(self._outputs)
        # a 0-d result may be a NumPy scalar (x.sum()); outputs are arrays, as eager's 0-d are
        self._scalar_outputs = tuple(k for k, n in enumerate(outputs) if n.args[0].shape == ())
        self._warnings = _WarningRoute(self._warning_node)

    @property
    def constants(self) -> tuple:
        """The graph's constants on the backend, in the order of :attr:`constant_registers`."""
        return tuple(self._template[k] for k in self.constant_registers)

    def drop_constants(self, registers: Any) -> None:
        """Forget the program's backend copies of the constants in ``registers``: a backend
        that passes copies of its own as arguments of a compiled function (JAX) frees these;
        a call must then give them in ``constants``."""
        for k in registers:
            self._template[k] = None

    def __call__(self, inputs: list | tuple, seed: int, constants: dict | None = None,
                 guard_values: list | None = None) -> tuple:
        """Run on ``inputs`` (arrays of the namespace, checked, in graph input order); returns
        the outputs' arrays in graph output order. ``constants`` maps registers of
        :attr:`constant_registers` to values used in place of the constants (the JAX backend
        passes its large constants as arguments of the compiled function, not baked into it).
        Each guard is checked where it was read (:class:`GuardError`), unless
        ``guard_values`` is a list: the values the guards read are appended to it, in the order
        of :attr:`guards`, for a backend that checks them after its run
        (:func:`capviz.replay.guards.check_all`)."""
        r = self._template.copy()
        r[:self.n_inputs] = inputs
        r[self._seed_reg] = seed
        r[self._guard_reg] = guard_values
        if constants:
            for k, value in constants.items():
                r[k] = value
        warnings = self._warnings
        var = warnings.var
        if var is not None:  # NumPy's error state as user_warnings makes it, one set per call
            current = var.get()
            made = warnings.made.get(current)
            token = var.set(made if made is not None else warnings.make(current))
        else:  # pragma: no cover - NumPy without the context variable
            token = warnings.enter()
        try:
            run_table(self.table, r)
        except _StepFailed as failed:
            err, node = failed.err, failed.node
            if node is None or isinstance(err, CapvizError):
                raise err from None
            raise replay_error(node, [a for a in node.args if isinstance(a, Node)],
                               err) from err
        finally:
            if var is not None:
                var.reset(token)
            else:  # pragma: no cover
                warnings.leave(token)
        if not self._scalar_outputs:
            return self._pick(r)
        values = [r[k] for k in self._outputs]
        for k in self._scalar_outputs:
            values[k] = self.xp.asarray(values[k])
        return tuple(values)

    @staticmethod
    def _warning_node(frame: Any) -> Node | None:
        """The node whose step is running in the table loop on the stack at ``frame``."""
        while frame is not None:
            if frame.f_code is _RUN_CODE:
                return frame.f_locals.get("node")
            frame = frame.f_back
        return None


def _bind(backend: Backend, op: ops.Op, node: Node) -> Any:
    """``backend.bind(op)``; a refusal names the node and the user's line too."""
    try:
        return backend.bind(op)
    except UnsupportedOperationError as err:
        where = format_source(node.source) or "unknown source"
        raise UnsupportedOperationError(f"{err} (node %{node.index}, recorded at {where})"
                                        ) from None


def picker(registers: tuple) -> Any:
    """A function of the registers returning the outputs' tuple (itemgetter returns a bare item
    for one index and fails for none)."""
    if len(registers) == 1:
        (k,) = registers
        return lambda r: (r[k],)
    if not registers:
        return lambda r: ()
    return operator.itemgetter(*registers)


class _WarningRoute:
    """:func:`capviz.replay.warnings.user_warnings` for the table loop, at the cost of one
    context-variable set per call.

    ``user_warnings`` enters ``np.errstate`` (about 15 us); the settings it makes depend only on
    the settings in force, which NumPy 2 keeps as one immutable object in a context variable
    (``var``). So the settings made from each object met are kept (``made``, a few), and a call
    sets the variable to them and resets it after, as ``np.errstate`` itself does. Without that
    variable (another NumPy), every call enters ``user_warnings``.
    """

    def __init__(self, node_of: Any) -> None:
        self._node_of = node_of
        self.made: dict[Any, Any] = {}
        try:
            from numpy._core._ufunc_config import _extobj_contextvar
        except ImportError:  # pragma: no cover - NumPy without the context variable
            _extobj_contextvar = None
        self.var = _extobj_contextvar

    def make(self, current: Any) -> Any:
        """The error state a replay runs under when ``current`` is in force (kept)."""
        with user_warnings(self._node_of):
            made = self.var.get()
        if len(self.made) > 16:
            self.made.clear()
        self.made[current] = made
        return made

    def enter(self) -> Any:  # pragma: no cover - NumPy without the context variable
        manager = user_warnings(self._node_of)
        manager.__enter__()
        return manager

    def leave(self, manager: Any) -> None:  # pragma: no cover
        manager.__exit__(None, None, None)
