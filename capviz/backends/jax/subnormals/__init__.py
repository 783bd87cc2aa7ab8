"""Subnormal floats made inside a JAX replay: where XLA's flush to zero changes a result.

XLA on the CPU flushes float32 and float64 subnormal results to zero (and reads subnormal
operands as zero), where NumPy keeps them (float16 is computed in float32 and keeps them). No
setting turns that off: the CPU client sets the processor's flush-to-zero and
denormals-are-zero modes around every run (``ScopedFlushDenormal`` in XLA's
``cpu_client.cc``), and ``xla_cpu_ftz=False`` leaves ``1e-20 * 1e-20`` at ``0.0`` (jax 0.10.2,
measured). Inputs holding subnormals are refused before the run (``backend.py``); this module
checks the values the graph makes, so that a zero XLA gave where NumPy's value is a nonzero
subnormal fails the replay at the node, before a later division, logarithm or large factor
turns it into a different number (``-1.0`` against ``-0.0``, a finite value against an
infinity):

* **Elementwise arithmetic** (:data:`ELEMENTWISE`): ``*``, ``/``, ``+``, ``-``, ``square``,
  ``reciprocal``, ``exp``, ``exp2``, ``**`` (``power``, ``float_power``), ``deg2rad``,
  ``arctan2``, ``ldexp``. Each has an exact test of "NumPy's result would be a nonzero
  subnormal" from its operands where XLA's result is 0 (a sum of two floats is 0 only when
  they cancel exactly; a product or quotient is tested scaled out of the subnormal range;
  ``exp(x)`` is nonzero above ``log(smallest_subnormal / 2)``, ``a ** b`` where
  ``b * log2|a|`` is above ``log2(smallest_subnormal / 2)``), in the precise program; the
  replay's fast program tests ``*``, ``/``, ``**``, ``arctan2`` and ``ldexp`` by "XLA's result
  is 0 where no factor is 0" (:func:`.elementwise._fast`), which fails wherever the exact test
  does, and a failure reruns the precise program. The test is an elementwise mask
  (:func:`capviz.backends.jax.trace.poisoned`): in the precise program a flag per node; in the
  fast one, NaN where it fails, an elementwise select XLA fuses into the consumer, and a NaN
  test only where the values leave the program (:mod:`capviz.backends.jax.poison`). An op
  with a literal or constant operand that rules a subnormal out (``x * 1.0001``, ``x + 0.5``,
  ``x / 0.5``, a bias or gain of weights whose magnitudes are measured once on the host) is
  not checked at all.
* **Products that contract** (:data:`PRODUCTS`: ``matmul``, ``dot``, ``einsum``, ``tensordot``,
  ``inner``, ``outer``, ``kron``, ``vecdot``, ``convolve``, ``correlate``, ``cross``...): their
  products and partial sums are made inside the op. A product can be subnormal only when the
  smallest nonzero magnitudes of the operands multiply below ``tiny * 2**(nmant + 1)`` (a
  partial sum of products above that bound is either 0 or normal; of three operands or more,
  a partial product of any of them may come first, so each smallest magnitude below 1
  counts): checked with one reduction per operand (for ``matmul``, per contracted index: the
  smallest magnitude of each column of ``a`` times that of each row of ``b``, made for every
  product of two computed matrices of one shape at once, after the program:
  :meth:`capviz.backends.jax.trace.Trace.require_batched`); with every
  operand but one a constant (a model's weights), an elementwise threshold of that one
  (:func:`.products._product_with_constants`), which poisons that operand in the fast program.
* **Products along an axis** (:data:`PRODS`: ``prod``, ``cumprod`` and ``nan`` forms): a
  product of 0 (or NaN) where no factor is 0 (or NaN) fails.
* **Variances** (:data:`SPREADS`: ``var``, ``std``, ``nan`` forms): 0 only where the values
  along the axis are all equal (a max and a min along it).
* **Sums** (:data:`SUMS`: ``sum``, ``cumsum``, ``mean`` and their ``nan`` forms, ``diff``,
  ``ediff1d``, ``trace``) and **remainders** (:data:`REMAINDERS`): their operands' nonzero
  terms must reach ``tiny * 2**(nmant + 1)`` (times the count for a mean), an elementwise mask
  that poisons the operand in the fast program (a ``nan`` sum would drop the poison: its mask
  is merged into one flag per shape, :func:`capviz.backends.jax.trace.require_each`). These
  reductions take ``where=``, ``initial=``, ``correction=``.

* **Complex values** (:mod:`.complex_parts`): XLA flushes the float32/float64 parts of
  complex64/complex128 values. ``*`` and ``square`` are checked part product by part product,
  ``+``, ``-``, the sums and the contractions part by part as their real forms, ``angle`` as
  ``arctan2``, ``/`` by a real divisor and ``exp`` through NumPy's formulas
  (:mod:`.complex_formulas`), ``sin``, ``cos``, ``sinh``, ``cosh``, ``sqrt`` and ``log`` on
  their parts (:mod:`.complex_functions`); moves, selections and comparisons are exact; every
  other op with a complex result, or a float result from complex operands (``tan``,
  ``log1p``, ``/`` by a complex, ``**``, ``prod``, ``var``...: quotients, exponentials,
  logarithms and sines that no cheap test bounds), is refused by name unless the replay takes
  ``arithmetic="xla"``
  (:data:`.complex_parts.COMPLEX_EXACT` and :data:`.complex_parts.COMPLEX_CHECKED` are
  allow-lists).
* **Narrowing casts** (:mod:`.casts`): ``astype`` from float64 or complex128 to float32 or
  complex64, where NumPy rounds to a subnormal of the narrower type.

The other float ops that can make a subnormal from normal operands (:data:`DECLARED`:
``linalg``, ``fft``, ``cov``, ``polyval``...) are not checked, but for the common forms of
``linalg.norm``, ``average`` and ``trapezoid``, which :mod:`capviz.backends.jax.functions`
writes out in checked steps (:mod:`.lowered`): a JAX replay refuses them by
name when it is bound unless it takes ``arithmetic="xla"`` (:func:`unchecked`,
``JaxBackend.admit``), and so is an op reading a literal or a constant that holds a subnormal
value, which XLA reads as 0 (:func:`subnormal_literal`, :func:`subnormal_constant`);
``docs/guide/replay.md`` ("Where an engine's arithmetic differs from
NumPy's") says what each choice costs.

The package, by concern: :mod:`.elementwise` (elementwise arithmetic), :mod:`.products`
(contractions), :mod:`.reductions` (sums, remainders, products along an axis, variances),
:mod:`.complex_parts` (complex values), :mod:`.complex_formulas` (complex ``/`` by a real,
``exp``), :mod:`.complex_functions` (complex ``sin``, ``cos``, ``sinh``, ``cosh``, ``sqrt``,
``log``), :mod:`.lowered` (declared functions written out), :mod:`.casts` (narrowing casts),
:mod:`.declared` (what no check sees: :func:`unchecked`), :mod:`.literals` (subnormal
literals and constants) and :mod:`.operands` (what the checks know of operands: literals,
magnitudes, the rerun on poisoned operands); :func:`check` here dispatches an op to its check.
"""

from __future__ import annotations

from typing import Any

from capviz.backends.jax.subnormals import complex_parts
from capviz.backends.jax.subnormals.casts import narrowing
from capviz.backends.jax.subnormals.complex_parts import (
    COMPLEX_CHECKED,
    COMPLEX_EXACT,
    COMPLEX_PRODUCTS,
)
from capviz.backends.jax.subnormals.declared import DECLARED, unchecked
from capviz.backends.jax.subnormals.elementwise import ELEMENTWISE, elementwise
from capviz.backends.jax.subnormals.literals import subnormal_constant, subnormal_literal
from capviz.backends.jax.subnormals.operands import FLUSHED, magnitudes
from capviz.backends.jax.subnormals.products import PRODUCTS, products
from capviz.backends.jax.subnormals.reductions import (
    PRODS,
    REMAINDERS,
    SPREADS,
    SUMS,
    prods,
    remainders,
    spreads,
    sums,
)
from capviz.backends.jax.trace import dtype_of

__all__ = ["COMPLEX_CHECKED", "COMPLEX_EXACT", "COMPLEX_PRODUCTS", "DECLARED", "ELEMENTWISE",
           "FLUSHED", "PRODS", "PRODUCTS", "REMAINDERS", "SPREADS", "SUMS", "check", "magnitudes",
           "subnormal_constant", "subnormal_literal", "unchecked"]


def check(jnp: Any, name: str, fn: Any, args: tuple, operands: list, result: Any,
          params: dict) -> Any:
    """The flush checks of op ``name`` (nothing for an op or a dtype XLA does not flush), run
    as ``fn(*args, **params)`` to give ``result``: returns the result, in the fast trace with
    NaN where a check fails (:func:`capviz.backends.jax.trace.poisoned`)."""
    if name in REMAINDERS:  # divmod gives two results: its operands say what XLA flushes
        return remainders(jnp, name, fn, args, operands, result, params)
    if not hasattr(result, "dtype"):
        return result
    if name == "astype" and operands:
        return narrowing(jnp, operands[0], result)
    if dtype_of(result).kind == "c" or any(dtype_of(a).kind == "c" for a in operands):
        return complex_parts.check(jnp, name, fn, args, operands, result, params)
    if dtype_of(result) not in FLUSHED:
        return result
    if name in ELEMENTWISE:
        return elementwise(jnp, name, args, result)
    if name in PRODUCTS:
        return products(jnp, name, fn, args, operands, result, params)
    if name in SUMS and operands:  # where= drops terms: the mask covers them all
        return sums(jnp, name, fn, args, operands[0], result, params)
    if name in PRODS and operands:
        return prods(jnp, name, operands[0], result, params)
    if name in SPREADS and operands:
        return spreads(jnp, name, operands[0], result, params)
    return result

