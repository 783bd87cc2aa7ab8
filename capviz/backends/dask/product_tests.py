"""The tasks that test a consumer's block of a product larger than one block against the bound
carried to it (:mod:`capviz.backends.dask.product_checks`), and the error they raise: an add or
subtract, differences, a spread (:class:`Within`), a variance (:class:`SpreadWithin`), a
covariance (:class:`CovWithin`). Each is picklable, so a cluster's worker runs it and sends its
error back."""

from __future__ import annotations

import math
from typing import Any

import numpy as np


class ProductCancels(FloatingPointError):
    """A consumer cancels the value of a product dask.array computed in its blocks beyond the
    tolerance of its result (picklable, so a cluster's worker sends it back)."""


def fixes(need: str) -> str:
    """The fixes of a product beyond one block, the opt-in first (the lead's ruling 37
    08:00: for data larger than memory it is the one that applies)."""
    return ("replay with arithmetic='dask' (dask.array's order of summation, held by compare "
            "to the product's declared bound), with backend='numpy' where the data fit in "
            f"memory, or under dask.config.set({{'array.chunk-size': '{need}'}}), which "
            "computes the product as NumPy does, on one block")


class SpreadWithin:
    """A task's test of a variance's (``np.var``, ``np.std``) block of a product's values
    against the carried bound ``E`` on each of its ``n`` terms (picklable).

    ``x`` the values dask.array computed, ``x*`` NumPy's, ``|x - x*| <= E`` each: the
    standard deviation is ``||P x|| / sqrt(d)`` (``P`` the centring, a projection: norm 1;
    ``d = n - ddof``), so the exact ones of ``x`` and ``x*`` are within ``lam = sqrt(n / d)
    E``, and their variances within ``lam (2 s + lam)``. Each computed variance is within
    ``R = n e**2 / d + (n + 3) eps v`` of its exact one (:mod:`capviz.backends.dask.variance`'s
    bound, with ``n`` roundings: any order of addition; ``e = (n + 1) eps M``, ``M`` the
    largest magnitude, ``M + E`` for NumPy's values). An output fails where the sum of these,
    for the dask.array result and NumPy's, is beyond ``atol + rtol max(|r| - that, 0)``."""

    def __init__(self, name: str, words: tuple[str, str, str], rtol: float, atol: float,
                 eps: float, n: int, ddof: float) -> None:
        self.name = name
        self.words = words
        self.rtol, self.atol, self.eps = rtol, atol, eps
        self.n, self.d = float(n), float(n) - ddof

    def _rounding(self, largest: Any, variance: Any, n: Any, d: Any) -> Any:
        e = (n + 1) * self.eps * largest
        grown = (n + 3) * self.eps
        return np.where(grown < 0.5, (n * e * e / d + grown * variance)
                        / np.maximum(1 - grown, 1e-300), np.inf)

    def __call__(self, block: np.ndarray, carried: Any, largest: Any,
                 counts: Any = None) -> np.ndarray:
        """``counts``: each output's own count of terms (``np.nanvar``, ``np.nanstd``), else
        every output's is ``n``; an output of ``ddof`` terms or fewer is NumPy's NaN or
        infinity, not tested."""
        e, m = float(np.asarray(carried)), float(np.asarray(largest))
        with np.errstate(all="ignore"):
            r = np.abs(np.asarray(block)).astype(np.float64)
            n = self.n if counts is None else np.asarray(counts, np.float64)
            d = n - (self.n - self.d)
            root = self.name in ("std", "nanstd")
            lam = np.sqrt(n / d) * e
            v = r * r if root else r
            ours = self._rounding(m, v, n, d)  # dask.array's result from its values' exact one
            s = np.sqrt(v + ours)
            theirs = self._rounding(m + e, (s + lam) ** 2, n, d)  # NumPy's from its values'
            if root:
                low = np.maximum(r, 1e-300)
                first = np.minimum(np.sqrt(ours), ours / low)
                below = r - first - lam
                last = np.where(below > 0, np.minimum(np.sqrt(theirs), theirs / below),
                                np.sqrt(theirs))
                total = first + lam + last + 2 * self.eps * (r + lam)
            else:
                total = ours + theirs + lam * (2 * s + lam)
            limit = self.atol + self.rtol * np.maximum(r - total, 0)
            beyond = np.isfinite(r) & (d > 0) & ~(total * (1 + self.eps) <= limit)
        if np.any(beyond):
            self._refuse(self.name, "terms", e, total, limit, beyond)
        return block

    def _refuse(self, name: str, unit: str, e: float, total: Any, limit: Any,
                beyond: Any) -> None:
        """Raise :class:`ProductCancels` for ``np.<name>``, whose results marked ``beyond``
        can move by ``total``, beyond their tolerance ``limit``."""
        named, held, need = self.words
        raise ProductCancels(
            f"np.{name} cancels the value of {named}, which dask.array adds in its own blocks "
            f"since its operands ({held}) do not fit dask's array.chunk-size: its declared "
            f"rounding, up to {e:.3g} on each of its {int(self.n)} {unit}, can move this result "
            f"by up to {float(np.max(np.where(beyond, total, 0))):.3g}, beyond its tolerance "
            f"({float(np.min(limit[beyond])):.3g}), so it can differ from NumPy's; {fixes(need)}")


class CovWithin(SpreadWithin):
    """A task's test of ``np.cov`` of a product's values (its whole result, one block;
    picklable). :class:`_SpreadWithin`'s rule for each pair of variables ``i``, ``j``: their
    centred values move by at most ``sqrt(n) E`` each, so ``c_ij`` by at most ``lam (s_i +
    s_j) + lam**2`` (``s`` the standard deviations, the diagonal's roots); each computed
    covariance is within ``n e**2 / d + (n + 5) eps s_i s_j`` of its exact one (the mean's
    rounding ``e``; NumPy's product of the centred rows in any order, the subtraction and the
    scaling by ``1 / d``).

    With weights ``w`` (``fweights`` times ``aweights``, nonnegative: NumPy refuses others;
    stop 40) the centring subtracts the weighted mean, a projection orthogonal in the norm
    ``||y||_w = sqrt(sum w y**2)``, so the same rule holds with the sum of the weights ``S``
    in place of ``n`` where it counts the terms' weight (``lam = sqrt(S / d) E``, the means'
    ``S e**2 / d``) and NumPy's ``fact`` as ``d``; ``e = (n + 1) eps M`` still bounds the
    weighted mean's rounding (the products by the weights and the quotient by NumPy's own
    sum of them included), and ``(n + 5) eps`` the products' (the centred values times the
    weights round once more). ``S`` and ``fact`` come at run time (:func:`weight_terms`).
    """

    def __init__(self, name: str, words: tuple[str, str, str], rtol: float, atol: float,
                 eps: float, n: int, d: float) -> None:
        super().__init__(name, words, rtol, atol, eps, n, n - d)

    def __call__(self, block: np.ndarray, carried: Any, largest: Any, weight: Any = None,
                 fact: Any = None) -> np.ndarray:
        """``weight``, ``fact``: :func:`weight_terms`' (with weights), else ``None``."""
        c = np.asarray(block).astype(np.float64)
        weights = None if weight is None else (float(np.asarray(weight)),
                                               float(np.asarray(fact)))
        total = self.moved(c, float(np.asarray(carried)), float(np.asarray(largest)), weights)
        with np.errstate(all="ignore"):
            r = np.abs(c)
            limit = self.atol + self.rtol * np.maximum(r - total, 0)
            beyond = np.isfinite(r) & ~(total * (1 + self.eps) <= limit)
        if np.any(beyond):
            self._refuse(self.name, "observations", float(np.asarray(carried)), total, limit,
                         beyond)
        return block

    def moved(self, c: np.ndarray, e: float, m: float, weights: Any = None) -> np.ndarray:
        """How far NumPy's covariances can be from ``c`` (computed from values within ``e``
        of NumPy's, of magnitude up to ``m``): each element's bound. ``weights``: ``(S,
        fact)`` (:func:`weight_terms`), or ``None``."""
        weight, d = (self.n, self.d) if weights is None else weights
        with np.errstate(all="ignore"):
            v = np.abs(c if c.ndim == 0 else np.diagonal(c))
            grown = (self.n + 5) * self.eps
            if grown >= 0.5 or not d > 0 or not math.isfinite(weight / d):
                total = np.full(c.shape, np.inf)
            else:
                lam = math.sqrt(weight / d) * e
                ours = weight * ((self.n + 1) * self.eps * m) ** 2 / d  # the means'
                theirs = weight * ((self.n + 1) * self.eps * (m + e)) ** 2 / d
                s = np.sqrt(v + (ours + grown * v) / (1 - grown))
                s2 = s + lam  # NumPy's values' standard deviations, at most
                if c.ndim == 0:
                    products, products2, sums = s * s, s2 * s2, 2 * s
                else:
                    products, products2 = np.multiply.outer(s, s), np.multiply.outer(s2, s2)
                    sums = np.add.outer(s, s)
                total = (ours + theirs + grown * (products + products2)) / (1 - grown) \
                    + lam * sums + lam * lam
        return total


def weight_terms(fweights: Any, aweights: Any, ddof: int | None, bias: bool,
                 n: int) -> np.ndarray:
    """``[S, fact]`` of ``np.cov``'s weights (a task's function, on their one block each, or
    ``None``): ``S`` above the sum of the weights, ``fact`` below NumPy's (``S - ddof`` or
    ``S - ddof * sum(w * aweights) / S``, each up to the roundings of ``n`` terms summed in
    any order, here and in NumPy); ``fact`` 0 where it is not positive (no test passes)."""
    with np.errstate(all="ignore"):
        w = None if fweights is None else np.asarray(fweights, np.float64)
        if aweights is not None:
            a = np.asarray(aweights, np.float64)
            w = a if w is None else w * a
        if w is None:  # no weights: n and n - ddof
            shift = (0 if bias else 1) if ddof is None else int(ddof)
            return np.array([float(n), float(n - shift)])
        grown = 4 * (n + 2) * float(np.finfo(np.float64).eps)
        total = float(np.sum(w))
        shift = 0 if ddof is None and bias else 1 if ddof is None else int(ddof)
        spread = 0.0 if aweights is None or not total else shift * float(np.sum(w * a)) / total
        fact = total - (shift if aweights is None else spread)
        low = fact - grown * (abs(total) + abs(spread) + shift)
        return np.array([total * (1 + grown), low if low > 0 else 0.0])


class CorrWithin(CovWithin):
    """A task's test of ``np.corrcoef`` of a product's values (its whole result, one block, and
    its operands, whose covariances NumPy's ``corrcoef`` divides: computed here again by
    ``np.cov`` as it does; picklable; stop 40). With ``T`` the covariances' bound
    (:meth:`CovWithin.moved`) and ``c`` the covariances of the values dask.array computed,
    NumPy's ``c_ii`` is within ``1 +- delta_i`` (``delta_i = T_ii / c_ii``) of ours, so each
    ``r_ij = c_ij / sqrt(c_ii c_jj)`` moves by at most ``T_ij / sqrt((c_ii - T_ii) (c_jj -
    T_jj)) + |r_ij| (1 / sqrt((1 - delta_i) (1 - delta_j)) - 1)``, and both results' roots and
    quotients round by ``4 eps`` of them at most (the clip to [-1, 1] moves nothing further). A
    variable whose variance can be 0 (``T_ii >= c_ii``) fails: NumPy's may be NaN where ours is
    not, or the reverse."""

    def __init__(self, name: str, words: tuple[str, str, str], rtol: float, atol: float,
                 eps: float, n: int, d: float, rowvar: bool) -> None:
        super().__init__(name, words, rtol, atol, eps, n, d)
        self.rowvar = rowvar

    def __call__(self, block: np.ndarray, carried: Any, largest: Any,  # type: ignore[override]
                 *operands: Any) -> np.ndarray:
        e = float(np.asarray(carried))
        with np.errstate(all="ignore"):
            c = np.asarray(np.cov(*operands, rowvar=self.rowvar), np.float64)
            t = self.moved(c, e, float(np.asarray(largest)))
            r = np.abs(np.asarray(block).astype(np.float64))
            if c.ndim == 0:  # one variable: c / c, 1.0 or NaN in both where c cannot be 0
                total = np.where(np.abs(c) > t, 0.0, np.inf)
                unsure = ~(np.abs(c) > t)
            else:
                v, tv = np.diagonal(c), np.diagonal(t)
                low = np.where(v > tv, v - tv, np.nan)
                delta = tv / np.where(v > 0, v, np.nan)
                base = np.abs(c) / np.sqrt(np.multiply.outer(v, v))
                first = t / np.sqrt(np.multiply.outer(low, low))
                second = base * (1 / np.sqrt(np.multiply.outer(1 - delta, 1 - delta)) - 1)
                total = first + second
                total = total + 4 * self.eps * (base + total)
                unsure = ~np.isfinite(total)  # a variance that can be 0: no test passes
            limit = self.atol + self.rtol * np.maximum(r - total, 0)
            beyond = unsure | (np.isfinite(r) & ~(total * (1 + self.eps) <= limit))
        if np.any(beyond):
            self._refuse(self.name, "observations", e, np.where(np.isfinite(total), total,
                                                                 np.inf), limit, beyond)
        return block


def weights_bound(*spacings: Any, second: bool = False) -> np.ndarray:
    """The largest sum of the magnitudes of the weights by which ``np.gradient`` combines its
    operand's values into each result, over every axis's spacing (a task's function, on
    ``spacings``' one block each: numbers, 0-d arrays, coordinates; ``second``: edge_order=2),
    as a 0-d float64 array; stop 40.

    NumPy's weights for coordinates ``x`` (``dx = np.diff(x)``, in ``x``'s type, or float64
    for integers): inside ``a = -dx2 / (dx1 (dx1 + dx2))``, ``b = (dx2 - dx1) / (dx1 dx2)``,
    ``c = dx1 / (dx2 (dx1 + dx2))`` (``1 / h`` in all where evenly spaced: NumPy's ``(f[i + 1]
    - f[i - 1]) / (2 h)``); at ``edge_order=1``'s edges ``2 / |dx|``; at ``edge_order=2``'s
    the three weights of each end (``4 / h`` evenly spaced). Taken in float64 here, within
    ``16 eps`` of ``x``'s type of NumPy's own (a difference and three products or quotients
    each round once: the margin is added); a spacing of 0 makes it infinite (no test
    passes)."""
    largest = 0.0
    with np.errstate(all="ignore"):
        for each in spacings:
            x = np.asarray(each)
            kind = x.dtype if x.dtype.kind == "f" else np.dtype(np.float64)
            margin = 1 + 16 * float(np.finfo(kind).eps)
            if x.ndim == 0:
                h = abs(float(x))
                found = (4.0 if second else 2.0) / h if h else np.inf
            else:
                dx = np.abs(np.diff(x.astype(np.float64)))
                raw = np.diff(x.astype(np.float64))
                if raw.size < 1:
                    continue
                sums = [2 / dx[0], 2 / dx[-1]] if not second else []
                if raw.size >= 2:
                    d1, d2 = raw[:-1], raw[1:]
                    inside = np.abs(d2 / (d1 * (d1 + d2))) + np.abs((d2 - d1) / (d1 * d2)) \
                        + np.abs(d1 / (d2 * (d1 + d2)))
                    sums.append(np.max(inside))
                    if second:
                        f1, f2, l1, l2 = raw[0], raw[1], raw[-2], raw[-1]
                        sums.append(abs((2 * f1 + f2) / (f1 * (f1 + f2)))
                                    + abs((f1 + f2) / (f1 * f2)) + abs(f1 / (f2 * (f1 + f2))))
                        sums.append(abs(l2 / (l1 * (l1 + l2))) + abs((l1 + l2) / (l1 * l2))
                                    + abs((2 * l2 + l1) / (l2 * (l1 + l2))))
                found = float(np.max(np.asarray(sums, np.float64))) if sums else 0.0
            found = found * margin
            largest = max(largest, found if found == found else np.inf)  # NaN: infinite
    return np.asarray(largest, np.float64)


class Within:
    """A task's test of a consumer's block against the carried bound (picklable)."""

    def __init__(self, name: str, words: tuple[str, str, str], rtol: float, atol: float,
                 eps: float) -> None:
        self.name = name
        self.words = words
        self.rtol, self.atol, self.eps = rtol, atol, eps

    def __call__(self, block: np.ndarray, carried: Any) -> np.ndarray:
        e = float(np.asarray(carried))
        with np.errstate(all="ignore"):
            r = np.abs(np.asarray(block)).astype(np.float64)
            limit = self.atol + self.rtol * np.maximum(r - e, 0)  # NumPy's |r| may be less
            beyond = np.isfinite(r) & (e * (1 + self.eps) + self.eps * r > limit)
        if np.any(beyond):
            named, held, need = self.words
            raise ProductCancels(
                f"np.{self.name} cancels the value of {named}, which dask.array adds in its "
                f"own blocks since its operands ({held}) do not fit dask's array.chunk-size: "
                f"its declared rounding, up to {e:.3g} here, is beyond this result's "
                f"tolerance ({float(np.min(limit[beyond])):.3g}), so it can differ from "
                f"NumPy's; {fixes(need)}")
        return block
