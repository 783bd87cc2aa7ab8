"""capviz: a Jupyter-friendly visual graph debugger for tensor programs.

Capture NumPy-style tensor code into a networkx graph without computing it, draw it (SVG, live in
Jupyter), replay it on NumPy or CuPy, and see seed violations (reseeding while capturing) in the
graph, with the fix.

Example:
    >>> import numpy as np, capviz as cv
    >>> graph = cv.capture(lambda x: np.tanh(x * 2.0), cv.spec((2, 3), "float32"))
    >>> graph.replay({"x": np.ones((2, 3), np.float32)})["out"].dtype
    dtype('float32')
"""

from __future__ import annotations

from capviz import random
from capviz.capture import (
    CaptureDevice,
    CaptureScope,
    Spec,
    constant,
    is_capturing,
    name_scope,
    spec,
)
from capviz.capture_fn import capture
from capviz.core.errors import (
    BackendUnavailableError,
    BoundaryError,
    CaptureError,
    CaptureViolation,
    CapvizError,
    DataReadError,
    DeviceMismatchError,
    DTypeError,
    DuplicateBoundaryError,
    FrozenRandomError,
    GraphFormatError,
    GraphVerifyError,
    GuardError,
    IncompleteGraphError,
    InexactResultWarning,
    InvalidInputError,
    InvalidOutputError,
    NonFiniteError,
    RenderError,
    ReplayError,
    ReplayInputError,
    ReplayMemoryError,
    ScalarOverflowError,
    ScopeAlreadyActiveError,
    ScopeClosedError,
    SeedViolationError,
    ShapeError,
    UncheckedGuardWarning,
    UndeclaredInputError,
    UnknownBoundaryError,
    UnseededRandomWarning,
    UnsupportedOperationError,
)
from capviz.core.ir import Node, Violation
from capviz.devices import Device, default_device, seed, tensor
from capviz.graph import CapturedGraph, load
from capviz.numpy_api import supported_functions
from capviz.render.live import live
from capviz.replay.plan import MemoryPlan
from capviz.replay.run import CompiledReplay, Executor
from capviz.trace.tensor import Tensor

__version__ = "0.1.0"

__all__ = [
    "BackendUnavailableError",
    "BoundaryError",
    "CaptureDevice",
    "CaptureError",
    "CaptureScope",
    "CaptureViolation",
    "CapturedGraph",
    "CapvizError",
    "CompiledReplay",
    "DTypeError",
    "DataReadError",
    "Device",
    "DeviceMismatchError",
    "DuplicateBoundaryError",
    "Executor",
    "FrozenRandomError",
    "GraphFormatError",
    "GraphVerifyError",
    "GuardError",
    "IncompleteGraphError",
    "InexactResultWarning",
    "InvalidInputError",
    "InvalidOutputError",
    "MemoryPlan",
    "Node",
    "NonFiniteError",
    "RenderError",
    "ReplayError",
    "ReplayInputError",
    "ReplayMemoryError",
    "ScalarOverflowError",
    "ScopeAlreadyActiveError",
    "ScopeClosedError",
    "SeedViolationError",
    "ShapeError",
    "Spec",
    "Tensor",
    "UncheckedGuardWarning",
    "UndeclaredInputError",
    "UnknownBoundaryError",
    "UnseededRandomWarning",
    "UnsupportedOperationError",
    "Violation",
    "capture",
    "constant",
    "default_device",
    "is_capturing",
    "live",
    "load",
    "name_scope",
    "random",
    "seed",
    "spec",
    "supported_functions",
    "tensor",
]
