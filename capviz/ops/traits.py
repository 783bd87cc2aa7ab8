"""Engine-neutral traits of the ops: what each op does to its operands' elements and axes.

The op table (:mod:`capviz.ops.table` and the families) says what an op computes; these sets
say how it treats its operands, in words every engine can map to a rule of its own: the Dask
engine reads them for its chunking rules (:data:`capviz.backends.dask.rules.RULES`), the JAX
engine for its accumulators and index dtypes. An op added to the table gets its traits here,
beside the table, not in a name list inside each engine (as tinygrad's ``GroupOp`` sets sit
beside its ``Ops``). Every ufunc of the table (:data:`capviz.ops.elementwise.UFUNCS`) is elementwise
without being listed.
"""

from __future__ import annotations

ELEMENTWISE = {  # besides every ufunc: one result element per operand element
    "scalar_power", "scalar_multiply", "scalar_absolute", "astype", "round", "where", "clip",
    "zeros_like", "ones_like", "full_like",
    "copy", "angle", "real", "imag", "i0", "sinc", "fix", "isneginf", "isposinf", "isreal",
    "iscomplex", "nan_to_num", "isclose", "choose", "select", "python_number",
}
"""Ops with one result element per operand element, besides the ufuncs."""
AXIS = {  # op -> the axis of NumPy's signature when the node has none
    "sort": -1, "argsort": -1, "partition": -1, "argpartition": -1, "sort_complex": -1,
    "cumsum": None, "cumprod": None, "nancumsum": None, "nancumprod": None,
    "cumulative_sum": None, "cumulative_prod": None, "diff": -1, "unwrap": -1,
    "median": None, "nanmedian": None, "percentile": None, "quantile": None,
    "nanpercentile": None, "nanquantile": None, "ptp": None, "count_nonzero": None,
    "nanargmax": None, "nanargmin": None, "linalg.vector_norm": None, "average": None,
    "trapezoid": -1,
    "ufunc_reduce": 0, "ufunc_accumulate": 0,  # np.<ufunc>.reduce/accumulate: NumPy per block
}
"""Ops that work along one axis (the default axis of NumPy's signature by op)."""
MOVE = {
    "reshape", "transpose", "swapaxes", "expand_dims", "squeeze", "broadcast_to", "tril",
    "triu", "getitem", "concatenate", "stack", "hstack", "vstack", "dstack", "column_stack",
    "moveaxis", "rollaxis", "ravel", "flip", "fliplr", "flipud", "rot90", "roll", "tile",
    "repeat", "atleast_1d", "atleast_2d", "atleast_3d", "broadcast_arrays", "meshgrid",
    "diagonal", "outer", "matrix_transpose", "linalg.matrix_transpose", "linalg.outer",
    "ufunc_outer",  # dask.array's ufunc.outer: NumPy's ufunc per pair of blocks
}
"""Ops that move elements without computing new ones (reshapes, joins, flips...)."""
SELECT = {"max", "min", "any", "all", "argmax", "argmin", "nanmax", "nanmin"}
"""Reductions that pick an element (order-free: any order of blocks gives NumPy's bits)."""
REDUCE = {"sum", "prod", "mean", "var", "std", "nansum", "nanprod", "nanmean", "nanvar",
           "nanstd", "trace"}
"""Reductions that compute (sums, means...: the order of additions matters for floats)."""
CONTRACT = {"matmul", "dot", "tensordot", "linalg.tensordot", "einsum", "vdot"}
"""Products that contract an axis."""
GATHER = {"index", "take"}
"""Ops that gather elements by an index operand."""
SPLIT = {"split", "array_split", "hsplit", "vsplit", "dsplit", "unstack"}
"""Ops with several results, pieces of one operand."""
RANDOM = {"random_uniform", "random_normal", "random_bernoulli"}
"""The random ops (values from the counter-based generator, :mod:`capviz.ops.random`)."""
WHOLE = {
    "append", "insert", "insert_indices", "delete", "resize", "compress", "pad", "diag", "diagflat",
    "linalg.diagonal", "lib.stride_tricks.sliding_window_view", "take_along_axis", "put",
    "put_along_axis", "setitem", "index_put", "ufunc_at", "view", "convolve",
    "correlate", "cross", "linalg.cross", "kron", "inner", "vecdot", "linalg.vecdot", "matvec",
    "vecmat", "linalg.multi_dot", "linalg.matrix_power", "cov", "corrcoef", "polyadd",
    "polyint", "polymul", "polysub", "polyval", "interp", "histogram", "histogram2d",
    "histogram_bin_edges", "digitize", "isin", "searchsorted", "lexsort", "packbits",
    "unpackbits", "ix_", "unravel_index", "ravel_multi_index", "vander", "geomspace",
    "linspace", "logspace", "linalg.trace", "block", "ediff1d", "gradient", "histogramdd",
    "poly", "polyder", "polyfit", "fill_diagonal", "putmask",
    "advanced_index", "advanced_index_put",  # x[i, j]: several index arrays, one gather
    "create",  # np.zeros((n, h)) made inside a capture: NumPy's function, one block
    "draw",  # a live generator's draw: a graph with one is refused by name before (a state)
    "advanced_ufunc_at",  # np.add.at(x, (i, j), v), np.add.at(x, slice(1, 3), v)
    # np.sum/prod/mean/max/min with where= or initial=: NumPy adds a masked sum run by run of
    # its mask (ops/reductions.py), which no per-block rule repeats: NumPy's own call, one block
    "sum_where", "prod_where", "mean_where", "max_where", "min_where",
}
"""Ops that need each operand whole (one block): no per-block rule gives NumPy's bits."""
WHOLE_PREFIXES = ("linalg.", "fft.", "emath.")  # emath: a block's dtype may follow its values
"""Op-name prefixes of the families that run on whole operands (linalg, fft, emath)."""

DATA_SIZE = {"mask_select", "mask_put", "nonzero", "flatnonzero", "argwhere", "unique",
             "compress_data", "extract"}
"""Ops whose result length depends on the values (``ops/data_sizes.py``), or that write back
through a mask as many rows as it selects: an engine without static shapes for them runs
NumPy on the whole operands, with the result's length unknown until computed."""

FLOATS_INSIDE = frozenset(("linalg.matrix_rank", "histogram", "histogram2d", "histogramdd",
                           "histogram_bin_edges", "linalg.cond", "linalg.slogdet"))
"""Ops that compute in floats whatever their operands' and results' dtypes (the rank of an
integer matrix from its singular values; histogram counts from float bin edges): an inexact
backend may give another integer result from exact operands."""

INDEX_RESULTS = frozenset(("searchsorted", "digitize", "argwhere", "nonzero", "flatnonzero",
                           "count_nonzero"))
"""Ops whose integer results are indices or counts: jax gives them as int32, NumPy as intp;
the widening cast is exact."""


ACCUMULATES = frozenset(("sum", "prod", "sum_where", "prod_where", "mean_where",
                         "nansum", "nanprod", "cumsum", "cumprod", "nancumsum",
                         "nancumprod", "trace", "mean", "nanmean", "average", "var", "nanvar",
                         "std", "nanstd", "median", "nanmedian"))
"""Reductions NumPy computes on integer or boolean operands in a wider accumulator: ``int64``
(``uint64``) sums and products, ``float64`` means, variances and medians. jax.numpy keeps the
operand's type (``cumsum`` of int8) or takes float32 (``mean`` of int32), so the operand is cast
to NumPy's result dtype first, as NumPy's own loops cast each element."""


def whole(name: str) -> bool:
    """Whether the op ``name`` needs its operands whole (one block each)."""
    return name in WHOLE or name.startswith(WHOLE_PREFIXES)


TREATMENTS = (("elementwise", ELEMENTWISE), ("axis", AXIS), ("move", MOVE),
              ("select", SELECT), ("reduce", REDUCE), ("contract", CONTRACT),
              ("gather", GATHER), ("split", SPLIT), ("random", RANDOM), ("sized", DATA_SIZE))
"""Each trait's word and its ops, in the order an op is looked up (its first trait counts)."""

ORDER_DEPENDENT = frozenset(("reduce", "contract"))
"""The treatments whose float results depend on the order of additions (an engine that adds
in another order agrees within its tolerance, not bit for bit)."""


def treatment(name: str) -> str | None:
    """The trait word of the op ``name`` (``"reduce"``, ``"whole"``...; a ufunc's is
    ``"elementwise"`` without being listed, which the caller knows), or ``None``: the op has no
    traits."""
    for word, names in TREATMENTS:
        if name in names:
            return word
    return "whole" if whole(name) else None
