"""The op definitions for NumPy functions, one module per family; importing this package
registers them all into :data:`capviz.ops.OPS` (see :mod:`capviz.oplib.base`)."""

from capviz.oplib import (
    advanced_index,
    arrays,
    emath,
    fft,
    gradient,
    histograms,
    indices,
    linalg,
    numeric,
    pointwise,
    polynomials,
    products,
    reductions,
    ufunc_methods,
)
from capviz.oplib.base import SPECS, FunctionSpec

__all__ = ["SPECS", "FunctionSpec", "advanced_index", "arrays", "emath", "fft", "gradient",
           "histograms", "indices", "linalg", "numeric", "pointwise", "polynomials", "products",
           "reductions", "ufunc_methods"]
