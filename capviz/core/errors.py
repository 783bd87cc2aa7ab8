"""The exception tree of capviz: one base class, one subclass per thing that can go wrong.

Every error a user can meet derives from :class:`CapvizError`. Errors about a capture derive from
:class:`CaptureError`; the violations a capture records (seeding, data reads, unsupported ops)
derive from :class:`CaptureViolation` and carry the partial graph and the violation record.
"""

from __future__ import annotations

from typing import Any

import numpy as np


class CapvizError(Exception):
    """Base class of every error raised by capviz."""


# --- capture ---------------------------------------------------------------------------------


class CaptureError(CapvizError):
    """A capture could not be completed as written.

    Attributes:
        graph: the graph captured so far (also set when the capture failed), or ``None`` when the
            error happened before a graph existed.
    """

    graph: Any = None


class ShapeError(CaptureError, ValueError):
    """An op's operands do not fit its shape or dtype rule (the eager op would fail the same
    way; the message is NumPy's)."""


class IndexShapeError(ShapeError, IndexError):
    """NumPy raised an ``IndexError`` (an axis or index out of range; NumPy's ``AxisError`` is
    both): catchable as ``IndexError``, as eager NumPy's error is."""


class AxisShapeError(IndexShapeError, np.exceptions.AxisError):
    """NumPy raised its ``AxisError`` (an axis out of range): catchable as such."""


class LinAlgShapeError(ShapeError, np.linalg.LinAlgError):
    """NumPy raised ``np.linalg.LinAlgError`` (a non-square matrix to ``eig``): catchable as
    such, as eager NumPy's error is."""


class DTypeError(ShapeError, TypeError):
    """NumPy has no loop or promotion for the operands' dtypes: a ``TypeError``, as eager NumPy
    raises (``~float_tensor``, ``int_tensor << 1.5``)."""


class ScalarOverflowError(ShapeError, OverflowError):
    """A Python integer operand does not fit the tensor's dtype: an ``OverflowError``, as eager
    NumPy raises (``uint8_tensor + (-1)``)."""


class DeviceMismatchError(CaptureError):
    """Tensors of two different devices, or two capture devices, met in one op."""


class ScopeAlreadyActiveError(CaptureError):
    """A capture scope was opened on a device that already has an active scope."""


class ScopeClosedError(CaptureError):
    """A capture tensor or scope was used after its capture scope completed."""


class BoundaryError(CaptureError):
    """Base class of the boundary checks made when a capture scope exits."""


class UnknownBoundaryError(BoundaryError):
    """A boundary names a tensor this capture does not know (another scope's, or a non-tensor)."""


class DuplicateBoundaryError(BoundaryError):
    """Two inputs or two outputs share a name, or one tensor is declared an input twice."""


class UndeclaredInputError(BoundaryError):
    """The graph reads a tensor that is neither a declared input nor a constant."""


class InvalidInputError(BoundaryError):
    """A declared input is a tensor that was produced inside the graph."""


class InvalidOutputError(BoundaryError):
    """A declared output is not a tensor of this capture."""


class CaptureViolation(CaptureError):
    """Something the capture cannot represent faithfully (see ``capviz`` violations).

    Attributes:
        violation: the :class:`capviz.core.ir.Violation` record (kind, message, source, order).
        graph: the partial graph, holding the violation node.
    """

    violation: Any = None


class SeedViolationError(CaptureViolation):
    """A random generator was reseeded while a capture was active."""


class FrozenRandomError(CaptureViolation):
    """A draw from a global generator (NumPy's, Python's) inside a capture: its values would be
    frozen into the graph as a constant, the same on every replay."""


class DataReadError(CaptureViolation):
    """The value of a captured (not yet computed) tensor was read during capture."""


class UnsupportedOperationError(CaptureViolation, TypeError):
    """An operation (often a NumPy function) that capviz cannot record or run."""


class UnseededRandomWarning(UserWarning):
    """A random op was captured in a scope whose randomness has no known seed."""


class UncheckedGuardWarning(UserWarning):
    """A loaded graph was captured reading Python values from live objects (``self.training``,
    ``self.lr``: its guards), which a loaded graph cannot read: it replays as captured whatever
    they hold now. See ``capviz/core/python_guards.py``."""


class InexactResultWarning(UserWarning):
    """A replay on an inexact backend (JAX, Dask) returns integer or boolean outputs computed
    from floats that backend rounds otherwise than NumPy, or float outputs read from a step of
    such a float (a rounding, a comparison, an index): they may differ by more than any
    tolerance (an integer off by one, a boolean flipped, a float off by its step). See
    ``capviz/replay/exactness.py`` and ``capviz/replay/steps.py``."""


# --- graphs on disk ------------------------------------------------------------------------------


class GraphFormatError(CapvizError, ValueError):
    """A saved graph is corrupt, truncated, hand-edited into inconsistency, or unsafe to load."""


class GraphVerifyError(CapvizError):
    """``graph.verify()`` found an inconsistency in a graph's structure."""


# --- replay ------------------------------------------------------------------------------------


class ReplayError(CapvizError):
    """An op failed while a graph was replayed.

    Attributes:
        node: the node whose op failed (``None`` for errors before any op ran).
    """

    node: Any = None


class GuardError(ReplayError):
    """A value the captured code read differs from the value it had when captured, so the
    recorded ops are not what the code would run: a read of the inputs (``bool(t)``,
    ``int(t)``, ``len()`` of a data-dependent size: these inputs take another branch than the
    capture's examples), or a Python value read from an object that outlives the call and
    changed since (``model.training``, ``self.p``, a module's flag: checked when a replay
    starts, :mod:`capviz.core.python_guards`).

    Attributes:
        node: the guard node that failed (``None`` for a Python value).
        recorded: the value the capture read.
        got: the value now (``None`` where the place holds nothing).
        place: the Python value's place (``self.training``; ``None`` for a read of the inputs).
        source: the user's line that read the Python value (``None`` for a read of the inputs).
    """

    recorded: Any = None
    got: Any = None
    place: str | None = None
    source: Any = None


class ReplayInputError(ReplayError, ValueError):
    """Replay inputs are missing, extra, or of the wrong shape, dtype or type."""


class IncompleteGraphError(ReplayError):
    """Replay refused: the graph has error-level violations, so it cannot replay what the code
    did (pass ``allow_violations=True`` to replay it anyway).

    Attributes:
        violations: the error-level :class:`capviz.core.ir.Violation` records.
        graph: the graph.
    """

    violations: Any = ()
    graph: Any = None


class NonFiniteError(ReplayError):
    """``check_finite=True`` found the first op whose output holds NaN or Inf.

    Attributes:
        node: the first node whose output is not finite.
        inputs: the values that fed it, by operand node.
        value: the non-finite value.
        scope: the node's scope path (``""`` at the top level); the message names it.
        operands: the positions of its operands that hold NaN/Inf (empty: the op made it).
        sources: the inputs and constants upstream that held NaN/Inf, in program order.
    """

    inputs: Any = None
    value: Any = None
    scope: Any = None
    operands: Any = ()
    sources: Any = ()


class ReplayMemoryError(ReplayError, MemoryError):
    """A replay on a backend holding its results in this machine's memory (NumPy) would need
    more than the memory available; raised before anything is allocated.

    Attributes:
        peak_bytes: the peak of the replay's memory plan.
        available_bytes: the memory available when the replay was asked for.
    """

    peak_bytes: int = 0
    available_bytes: int = 0


class BackendUnavailableError(CapvizError, RuntimeError):
    """A requested backend (CuPy, a GPU) is not available on this machine."""


# --- rendering ---------------------------------------------------------------------------------


class RenderError(CapvizError, RuntimeError):
    """The Graphviz renderer failed, timed out or could not be found."""
