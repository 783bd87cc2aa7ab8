"""Replay backends: one object per engine, registered by name (the seam).

A backend answers these questions, and nothing outside its module names it:

* which array namespace the op table binds to (:meth:`Backend.namespace`; loaded on first use,
  :class:`~capviz.core.errors.BackendUnavailableError` naming the pip extra otherwise);
* how values move: :meth:`Backend.from_host` (a NumPy array or constant onto the backend),
  :meth:`Backend.to_host` (a result back to a NumPy array), :meth:`Backend.is_native` (an input
  that is already the backend's own array, such as a CuPy or Dask array);
* what it cannot do: :meth:`Backend.bind` refuses an op by name with the reason at bind time,
  and ``mutable = False`` says its arrays take no ``out=`` and no in-place write (the memory
  plan is then off, and an op that writes is bound to its functional form);
* how a compiled program runs: :meth:`Backend.execute` (NumPy and CuPy run the step table;
  Dask builds one lazy expression from it; JAX traces it once under ``jax.jit``);
* how exact it is: ``exact`` (bit-equal to the NumPy replay) or the ``tolerance`` it is held
  to, per dtype through :meth:`Backend.tolerance_for` (``tests/test_backend_contract.py``
  checks it on every op);
* where random bits come from: :meth:`Backend.random_bits` (Philox4x64-10 words, the same on
  every backend; the default runs :func:`capviz.ops.random.philox_raw` on the namespace) and
  :meth:`Backend.random_u32`;
* whether results live in this machine's memory (``host_memory``): a replay is then refused
  before it allocates when its memory plan exceeds the memory available.

``backend="auto"`` means CuPy when a GPU is usable, else NumPy (:func:`resolve`). Values of any
loaded backend go to the host through :func:`host_array` (diagnostics, the view's statistics).
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from capviz.core.errors import BackendUnavailableError, ReplayError, UnsupportedOperationError
from capviz.core.source import format_source
from capviz.ops.random import philox_raw, split_u32


class Backend:
    """One replay engine. Subclass it in a module of ``capviz/backends/`` and :func:`register`
    an instance; see ``docs/architecture.md``, "Writing a backend".

    Attributes:
        name: the name users pass as ``backend=``.
        extra: the pip extra that installs the engine (``None``: always installed).
        mutable: arrays accept ``out=`` and in-place writes (the memory plan applies).
        exact: replays equal NumPy's bit for bit, random ops included.
        tolerance: ``(rtol, atol)`` its results are held to when not ``exact``.
        options: the keyword options ``graph.replay(..., **options)`` accepts for it.
        eager: an eager :class:`capviz.Device` can run on it (``cv.Device(name)``): ops run
            one at a time on concrete, mutable arrays. A backend that is not eager is
            replay-only (Dask, JAX).
        host_memory: results are held in this machine's memory, so a replay whose
            :meth:`capviz.CapturedGraph.memory_plan` peak exceeds the memory available is
            refused before anything is allocated (:class:`capviz.ReplayMemoryError`).
        rounds: for an inexact backend, the ops whose float results it may round otherwise
            than NumPy (``None``: every op that computes a float); what an integer or boolean
            computed from them is exact from (:mod:`capviz.replay.exactness`).
    """

    name: str = ""
    extra: str | None = None
    mutable: bool = True
    exact: bool = True
    tolerance: tuple[float, float] = (0.0, 0.0)
    options: frozenset[str] = frozenset()
    host_memory: bool = False
    eager: bool = False
    rounds: frozenset[str] | None = None
    own_arithmetic_option: str = ""
    """The replay option that runs the nodes of :meth:`own_arithmetic` with the engine's own
    arithmetic (JAX: ``arithmetic='xla'``)."""

    def tolerance_for(self, dtype: Any) -> tuple[float, float]:
        """The ``(rtol, atol)`` results of ``dtype`` are held to (default: :attr:`tolerance`).

        Integers and booleans: ``(0.0, 0.0)``, exact, for a value computed from exact values.
        One computed from floats an inexact backend rounds otherwise is not held to any
        tolerance (an integer off by one, a flipped boolean): exactness is a property of the
        node, :func:`capviz.replay.exactness.inexact_nodes`. A backend whose error grows as
        precision shrinks (float16 sums added in another order) overrides it for those dtypes;
        ``compare`` and the contract tests use it per value.
        """
        if np.dtype(dtype).kind in "biu":
            return (0.0, 0.0)
        return self.tolerance

    def namespace(self) -> Any:
        """The array namespace ops are bound to (imported on first use).

        Raises:
            BackendUnavailableError: the engine is not installed or cannot run here; the
                message names the extra that installs it.
        """
        raise NotImplementedError

    def available(self) -> bool:
        """True when :meth:`namespace` would succeed."""
        try:
            self.namespace()
        except BackendUnavailableError:
            return False
        return True

    def from_host(self, value: np.ndarray) -> Any:
        """``value`` (a NumPy array) as an array of this backend."""
        return self.namespace().asarray(value)

    def to_host(self, value: Any) -> np.ndarray:
        """A result of this backend as a NumPy array."""
        return np.asarray(value)

    def is_native(self, value: Any) -> bool:
        """True when ``value`` is already an array of this backend (not a NumPy array)."""
        return False

    def input_problem(self, value: Any) -> str | None:
        """Why ``value``, an array of this backend (:meth:`is_native`), cannot be an input of a
        replay, with the fix; ``None`` when it can."""
        return None

    @property
    def array_type(self) -> type | None:
        """The exact type of this backend's arrays when it has one (``np.ndarray``): the
        replay's input check tests it before calling :meth:`is_native`. ``None``: ask
        :meth:`is_native` only."""
        return None

    def bind(self, op: Any) -> Callable:
        """The callable that runs ``op`` (an :class:`capviz.ops.table.Op`) on this backend.

        A random op's callable is given this backend as its bit ``source`` (it draws with
        :meth:`random_bits` and :meth:`random_u32`).

        Raises:
            UnsupportedOperationError: naming the op and why this backend cannot run it.
        """
        fn = op.bind(self.namespace())
        if op.random:
            return functools.partial(fn, source=self)
        return fn

    def random_bits(self, seed: int, draw: int, n: int, start: int = 0) -> Any:
        """Words ``start .. start + n`` (uint64, on this backend) of the Philox4x64-10 stream
        keyed by ``(seed, draw)``: equal, bit for bit, to NumPy's
        ``np.random.Philox(key=[seed, draw]).random_raw(start + n)[start:]``."""
        return philox_raw(self.namespace(), seed, draw, n, start)

    def random_u32(self, seed: int, draw: int, n: int) -> Any:
        """``n`` uint32 words: each word of :meth:`random_bits` gives its low half, then its
        high half."""
        return split_u32(self.namespace(), self.random_bits(seed, draw, (n + 1) // 2), n)

    def own_arithmetic(self, node: Any) -> str | None:
        """Why this backend's own arithmetic may give ``node`` (an op node) another value than
        NumPy's, beyond its tolerance, with no run-time check to see it; ``None`` when it does
        not. A replay on the backend refuses such a node by name unless it is told to take the
        engine's arithmetic (JAX: ``arithmetic="xla"``); ``compare`` names it."""
        return None

    def admit(self, program: Any, options: Mapping[str, Any]) -> None:
        """Refuse, when a replay is bound and before anything runs, a compiled program this
        backend cannot run as NumPy does with these options (default: none is refused).

        Raises:
            UnsupportedOperationError: naming the node, the user's line and the option that
                would run it.
        """

    def execute(self, program: Any, args: list | tuple, seed: int, options: Mapping[str, Any]
                ) -> tuple:
        """Run a compiled :class:`capviz.replay.program.Program` on checked ``args`` (arrays
        of this backend, in graph input order); return the outputs in graph output order."""
        return program(args, seed)

    def __repr__(self) -> str:
        return f"<capviz backend {self.name!r}>"


_REGISTRY: dict[str, Backend] = {}
_LAZY: dict[str, str] = {}  # name -> module that registers it when imported


def register(backend: Backend) -> Backend:
    """Make ``backend`` available as ``backend=backend.name``; returns it."""
    _REGISTRY[backend.name] = backend
    return backend


def register_lazy(name: str, module: str) -> None:
    """Say that importing ``module`` registers the backend ``name`` (imported on first use,
    so that ``import capviz`` never imports an engine)."""
    _LAZY[name] = module


def names() -> list[str]:
    """Every backend name, ``auto`` first."""
    return ["auto", *sorted(set(_REGISTRY) | set(_LAZY))]


def get(name: str) -> Backend:
    """The backend registered as ``name`` (``auto``: see :func:`resolve`).

    Raises:
        ValueError: no backend has that name (the message lists the names).
    """
    backend = _REGISTRY.get(name)
    if backend is not None:
        return backend
    if name == "auto":
        return resolve()
    if name in _LAZY:
        _import_backend(name)
        backend = _REGISTRY.get(name)
    if backend is None:
        known = ", ".join(map(repr, names()))
        raise ValueError(f"unknown backend {name!r}; expected one of {known}")
    return backend


_EAGER_BUILTINS = ("numpy", "cupy")
"""The built-in engines whose modules import no engine (CuPy's asks for ``cupy`` only when
used): loaded whenever the registry is asked about every loaded backend or an array's owner."""


def _load_eager() -> None:
    for name in _EAGER_BUILTINS:
        if name not in _REGISTRY:
            _import_backend(name)


def _import_backend(name: str) -> None:
    """Import the module that registers ``name``. Its engine missing (``import dask`` failing
    inside it) is a :class:`BackendUnavailableError` naming the pip extra."""
    if name not in _EAGER_BUILTINS:
        _load_eager()  # the host's and CuPy's first, so loaded() keeps the built-ins' order
    module = _LAZY[name]
    try:
        importlib.import_module(module)
    except ImportError as err:
        if err.name is not None and (err.name == module or module.startswith(err.name + ".")):
            raise  # the backend's own module is missing: a bug, not a missing engine
        raise BackendUnavailableError(
            f"the {name} backend needs {err.name or 'a package'}, which is not installed "
            f"({err}); {install_hint(name)}") from None


def install_hint(name: str) -> str:
    """How to install the engine of backend ``name``: its extra (``Backend.extra``; a lazy
    backend's is its name), from the capviz checkout (capviz is not installed from PyPI)."""
    backend = _REGISTRY.get(name)
    extra = backend.extra if backend is not None and backend.extra else name
    return f"install the extra from the capviz checkout with: pip install '.[{extra}]'"


def host() -> Backend:
    """The backend whose arrays are host NumPy arrays: the reference every other backend is
    compared with (eager code runs on it in :func:`capviz.compare`)."""
    return _REGISTRY.get("numpy") or get("numpy")


def eager_names() -> list[str]:
    """Names of the backends an eager :class:`capviz.Device` can run on (``eager``), the
    host's first."""
    _load_eager()
    eager = sorted(name for name, backend in _REGISTRY.items() if backend.eager)
    return sorted(eager, key=lambda name: _REGISTRY[name] is not host())


def loaded() -> list[Backend]:
    """The backends registered so far (a lazy engine's only once something imported it)."""
    _load_eager()
    return list(_REGISTRY.values())


def owner(value: Any) -> Backend | None:
    """The loaded backend, other than the host's (:func:`host`), whose own array ``value`` is:
    a CuPy, Dask or JAX array. ``None`` for NumPy arrays and anything no backend claims."""
    _load_eager()
    host_backend = _REGISTRY["numpy"]
    for backend in _REGISTRY.values():
        if backend is not host_backend and backend.is_native(value):
            return backend
    return None


def host_array(value: Any) -> np.ndarray:
    """``value`` as a NumPy array: a loaded backend's array through its :meth:`Backend.to_host`
    (a CuPy array is copied from the GPU), anything else through ``np.asarray``."""
    backend = owner(value)
    if backend is not None:
        return backend.to_host(value)
    return np.asarray(value)


def resolve() -> Backend:
    """``backend="auto"``: CuPy when it is installed and a GPU is usable, else NumPy."""
    gpu = get("cupy")
    return gpu if gpu.available() else get("numpy")


def check_options(backend: Backend, options: Mapping[str, Any]) -> None:
    """Refuse a replay option ``backend`` does not take.

    Raises:
        TypeError: naming the option and the ones the backend accepts.
    """
    unknown = sorted(set(options) - backend.options)
    if unknown:
        accepted = ", ".join(sorted(backend.options)) or "none"
        raise TypeError(f"the {backend.name} backend takes no option {unknown[0]!r} "
                        f"(its options: {accepted})")


def unsupported(backend: Backend, op_name: str, reason: str) -> UnsupportedOperationError:
    """The error :meth:`Backend.bind` raises for an op the backend cannot run."""
    return UnsupportedOperationError(
        f"op {op_name!r} cannot run on the {backend.name} backend: {reason}")


for _name in ("numpy", "cupy", "dask", "jax"):  # by name: no import of an engine's module here
    register_lazy(_name, f"capviz.backends.{_name}")


def type_text(shape: Any, dtype: Any) -> str:
    """``float32[2,3]``: a value's dtype and shape as errors and the listing write them."""
    return f"{np.dtype(dtype)}[{','.join(map(str, shape))}]"


def replay_error(node: Any, args: Sequence[Any], err: BaseException) -> ReplayError:
    """The :class:`ReplayError` for ``err`` raised by ``node``: its op, the types of ``args``
    (its operands' values, or its operand nodes where no value exists, as in an engine whose
    task failed while computing) and the user's line. Every engine raises this one."""
    shapes = ", ".join(type_text(a.shape, a.dtype) if hasattr(a, "dtype")
                       and getattr(a, "shape", None) is not None
                       else f"{len(a)} results" if isinstance(a, (list, tuple)) else repr(a)
                       for a in args if not (hasattr(a, "dtype") and hasattr(a, "shape")
                                             and a.shape is None))
    where = format_source(node.source) or "unknown source"
    error = ReplayError(f"replay failed at node %{node.index} ({node.op}) of "
                        f"{shapes or 'no args'}, recorded at {where}: {type(err).__name__}: {err}")
    error.node = node
    return error
