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
    scaling by ``1 / d``)."""

    def __init__(self, name: str, words: tuple[str, str, str], rtol: float, atol: float,
                 eps: float, n: int, d: float) -> None:
        super().__init__(name, words, rtol, atol, eps, n, n - d)

    def __call__(self, block: np.ndarray, carried: Any, largest: Any) -> np.ndarray:
        e, m = float(np.asarray(carried)), float(np.asarray(largest))
        with np.errstate(all="ignore"):
            c = np.asarray(block).astype(np.float64)
            v = np.abs(c if c.ndim == 0 else np.diagonal(c))
            lam = math.sqrt(self.n / self.d) * e
            grown = (self.n + 5) * self.eps
            if grown >= 0.5:
                total = np.full(c.shape, np.inf)
            else:
                ours = self.n * ((self.n + 1) * self.eps * m) ** 2 / self.d  # the means'
                theirs = self.n * ((self.n + 1) * self.eps * (m + e)) ** 2 / self.d
                s = np.sqrt(v + (ours + grown * v) / (1 - grown))
                s2 = s + lam  # NumPy's values' standard deviations, at most
                if c.ndim == 0:
                    products, products2, sums = s * s, s2 * s2, 2 * s
                else:
                    products, products2 = np.multiply.outer(s, s), np.multiply.outer(s2, s2)
                    sums = np.add.outer(s, s)
                total = (ours + theirs + grown * (products + products2)) / (1 - grown) \
                    + lam * sums + lam * lam
            r = np.abs(c)
            limit = self.atol + self.rtol * np.maximum(r - total, 0)
            beyond = np.isfinite(r) & ~(total * (1 + self.eps) <= limit)
        if np.any(beyond):
            self._refuse("cov", "observations", e, total, limit, beyond)
        return block


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
