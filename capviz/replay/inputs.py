"""A replay's inputs: checked against the graph's (names, shapes, dtypes, array kinds, memory
layout, aliasing) with errors naming the input, expected and got; the seed; the outputs by name."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from capviz.backends import registry
from capviz.backends.host import subclass_fix, type_name
from capviz.backends.registry import Backend, type_text
from capviz.core.errors import ReplayInputError
from capviz.core.ir import Graph, Node
from capviz.core.source import format_source
from capviz.ops.random import check_seed, fresh_seed
from capviz.replay.aliases import AliasCheck
from capviz.replay.program import picker

# --- backends and inputs ------------------------------------------------------------------------


def backend_of(backend: str | Backend) -> Backend:
    """The :class:`Backend` for a name (``auto``: CuPy when it is usable, else NumPy)."""
    return backend if isinstance(backend, Backend) else registry.get(backend)


def check_inputs(graph: Graph, inputs: Mapping[str, Any] | None,
                 backend: Backend) -> list[Any]:
    """Validate replay inputs; return them as arrays of ``backend`` in graph input order.

    An input is a NumPy array (moved with ``backend.from_host``), an array of ``backend``
    itself, or an eager tensor. The messages are the same on every backend.
    """
    inputs = dict(inputs or {})
    for node in graph.input_nodes:
        if node.name is None:
            raise ReplayInputError(f"the graph reads an undeclared input %{node.index} "
                                   f"(first used at {format_source(node.source)}); only a "
                                   "complete graph can be replayed")
    names = graph.inputs
    missing = [n for n in names if n not in inputs]
    if missing:
        node = graph.node(missing[0])
        raise ReplayInputError(f"missing input {missing[0]!r}: expected "
                               f"{type_text(node.shape, node.dtype)} (the graph's inputs are "
                               f"{', '.join(names)})")
    extra = sorted(set(inputs) - set(names))
    if extra:
        raise ReplayInputError(f"unexpected input {extra[0]!r}: the graph's inputs are "
                               f"{', '.join(names) or '(none)'}")
    out, host = [], []
    for node in graph.input_nodes:
        value = inputs[node.name]
        # a capviz.Tensor: a special method, looked up on the type as Python does, so that an
        # object answering any attribute (__getattr__) is not taken for one
        eager_value = getattr(type(value), "__capviz_value__", None)
        if eager_value is not None:
            value = eager_value(value)
            if value is None:
                raise ReplayInputError(f"input {node.name!r} is a capture tensor, which has no "
                                       "value; pass an array "
                                       f"{type_text(node.shape, node.dtype)}")
        value = _scalar_input(node, value)
        native = backend.is_native(value)
        if not native:
            foreign = registry.owner(value)
            if foreign is not None:
                raise ReplayInputError(
                    f"input {node.name!r} is an array of the {foreign.name} backend "
                    f"({type_name(value)}) but the replay runs on {backend.name}; pass a NumPy "
                    f"array or replay with backend={foreign.name!r}")
            if not isinstance(value, np.ndarray):
                raise ReplayInputError(f"input {node.name!r} must be an array "
                                       f"{type_text(node.shape, node.dtype)}, got "
                                       f"{type(value).__name__} (wrap it with np.asarray first)")
            _check_array_type(node, value)
        problem = backend.input_problem(value) if native else None
        if problem is not None:
            raise ReplayInputError(f"input {node.name!r}: {problem}")
        got_shape, got_dtype = tuple(value.shape), np.dtype(value.dtype)
        if got_shape != node.shape or got_dtype != node.dtype:
            raise ReplayInputError(f"input {node.name!r}: expected "
                                   f"{type_text(node.shape, node.dtype)}, got "
                                   f"{type_text(got_shape, got_dtype)}")
        flags = getattr(value, "flags", None)  # arrays without a layout (Dask, JAX) have none
        if node.params.get("layout") == "C" and flags is not None and not flags.c_contiguous:
            raise ReplayInputError(
                f"input {node.name!r}: expected a C-contiguous array (the layout it was "
                "captured with), got a non-C-contiguous one (Fortran-ordered, transposed or "
                "strided): the graph writes into this input, or into a reshape or ravel whose "
                "view-or-copy answer in NumPy depends on its layout, or views it as a dtype of "
                "another size (NumPy's view needs a contiguous last axis), and eager NumPy would "
                f"compute otherwise for another layout. Pass np.ascontiguousarray({node.name})")
        host.append(value)
        out.append(value if native else backend.from_host(value))
    AliasCheck(graph).check(host)
    return out


def _scalar_input(node: Node, value: Any) -> Any:
    """A NumPy scalar for an input captured with a NumPy scalar example, as a 0-d array (its
    scalar math was recorded: ``scalar_power``...); either kind given for the other is refused,
    as NumPy computes on scalars otherwise than on 0-d arrays."""
    scalar = "scalar" in node.params
    if isinstance(value, np.generic) and scalar:
        return np.asarray(value)
    kind = type_text(node.shape, node.dtype)
    if isinstance(value, np.generic):
        raise ReplayInputError(
            f"input {node.name!r} was captured as a 0-d array {kind} and got a NumPy scalar "
            f"numpy.{type(value).__name__}, on which NumPy computes otherwise (a scalar's own "
            "*, ** and abs() round otherwise than the array loops; += rebinds it): pass "
            f"np.asarray({node.name}), or capture with a NumPy scalar example "
            f"(scope.input({node.name!r}, np.{node.dtype.name}(0))) to replay scalar math")
    if scalar and isinstance(value, np.ndarray) and value.ndim == 0:
        raise ReplayInputError(
            f"input {node.name!r} was captured as a NumPy scalar numpy.{node.dtype.name} and got "
            "a 0-d array, on which NumPy computes otherwise (a scalar's own *, ** and abs() "
            f"round otherwise than the array loops): pass {node.name}[()], the scalar")
    return value


def _check_array_type(node: Node, value: Any) -> None:
    """Refuse an ndarray subclass other than ``np.memmap`` (``np.matrix``, a masked array...):
    it may compute otherwise than the plain arrays the graph was captured for."""
    fix = subclass_fix(value)
    if fix is not None:
        raise ReplayInputError(f"input {node.name!r}: expected a numpy.ndarray "
                               f"{type_text(node.shape, node.dtype)}, got {type_name(value)} "
                               f"(replay computes on plain arrays, and {fix})")


def resolve_seed(graph: Graph, seed: int | None) -> int:
    """The seed random ops use: ``seed``, else the graph's, else fresh entropy."""
    if seed is not None:
        return check_seed(seed)
    return graph.rng_seed if graph.rng_seed is not None else fresh_seed()


class ReplayResult(dict):
    """Outputs by name; ``backend`` is the name of the backend the replay ran on."""

    __slots__ = ("backend", "states")


def result(names: Any, values: Any, backend: Backend, to_numpy: bool) -> ReplayResult:
    out = ReplayResult(zip(names, values))
    out.backend = backend.name
    out.states = {}
    if to_numpy:
        to_host = backend.to_host
        for name, value in out.items():
            out[name] = to_host(value)
    return out


class InputCheck:
    """The graph's input shapes and dtypes as tuples, to check positional inputs fast; anything
    but an array of the backend with exactly the right type goes through :func:`check_inputs`
    for its error (or its conversion: eager tensors, NumPy scalars, host arrays)."""

    def __init__(self, graph: Graph, backend: Backend) -> None:
        self.backend = backend  # no reference to the graph: the graph holds its input checks
        self.names = tuple(graph.inputs)
        self.types = tuple((n.shape, n.dtype) for n in graph.input_nodes)
        # an array of an immutable backend has no memory layout to check
        self.c_only = tuple(backend.mutable and n.params.get("layout") == "C"
                            for n in graph.input_nodes)
        self.native = backend.is_native
        self.array_type = backend.array_type  # checked first: no call for the common case
        self._pick = picker(self.names) if self.names else None
        # an input captured as a NumPy scalar refuses a 0-d array: checked by check_inputs
        self.scalars = any("scalar" in n.params for n in graph.input_nodes)
        aliases = AliasCheck(graph)  # only a graph writing into an input has a check to make
        self.aliases = aliases if aliases.written else None

    def positional(self, graph: Graph, args: tuple) -> Any:
        """``args`` in input order, checked (a tuple, or a list after conversion)."""
        if len(args) == len(self.types) and not self.scalars:
            native, array_type = self.native, self.array_type
            for value, (shape, dtype), c_only in zip(args, self.types, self.c_only):
                if (type(value) is not array_type and not native(value)) \
                        or value.shape != shape \
                        or (value.dtype is not dtype and value.dtype != dtype) \
                        or (c_only and not value.flags.c_contiguous):
                    break
            else:
                if self.aliases is not None:
                    self.aliases.check(args)
                return args
        if len(args) != len(self.types):
            raise ReplayInputError(f"expected {len(self.types)} inputs "
                                   f"({', '.join(self.names) or 'none'}), got {len(args)}")
        return check_inputs(graph, dict(zip(self.names, args)), self.backend)

    def named(self, graph: Graph, inputs: Mapping[str, Any] | None) -> Any:
        """``inputs`` (by name) in input order, checked."""
        if self._pick is not None and inputs is not None and len(inputs) == len(self.names):
            try:
                args = self._pick(inputs)
            except (KeyError, TypeError):
                pass
            else:
                return self.positional(graph, args)
        return check_inputs(graph, inputs, self.backend)


