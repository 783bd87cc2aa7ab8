"""What capture does with every dispatchable NumPy function, ufunc and ndarray attribute.

The source of ``docs/numpy-coverage.md`` (written by ``docs/gen_coverage.py``; a test fails when
the page is stale) and of tests/test_numpy_coverage.py's list of functions to check. Statuses:

* ``captured``: recorded as an op, replayed bit for bit;
* ``answered``: computed at capture time from shapes and dtypes (``np.shape``, ``np.einsum_path``);
* ``data read``: needs the values (a ``data_read`` violation while capturing);
* ``refused``: :class:`capviz.UnsupportedOperationError` naming the function and the
  alternative.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.lib.stride_tricks

from capviz import ops
from capviz.backends import contraction_bound
from capviz.backends.jax import cancellation, variances
from capviz.backends.jax.ops import UNSUPPORTED as JAX_REFUSED
from capviz.backends.jax.subnormals import DECLARED as JAX_UNCHECKED
from capviz.backends.jax.subnormals.complex_parts import complex_treatment
from capviz.backends.jax.subnormals.lowered import COVERAGE as JAX_LOWERED
from capviz.numpy_api import methods, reads
from capviz.ops import SPECS, creation, traits
from capviz.ops.reductions import MASKED
from capviz.trace.dispatch import HANDLED, function_name, refusal
from capviz.trace.tensor import Tensor

NAMESPACES = {"np": np, "np.linalg": np.linalg, "np.fft": np.fft,
              "np.lib.stride_tricks": numpy.lib.stride_tricks, "np.emath": np.emath}
"""The NumPy namespaces whose public functions are listed."""

_DISPATCHER = type(np.concatenate)


@dataclass(frozen=True)
class Entry:
    """One row of the coverage table."""

    name: str
    status: str
    detail: str


def dispatchable() -> dict[str, Callable]:
    """Every public function of :data:`NAMESPACES` that dispatches through
    ``__array_function__``, by the name a user writes (aliases included)."""
    found = {}
    for prefix, module in NAMESPACES.items():
        for attr in sorted(dir(module)):
            func = getattr(module, attr)
            if not attr.startswith("_") and isinstance(func, _DISPATCHER):
                found[f"{prefix}.{attr}"] = func
    return found


def function_entry(name: str, func: Callable) -> Entry:
    """The status of one NumPy function."""
    handler = HANDLED.get(func)
    canonical = function_name(func)
    alias = f"alias of {canonical}; " if canonical != name else ""
    if handler is None:
        return Entry(name, "refused", alias + refusal(canonical))
    if func in reads.DATA_READS:
        return Entry(name, "data read", alias + "reads the values")
    if func in reads.FROM_METADATA or name in ("np.shape", "np.ndim", "np.size",
                                               "np.result_type"):
        return Entry(name, "answered", alias + "from shapes and dtypes")
    return Entry(name, "captured", "; ".join(filter(None, [alias.rstrip("; "),
                                                           _limits(canonical)])))


_MASKED_NOTES = {
    "sum": "where=, initial=: recorded as sum_where (JAX: checked as np.sum, a masked one held "
           "to n roundings, as NumPy adds it run by run; Dask: NumPy's call on one block)",
    "mean": "where=: recorded as mean_where (JAX: checked as np.mean, held to n roundings, as "
            "NumPy adds it run by run; Dask: NumPy's call on one block)",
    "prod": "where=, initial=: recorded as prod_where (JAX: checked as np.prod; Dask: NumPy's "
            "call on one block)",
    "max": "where=, initial=: recorded as max_where (JAX: exact; Dask: NumPy's call on one "
           "block)",
    "min": "where=, initial=: recorded as min_where (JAX: exact; Dask: NumPy's call on one "
           "block)",
}
"""The coverage table's note of each reduction with ``where=``/``initial=`` forms
(:data:`capviz.ops.reductions.MASKED`)."""


def _limits(name: str) -> str:
    """What a captured function still refuses by name: its spec's refused arguments and
    values, and the operands its ``refuse_if`` rule names (the rule's docstring); for the
    reductions with ``where=``/``initial=`` forms, the op those are recorded as."""
    plain = {"amax": "max", "amin": "min"}.get(name.removeprefix("np."),
                                               name.removeprefix("np."))
    if plain in MASKED:
        return _MASKED_NOTES[plain]
    spec = SPECS.get(name.removeprefix("np."))
    if spec is None:
        return ""
    parts = [f"{k}=" for k in spec.refuse]
    parts += [f"{k}={v!r}" for k, values in spec.refuse_values.items() for v in values]
    if parts:
        parts = [f"refuses {', '.join(parts)}"]
    if spec.refuse_if is not None and spec.refuse_if.__doc__:
        parts.append(" ".join(spec.refuse_if.__doc__.split("\n\n")[0].split()))
    return "; ".join(parts)


def functions() -> list[Entry]:
    """One entry per dispatchable NumPy function."""
    return [function_entry(name, func) for name, func in dispatchable().items()]


def ufuncs() -> list[Entry]:
    """One entry per public NumPy ufunc name (recorded through ``__array_ufunc__``)."""
    out = []
    for attr in sorted(dir(np)):
        u = getattr(np, attr)
        if attr.startswith("_") or not isinstance(u, np.ufunc):
            continue
        alias = f"alias of np.{u.__name__}" if u.__name__ != attr else ""
        if ops.ufunc_op(u) is not None:
            out.append(Entry(f"np.{attr}", "captured", alias))
        else:
            out.append(Entry(f"np.{attr}", "refused",
                             "a generalized ufunc (core dimensions); write np.matmul or "
                             "np.linalg.vecdot" if u.signature else
                             "ufuncs of three or more operands are not recorded"))
    return out


def ufunc_methods() -> list[Entry]:
    """One entry per method of a ufunc (``np.add.reduce``...), for the ufuncs of one output."""
    return [
        Entry("ufunc.reduce", "captured", "ufunc_reduce; axis, dtype, keepdims, initial, out= "
                                          "a tensor"),
        Entry("ufunc.accumulate", "captured", "ufunc_accumulate; axis, dtype, out= a tensor"),
        Entry("ufunc.outer", "captured", "ufunc_outer; out= a tensor"),
        Entry("ufunc.at", "captured", "ufunc_at, for ufuncs of two operands"),
        Entry("ufunc.reduceat", "refused", "reduce static slices: np.stack([np.add.reduce("
                                           "a[i:j]) for i, j in ...])"),
    ]


def creation_functions() -> list[Entry]:
    """One entry per NumPy creation function hooked while a capture is open
    (:data:`capviz.ops.creation.HOOKED`)."""
    notes = {"like": "of an ndarray: its shape, dtype and memory order (of a tensor: the "
                     "`*_like` op)",
             "copy": "of an ndarray: the value the capture recorded for it, copied",
             "array": "of an ndarray: the value the capture recorded for it, copied; of a "
                      "tensor: its copy (with a dtype: its cast); of a list holding tensors: "
                      "their stack",
             "empty": "replays as zeros (the unset elements' garbage cannot be replayed)",
             "converts": "of a tensor: the tensor itself (with a dtype: its cast); of a list "
                         "holding tensors: their stack; of an ndarray: NumPy's own"}
    out = []
    for name in creation.HOOKED:
        note = notes["like"] if name in creation.LIKE else notes["converts"] \
            if name in creation.CONVERTS else notes["array"] if name == "array" else notes["copy"] \
            if name in creation.COPIES else notes["empty"] if name == "empty" else \
            "plain arguments (sizes, values, dtypes)"
        op = "asarray, astype, copy or stack" if name in creation.CONVERTS else "create"
        out.append(Entry(f"np.{name}", "captured", f"{op}; {note}"))
    return out


def ndarray_attributes() -> list[Entry]:
    """One entry per public ``np.ndarray`` attribute."""
    out = []
    for attr in sorted(a for a in dir(np.ndarray) if not a.startswith("_")):
        out.append(_attribute_entry(attr))
    return out


def _attribute_entry(attr: str) -> Entry:
    name = f"ndarray.{attr}"
    func = methods.SAME_AS_FUNCTION.get(attr)
    if func is not None and func not in HANDLED:
        return Entry(name, "refused", refusal(function_name(func)))
    if attr in vars(Tensor) or attr in methods.ADAPTERS or attr in methods.PROPERTIES:
        if attr in methods.DATA_READ_METHODS:
            return Entry(name, "data read", "reads the values")
        return Entry(name, "supported", f"as np.{func.__name__}(t, ...)" if func else "")
    if attr in methods.REFUSED_ATTRIBUTES:
        return Entry(name, "refused", methods.REFUSED_ATTRIBUTES[attr])
    return Entry(name, "missing", "")


def distinct_captured(funcs: list[Entry] | None = None, ufs: list[Entry] | None = None) -> int:
    """How many distinct NumPy functions capture records (aliases such as ``np.abs`` and
    ``np.absolute`` counted once): the figure at the top of the coverage page."""
    funcs = functions() if funcs is None else funcs
    ufs = ufuncs() if ufs is None else ufs
    table = dispatchable()
    return len({table[e.name] for e in funcs if e.status == "captured"}
               | {getattr(np, e.name[3:]) for e in ufs if e.status == "captured"})


_ALIASES = {"amax": "max", "amin": "min", "around": "round", "concat": "concatenate",
            "permute_dims": "transpose", "absolute": "abs", "linalg.matmul": "matmul"}


_MOVES = frozenset(("move", "split", "gather", "select"))


def recorded_op(name: str) -> str | None:
    """The op a captured NumPy function or ufunc (``np.cumsum``, ``np.add``) records, or
    ``None`` for one recorded as several ops (``np.block``, ``np.apply_along_axis``)."""
    short = name.removeprefix("np.")
    short = _ALIASES.get(short, short)
    if short in ops.OPS:
        return short
    ufunc = getattr(np, short, None)
    if isinstance(ufunc, np.ufunc) and ufunc.__name__ in ops.OPS:
        return ufunc.__name__
    return None


DASK_CHECKED = frozenset(("sum", "nansum", "mean", "nanmean", "trace", "var", "std", "nanvar",
                          "nanstd"))
"""The Dask column's checked sums (``capviz/backends/dask/cancellation.py``, ``variance.py``;
tests/test_dask_variance.py ties it to their tables, which import dask)."""

DASK_SUMS = "tolerance, sums checked (else NumPy's order)"
"""The Dask column of a sum or variance over several chunks checked where dask.array's order
can leave the tolerance, and computed again in NumPy's order there."""

DECLARED_CONTRACTION = "tolerance, the contraction's declared bound (not checked)"
"""The JAX column of a contraction of linear algebra (:mod:`capviz.backends.contraction_bound`;
an ``einsum`` of one operand is a sum, checked at run time)."""


_COMPLEX_FUNCTIONS = frozenset((
    *(traits.ACCUMULATES - {"median", "nanmedian"}), *traits.CONTRACT, "diff", "ediff1d",
    "convolve", "correlate", "cross", "kron", "outer", "inner", "vecdot", "linalg.vecdot",
    "matvec", "vecmat", "linalg.multi_dot", "linalg.trace", "cumulative_sum", "cumulative_prod",
    "nancumsum", "nancumprod", "angle", "sort_complex"))
"""The captured functions (not ufuncs) that compute float or complex values from complex
operands, whose JAX column says what a replay does with those (:func:`_complex_mark`)."""


def _takes_complex(op: str) -> bool:
    """Whether ``op`` computes a float or complex value from complex operands: a ufunc with a
    complex loop giving one, or one of :data:`_COMPLEX_FUNCTIONS`."""
    ufunc = ops.UFUNCS.get(op)
    if ufunc is None:
        return op in _COMPLEX_FUNCTIONS
    for loop in ufunc.types:
        ins, outs = loop.split("->")
        if any(c in "FDG" for c in ins) and any(c in "efdgFDG" for c in outs):
            return True
    return False


def _complex_mark(op: str, jax: str) -> str:
    """The JAX column's words on complex operands (the hostile review 3, finding 31), from the
    allow-lists of ``capviz/backends/jax/subnormals/complex_parts.py``: nothing where the row
    is refused already or complex values replay as the row says (exact moves)."""
    if jax.startswith("refused") or op in JAX_LOWERED or not _takes_complex(op):
        return ""
    treatment = complex_treatment(op)
    if treatment == "exact" and jax == "exact":
        return ""
    return f"; complex: {treatment}"


def engines(name: str) -> tuple[str, str]:
    """How the JAX and Dask replays run a captured function's op: *exact* (bit for bit),
    *tolerance* (within the engine's declared tolerance: XLA's or dask's order of additions
    and transcendental functions), *refused* (by name, when the graph is bound), or *its ops*
    (a function recorded as several ops: each its own)."""
    op = recorded_op(name)
    if op is None:
        return "its ops", "its ops"
    word = "elementwise" if op in ops.UFUNCS else traits.treatment(op)
    if op in JAX_REFUSED:
        jax = "refused"
    elif op in JAX_LOWERED:  # written out in checked steps in their common forms
        jax = JAX_LOWERED[op]
    elif op in JAX_UNCHECKED:  # XLA may flush a subnormal it makes, and no check sees it
        jax = "refused (arithmetic='xla': tolerance)"
    elif op in cancellation.CHECKED or op in variances.VARIANCES:  # checked at run time
        jax = "tolerance, sums checked (else fails at the node)"
    elif op in contraction_bound.CONTRACTIONS:  # NumPy's own is its BLAS's order
        jax = DECLARED_CONTRACTION
    elif op in cancellation.UNCHECKED:
        jax = "tolerance, sums not checked (may differ beyond it)"
    else:  # XLA moves and selects elements exactly; it computes new ones its own way
        jax = "exact" if word in _MOVES else "tolerance"
    jax += _complex_mark(op, jax)
    if word is None:
        return jax, "refused"
    if word not in traits.ORDER_DEPENDENT:  # NumPy's own function on blocks, or moves
        return jax, "exact"
    if op in contraction_bound.CONTRACTIONS:  # dask.array's blocked product
        return jax, DECLARED_CONTRACTION
    return jax, DASK_SUMS if op in DASK_CHECKED else "tolerance"


def _table(entries: list[Entry], with_engines: bool = False) -> list[str]:
    if not with_engines:
        lines = ["| name | status | notes |", "|---|---|---|"]
    else:
        lines = ["| name | status | JAX | Dask | notes |", "|---|---|---|---|---|"]
    for e in entries:
        detail = e.detail.replace("|", "\\|")
        if not with_engines:
            lines.append(f"| `{e.name}` | {e.status} | {detail} |")
            continue
        jax, dask = engines(e.name) if e.status == "captured" else ("", "")
        lines.append(f"| `{e.name}` | {e.status} | {jax} | {dask} | {detail} |")
    return lines


def _counts(entries: list[Entry]) -> str:
    counts: dict[str, int] = {}
    for e in entries:
        counts[e.status] = counts.get(e.status, 0) + 1
    return ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))


def markdown() -> str:
    """The text of ``docs/numpy-coverage.md``."""
    funcs, ufs, attrs = functions(), ufuncs(), ndarray_attributes()
    captured = sum(e.status == "captured" for e in funcs + ufs)
    distinct = distinct_captured(funcs, ufs)
    lines = [
        "# NumPy coverage",
        "",
        "Generated by `python docs/gen_coverage.py` from the code "
        "(`capviz/numpy_api/coverage.py`); tests/test_numpy_coverage.py fails when this page is "
        "stale.",
        "",
        f"- **{captured} NumPy functions captured** (recorded as ops, replayed bit for bit "
        f"with eager NumPy's dtype): {sum(e.status == 'captured' for e in funcs)} "
        f"dispatchable function names and {sum(e.status == 'captured' for e in ufs)} ufunc "
        f"names; {distinct} distinct functions (the other names are aliases: `np.abs`, "
        "`np.concat`...).",
        f"- Dispatchable functions ({len(funcs)}, in "
        f"{', '.join(f'`{p}`' for p in NAMESPACES)}): {_counts(funcs)}.",
        f"- Ufunc names ({len(ufs)}): {_counts(ufs)}.",
        f"- ndarray attributes ({len(attrs)}): {_counts(attrs)}.",
        "",
        "Statuses: *captured* (an op in the graph), *answered* (computed at capture time from "
        "shapes and dtypes, as eager NumPy would), *data read* (needs the values: a "
        "`data_read` violation while capturing), *refused* (`cv.UnsupportedOperationError` "
        "naming the function and what to write instead; the notes are its alternative).",
        "",
        "Engines (the JAX and Dask columns; the NumPy replay is bit for bit eager NumPy's): "
        "*exact* (bit for bit), *tolerance* (within the engine's declared tolerance, "
        "`backend.tolerance_for(dtype)`: XLA or dask add in another order and XLA has its "
        "own transcendental functions; integer and boolean results are exact), *refused* (by "
        "name when the graph is bound, with the reason), *refused (arithmetic='xla': "
        "tolerance)* (a default JAX replay refuses it by name when the graph is bound, for "
        "float or complex results (`np.linalg`) or operands (the others): XLA flushes the "
        "subnormal floats it may make to zero and no run-time check sees them; "
        "`arithmetic='xla'` runs it within the tolerance, with XLA's flush), *its ops* "
        "(recorded as several ops). In the JAX column, *complex:* says what a replay does "
        "with complex operands of a row whose function takes them: *exact*, *checked* (a part "
        "of NumPy's result that may be subnormal, which XLA flushes, fails the replay at the "
        "node: `+`, `-`, `*`, the sums, the contractions, `angle`, `/` by a real, `exp`, "
        "`sin`, `cos`, `sinh`, `cosh`, `sqrt`, `log`), or *refused (arithmetic='xla': "
        "tolerance)* (`tan`, `log1p`, `**`, `/` by a complex, `prod`, `var`...: by name when "
        "the graph is bound); generated from the allow-lists of "
        "`capviz/backends/jax/subnormals/complex_parts.py` (see "
        "docs/guide/replay.md). In the JAX column, *tolerance, sums checked (else fails "
        "at the node)*: a sum XLA adds in another order is checked at run time where it may "
        "leave the tolerance (it cancels, or NumPy adds it row by row: one rounding of its "
        "terms' total magnitude for NumPy's pairwise sums, `n` for its running sums) and "
        "fails at its node there; *tolerance, the contraction's declared bound (not "
        "checked)*: NumPy's own result of a contraction of linear algebra (`matmul`, `dot`, "
        "`einsum` of two operands or more, `tensordot`, `inner`, `vdot`, `vecdot`, `matvec`, "
        "`vecmat`, `linalg.multi_dot`) is its BLAS's order of summation, which differs between "
        "machines, so the engine's result is held to the componentwise bound every order "
        "meets, `2 * gamma_k * (abs(A) @ abs(B))` (`gamma_k = k * u / (1 - k * u)`, `k` the "
        "contracted length, `u` the unit roundoff of the result type), which `graph.compare` "
        "and the differential harness use for it instead of the flat tolerance, and which may "
        "be far wider where the sum cancels (`capviz/backends/contraction_bound.py`, "
        "docs/guide/replay.md; an `einsum` of one operand is a sum, checked); "
        "*tolerance, sums not checked (may differ beyond it)*: `linalg.trace` adds in XLA's "
        "order with no check, and where its sum cancels an output can differ beyond the "
        "tolerance (open: `capviz/backends/jax/cancellation.py`, docs/guide/replay.md); "
        "`var`, `std` and their nan forms are checked (`capviz/backends/jax/variances.py`: "
        "the mean's rounding, squared, against the tolerance). "
        "In the Dask column, *tolerance, sums checked (else NumPy's order)*: a sum, mean, "
        "trace, variance or standard deviation over several chunks is checked where "
        "dask.array's order of addition may leave the tolerance (it cancels, NumPy adds it row "
        "by row, a variance tiny against its values, an overflow in one order) and computed "
        "again in NumPy's order there, bit for bit, or refused naming the value whose memory "
        "layout decides (`capviz/backends/dask/cancellation.py`, `variance.py`); one whose "
        "value reaches an add or subtract that can cancel (`x - x.mean(-1, keepdims=True)`, "
        "a layer norm's centring, a difference of two sums) is computed in NumPy's order from "
        "the start (`x - x.mean()`: tested at run time first, since that order is one block), "
        "so that add or subtract is NumPy's bits, or refused at the node where "
        "NumPy's order cannot be known (`capviz/backends/dask/before_cancel.py`); "
        "*tolerance, the contraction's declared bound (not checked)*: `matmul`, `dot`, "
        "`tensordot`, `vdot` and `einsum` of two operands or more add the blocks' partial "
        "products in dask.array's order, held to the same bound as on JAX (their overflow "
        "bound is checked); the other contractions run NumPy's own function on one block. "
        "Where XLA's arithmetic differs from NumPy's on some values (complex infinities, "
        "float16 overflow, casts out of range...), the JAX replay checks those values and "
        "fails at the node instead: docs/guide/replay.md, \"Where an engine's arithmetic "
        "differs from NumPy's\".",
        "",
        "Not dispatchable, so not in the tables: `np.lib.stride_tricks.as_strided` converts "
        "its argument with `np.asarray` (a data read while capturing); write "
        "`np.lib.stride_tricks.sliding_window_view`, which capture records.",
        "",
        "## Dispatchable functions",
        "",
        *_table(funcs, with_engines=True),
        "",
        "## Ufuncs",
        "",
        *_table(ufs, with_engines=True),
        "",
        "## Ufunc methods",
        "",
        *_table(ufunc_methods()),
        "",
        "## Creation functions",
        "",
        "Called by the user's code while a capture is open (also through a name bound before "
        "it, `from numpy import zeros`, in the captured function's module), these record a "
        "`create` op and return a tensor, so a buffer filled in a loop is recorded "
        "(`capviz/randomness/creation.py`, docs/guide/state.md).",
        "",
        *_table(creation_functions()),
        "",
                "## ndarray methods and attributes",
        "",
        *_table(attrs),
        "",
    ]
    return "\n".join(lines)
