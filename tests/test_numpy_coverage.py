"""NumPy function coverage: every captured function replays bit for bit with eager NumPy's dtype,
every refused one is refused by name, every ndarray attribute is supported or refused by name,
and shape rules allocate nothing."""

import inspect
import os
import tracemalloc

import numpy as np
import pytest

import capviz as cv
from capviz.numpy_api import HANDLED, coverage, handwritten, methods  # noqa: F401
from capviz.ops import SPECS

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RNG = np.random.default_rng(7)


def _spd(n, batch=()):
    a = RNG.standard_normal(batch + (n, n))
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


def make(kind, dtype):
    """Test inputs by kind, in ``dtype`` ("mnan": a matrix holding a NaN)."""
    nan = kind == "mnan"
    kind = "m" if nan else kind
    dt = np.dtype(dtype)
    if kind == "spd":
        return _spd(3).astype(dt)
    if kind == "spd_batch":
        return _spd(3, (2,)).astype(dt)
    if kind == "sorted":
        return np.sort(RNG.standard_normal(6)).astype(dt)
    if kind == "bits":
        return RNG.integers(0, 256, (3, 4)).astype(np.uint8)
    if kind == "idx":
        return RNG.integers(0, 3, (3, 4)).astype(dt)
    if kind in ("pv", "pw"):  # polynomial coefficients: np.polymul drops a leading 0
        a = make(kind[1], dtype)
        a[0] = 3 if a[0] == 0 else a[0]
        return a
    shape = {"m": (3, 4), "v": (5,), "t3": (2, 3, 4), "sq": (4, 4), "w": (4,), "s": ()}[kind]
    if dt.kind == "c":
        return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(dt)
    if dt.kind in "iu":
        return RNG.integers(-5 if dt.kind == "i" else 0, 6, shape).astype(dt)
    if dt.kind == "b":
        return RNG.integers(0, 2, shape).astype(bool)
    a = RNG.standard_normal(shape).astype(dt)
    if kind == "m" and nan:
        a.flat[1] = np.nan  # the nan* functions see a NaN; NaN bits are compared too
    return a


F = ("float32", "float64")
FI = ("float32", "float64", "int64")
FC = ("float32", "float64", "complex64")
# (NumPy name, function, input kinds, dtypes)
CASES = [
    ("np.pad", lambda a: np.pad(a, ((1, 2), (0, 3))), "m", FI),
    ("np.pad", lambda a: np.pad(a, 2, mode="reflect"), "m", F),
    ("np.pad", lambda a: np.pad(a, 1, mode="edge"), "m", F),
    ("np.pad", lambda a: np.pad(a, 2, mode="wrap"), "m", F),
    ("np.pad", lambda a: np.pad(a, (1, 2), mode="symmetric", reflect_type="odd"), "m", F),
    ("np.pad", lambda a: np.pad(a, 2, mode="linear_ramp", end_values=(1, 2)), "m", F),
    ("np.pad", lambda a: np.pad(a, 2, mode="maximum", stat_length=2), "m", F),
    ("np.pad", lambda a: np.pad(a, 1, mode="mean"), "m", F),
    ("np.pad", lambda a: np.pad(a, 1, mode="median"), "m", F),
    ("np.pad", lambda a: np.pad(a, 1, mode="minimum"), "m", F),
    ("np.pad", lambda a: np.pad(a, 1, constant_values=7.5), "m", F),
    ("np.roll", lambda a: np.roll(a, 2, axis=1), "m", FI),
    ("np.roll", lambda a: np.roll(a, (1, -1), axis=(0, 1)), "m", F),
    ("np.copy", np.copy, "m", FI),
    ("np.flip", lambda a: np.flip(a, 0), "m", FI),
    ("np.fliplr", np.fliplr, "m", F),
    ("np.flipud", np.flipud, "m", F),
    ("np.rot90", lambda a: np.rot90(a, 3), "m", F),
    ("np.tile", lambda a: np.tile(a, (2, 1, 2)), "m", FI),
    ("np.repeat", lambda a: np.repeat(a, [1, 0, 2], axis=0), "m", FI),
    ("np.repeat", lambda a: np.repeat(a, 2), "m", F),
    ("np.append", lambda a, b: np.append(a, b, axis=0), "m m", F),
    ("np.take_along_axis", lambda a: np.take_along_axis(a, np.argsort(a, None), None), "v", F),
    ("np.moveaxis", lambda a: np.moveaxis(a, 0, -1), "t3", F),
    ("np.rollaxis", lambda a: np.rollaxis(a, 2), "t3", F),
    ("np.matrix_transpose", np.matrix_transpose, "t3", F),
    ("np.linalg.matrix_transpose", np.linalg.matrix_transpose, "t3", F),
    ("np.ravel", lambda a: np.ravel(a, order="F"), "m", F),
    ("np.diagonal", lambda a: np.diagonal(a, 1), "m", F),
    ("np.linalg.diagonal", lambda a: np.linalg.diagonal(a, offset=-1), "t3", F),
    ("np.diag", lambda a: np.diag(a, -1), "v", FI),
    ("np.diag", np.diag, "m", F),
    ("np.diagflat", lambda a: np.diagflat(a, 1), "v", F),
    ("np.delete", lambda a: np.delete(a, [0, 2], axis=1), "m", F),
    ("np.delete", lambda a: np.delete(a, slice(1, 3), axis=0), "m", F),
    ("np.resize", lambda a: np.resize(a, (5, 5)), "m", F),
    ("np.compress", lambda a: np.compress([True, False, True], a, axis=0), "m", F),
    # lengths from the data (size symbols): captured from the arrays as examples
    ("np.compress", lambda a: np.compress(a[0] > 0.3, a, axis=1), "m", F),
    ("np.nonzero", lambda a: np.nonzero(a > 0.3), "m", F),
    ("np.flatnonzero", lambda a: np.flatnonzero(a > 0.3) * 2, "m", F),
    ("np.argwhere", lambda a: np.argwhere(a > 0.3), "m", F),
    ("np.extract", lambda a: np.extract(a > 0.3, a), "m", FI),
    ("np.unique", lambda a: np.unique(np.round(a * 2), return_index=True, return_inverse=True,
                                      return_counts=True), "m", FI),
    ("np.lib.stride_tricks.sliding_window_view",
     lambda a: np.lib.stride_tricks.sliding_window_view(a, 3, axis=1), "m", F),
    ("np.insert", lambda a: np.insert(a, 1, 9.0, axis=1), "m", F),
    ("np.insert", lambda a, b: np.insert(a, [1], b[:4][None], axis=0), "m w", F),
    ("np.insert", lambda a, b: np.insert(a, (b[:2] * 0).astype(np.int64) + [1, 3], 9.0),
     "m w", FI),
    ("np.insert", lambda a, b: np.insert(a, np.argmax(b), b[:3], axis=1), "m w", F),
    ("np.roll", lambda a, b: np.roll(a, np.argmax(b) - 7, axis=1), "m w", FI),
    ("np.roll", lambda a, b: np.roll(a, np.argmin(b)), "m w", F),
    ("np.ediff1d", lambda a, b: np.ediff1d(a, to_end=b[:2], to_begin=b[3]), "m w", F),
    ("np.append", lambda a, b: np.append(a, b), "m v", F),
    ("np.column_stack", lambda a, b: np.column_stack([a, b]), "v v", F),
    ("np.dstack", lambda a, b: np.dstack((a, b)), "m m", F),
    ("np.select", lambda a, b: np.select([a > 0, b < 0], [a, b * 2], default=0.5), "m m", FI),
    ("np.select", lambda a: np.select([a > 0], [a]), "m", F),
    ("np.choose", lambda a: np.choose((a > 0).astype(np.int64), [a, a * 2]), "m", FI),
    ("np.choose", lambda a, b: np.choose(b.astype(np.int64), [a, a + 1], mode="clip"), "m m",
     F),
    ("np.take_along_axis", lambda a: np.take_along_axis(a, np.argsort(a, axis=1), axis=1),
     "m", F),
    ("np.broadcast_arrays", lambda a, b: np.broadcast_arrays(a, b), "m w", F),
    ("np.meshgrid", lambda a, b: np.meshgrid(a, b), "v w", F),
    ("np.meshgrid", lambda a, b: np.meshgrid(a, b, indexing="ij", sparse=True), "v w", F),
    ("np.unstack", lambda a: np.unstack(a, axis=1), "m", F),
    ("np.hsplit", lambda a: np.hsplit(a, 2), "m", F),
    ("np.hsplit", lambda a: np.hsplit(a, [1, -1, 9]), "v", F),
    ("np.vsplit", lambda a: np.vsplit(a, [2, 1]), "m", F),
    ("np.tile", lambda a: np.tile(a, 3), "t3", F),
    ("np.vsplit", lambda a: np.vsplit(a, [1]), "m", F),
    ("np.dsplit", lambda a: np.dsplit(a, 2), "t3", F),
    ("np.atleast_1d", np.atleast_1d, "s", F),
    ("np.atleast_2d", lambda a, b: np.atleast_2d(a, b), "v m", F),
    ("np.atleast_3d", np.atleast_3d, "m", F),
    # reductions, scans, sorts
    ("np.cumsum", lambda a: np.cumsum(a, axis=1), "m", ("float32", "int8", "bool")),
    ("np.cumsum", np.cumsum, "m", F),
    ("np.cumprod", lambda a: np.cumprod(a, axis=0, dtype=np.float64), "m", FI),
    ("np.nancumsum", lambda a: np.nancumsum(a, axis=1), "mnan", F),
    ("np.nancumprod", np.nancumprod, "mnan", F),
    ("np.cumulative_sum", lambda a: np.cumulative_sum(a, axis=1, include_initial=True), "m",
     FI),
    ("np.cumulative_prod", np.cumulative_prod, "v", FI),
    ("np.sort", lambda a: np.sort(a, axis=0), "m", FI),
    ("np.sort", lambda a: np.sort(a, axis=None, kind="stable"), "m", F),
    ("np.argsort", lambda a: np.argsort(a, axis=1, stable=True), "m", FI),
    ("np.sort_complex", np.sort_complex, "v", ("float64", "complex64")),
    ("np.partition", lambda a: np.partition(a, 2, axis=1), "m", FI),
    ("np.argpartition", lambda a: np.argpartition(a, (0, 2)), "m", F),
    ("np.nansum", lambda a: np.nansum(a, axis=0), "mnan", F),
    ("np.nanprod", np.nanprod, "mnan", F),
    ("np.nanmean", lambda a: np.nanmean(a, axis=1, keepdims=True), "mnan", F),
    ("np.nanmax", lambda a: np.nanmax(a, axis=0), "mnan", F),
    ("np.nanmin", np.nanmin, "mnan", F),
    ("np.nanvar", lambda a: np.nanvar(a, axis=1, ddof=1), "mnan", F),
    ("np.nanstd", lambda a: np.nanstd(a, axis=0), "mnan", F),
    ("np.nanargmax", lambda a: np.nanargmax(a, axis=0), "mnan", F),
    ("np.nanargmin", lambda a: np.nanargmin(a, axis=0), "mnan", F),
    ("np.ptp", lambda a: np.ptp(a, axis=1), "m", FI),
    ("np.count_nonzero", lambda a: np.count_nonzero(a, axis=0), "m", FI),
    ("np.median", lambda a: np.median(a, axis=1), "m", FI),
    ("np.nanmedian", lambda a: np.nanmedian(a, axis=0), "mnan", F),
    ("np.percentile", lambda a: np.percentile(a, [10, 50, 90], axis=1), "m", FI),
    ("np.percentile", lambda a: np.percentile(a, 30, method="nearest"), "m", F),
    ("np.quantile", lambda a: np.quantile(a, 0.25, axis=0, keepdims=True), "m", F),
    ("np.nanpercentile", lambda a: np.nanpercentile(a, 75, axis=1), "mnan", F),
    ("np.nanquantile", lambda a: np.nanquantile(a, [0.1, 0.9]), "mnan", F),
    ("np.average", lambda a, w: np.average(a, axis=1, weights=np.abs(w) + 1), "m w", FI),
    ("np.trace", np.trace, "m", FI),
    ("np.trace", lambda a: np.trace(a, 1, dtype=np.float64), "m", F),
    ("np.linalg.trace", np.linalg.trace, "t3", F),
    # products
    ("np.einsum", lambda a, b: np.einsum("ij,kj->ik", a, b), "m m", FI),
    ("np.einsum", lambda a, b: np.einsum("ij,kj->ik", a, b, optimize=True), "m m", F),
    ("np.einsum", lambda a: np.einsum("...j,...j", a, a), "t3", F),
    ("np.einsum", lambda a: np.einsum("ii->i", a), "sq", F),
    ("np.einsum", lambda a, b: np.einsum("bij,jk", a, b, optimize="greedy"), "t3 sq", F),
    ("np.tensordot", lambda a, b: np.tensordot(a, b, axes=([1], [1])), "m m", FI),
    ("np.tensordot", lambda a, b: np.tensordot(a, b, axes=1), "t3 sq", F),
    ("np.linalg.tensordot", lambda a, b: np.linalg.tensordot(a, b, axes=2), "t3 m", F),
    ("np.outer", np.outer, "v w", FI),
    ("np.linalg.outer", np.linalg.outer, "v w", F),
    ("np.inner", np.inner, "m t3", F),
    ("np.kron", np.kron, "m w", FI),
    ("np.vdot", np.vdot, "m m", FC),
    ("np.convolve", np.convolve, "v w", FI),
    ("np.convolve", lambda a, b: np.convolve(a, b, "same"), "v w", F),
    ("np.correlate", np.correlate, "v w", F),
    ("np.correlate", lambda a, b: np.correlate(a, b, mode="full"), "v w", FC),
    ("np.linalg.vecdot", np.linalg.vecdot, "m w", F),
    ("np.linalg.multi_dot", lambda a, b, c: np.linalg.multi_dot([a, b, c]), "w sq sq", F),
    ("np.cross", lambda a: np.cross(a[:, :3], a[:, 1:]), "m", FI),
    ("np.linalg.cross", lambda a: np.linalg.cross(a[:, :3], a[:, 1:]), "m", F),
    ("np.linalg.matmul", np.linalg.matmul, "m sq", F),
    ("np.vecdot", np.vecdot, "m w", FC),
    ("np.vecdot", lambda a, b: np.vecdot(a, b, axis=0), "m m", FC),
    ("np.vecdot", lambda a, b: np.vecdot(a, b[:3, :1], axis=-2), "t3 sq", F),
    ("np.matvec", np.matvec, "m w", FI),
    ("np.vecmat", np.vecmat, "w sq", F),
    ("np.matmul", np.matmul, "m sq", FI),
    # linalg
    ("np.linalg.inv", np.linalg.inv, "spd", F),
    ("np.linalg.inv", np.linalg.inv, "spd_batch", F),
    ("np.linalg.cholesky", np.linalg.cholesky, "spd", F),
    ("np.linalg.cholesky", lambda a: np.linalg.cholesky(a, upper=True), "spd_batch", F),
    ("np.linalg.matrix_power", lambda a: np.linalg.matrix_power(a, 3), "spd", FI),
    ("np.linalg.det", np.linalg.det, "spd_batch", F),
    ("np.linalg.slogdet", np.linalg.slogdet, "spd", F),
    ("np.linalg.solve", lambda a, b: np.linalg.solve(a, b[:3]), "spd v", F),
    ("np.linalg.solve", lambda a, b: np.linalg.solve(a, b), "spd_batch spd", F),
    ("np.linalg.pinv", np.linalg.pinv, "m", F),
    ("np.linalg.qr", np.linalg.qr, "m", F),
    ("np.linalg.qr", lambda a: np.linalg.qr(a, mode="complete"), "m", F),
    ("np.linalg.svd", np.linalg.svd, "m", F),
    ("np.linalg.svd", lambda a: np.linalg.svd(a, full_matrices=False), "t3", F),
    ("np.linalg.svdvals", np.linalg.svdvals, "m", F),
    ("np.linalg.eigh", np.linalg.eigh, "spd", F),
    ("np.linalg.eigvalsh", lambda a: np.linalg.eigvalsh(a, UPLO="U"), "spd_batch", F),
    ("np.linalg.norm", np.linalg.norm, "m", FI),
    ("np.linalg.norm", lambda a: np.linalg.norm(a, ord=1, axis=1, keepdims=True), "m", F),
    ("np.linalg.norm", lambda a: np.linalg.norm(a, "fro"), "m", F),
    ("np.linalg.norm", lambda a: np.linalg.norm(a, axis=(1, 2)), "t3", F),
    ("np.linalg.matrix_norm", lambda a: np.linalg.matrix_norm(a, ord="nuc"), "t3", F),
    ("np.linalg.vector_norm", lambda a: np.linalg.vector_norm(a, ord=3, axis=0), "m", F),
    ("np.linalg.matrix_rank", np.linalg.matrix_rank, "m", F),
    ("np.linalg.cond", np.linalg.cond, "spd", F),
    ("np.linalg.tensorinv", lambda a: np.linalg.tensorinv(a.reshape(3, 1, 3), ind=1),
     "spd", F),
    ("np.linalg.tensorsolve", lambda a, b: np.linalg.tensorsolve(a, b[:3]), "spd v", F),
    # fft
    ("np.fft.fft", np.fft.fft, "m", FC),
    ("np.fft.fft", lambda a: np.fft.fft(a, n=6, axis=0, norm="ortho"), "m", F),
    ("np.fft.ifft", lambda a: np.fft.ifft(a, 3), "m", FC),
    ("np.fft.rfft", lambda a: np.fft.rfft(a, n=7), "m", FI),
    ("np.fft.irfft", np.fft.irfft, "m", FC),
    ("np.fft.irfft", lambda a: np.fft.irfft(a, n=5, axis=0), "m", F),
    ("np.fft.hfft", np.fft.hfft, "m", FC),
    ("np.fft.ihfft", np.fft.ihfft, "m", F),
    ("np.fft.fftn", np.fft.fftn, "t3", F),
    ("np.fft.ifftn", lambda a: np.fft.ifftn(a, s=(2, 5), axes=(0, 2)), "t3", F),
    ("np.fft.rfftn", np.fft.rfftn, "t3", F),
    ("np.fft.irfftn", lambda a: np.fft.irfftn(a, s=(3, 6), axes=(1, 2)), "t3", FC),
    ("np.fft.fft2", np.fft.fft2, "m", F),
    ("np.fft.ifft2", lambda a: np.fft.ifft2(a, s=(4, 4)), "m", FC),
    ("np.fft.rfft2", np.fft.rfft2, "m", F),
    ("np.fft.irfft2", np.fft.irfft2, "m", FC),
    ("np.fft.fftshift", np.fft.fftshift, "m", F),
    ("np.fft.ifftshift", lambda a: np.fft.ifftshift(a, axes=1), "m", F),
    # pointwise
    ("np.fix", np.fix, "m", F),
    ("np.i0", np.i0, "m", F),
    ("np.sinc", np.sinc, "m", F),
    ("np.real", np.real, "m", FC),
    ("np.imag", np.imag, "m", FC),
    ("np.angle", lambda a: np.angle(a, deg=True), "m", FC),
    ("np.isreal", np.isreal, "m", FC),
    ("np.iscomplex", np.iscomplex, "m", FC),
    ("np.isneginf", np.isneginf, "m", F),
    ("np.isposinf", np.isposinf, "m", F),
    ("np.unwrap", lambda a: np.unwrap(a, axis=0), "m", F),
    ("np.nan_to_num", lambda a: np.nan_to_num(a, nan=-1.0), "m", FC),
    ("np.isclose", lambda a, b: np.isclose(a, b, rtol=0.5), "m w", F),
    ("np.round", lambda a: np.round(a, 2), "m", FI),
    ("np.around", np.around, "m", F),
    # numeric
    ("np.diff", lambda a: np.diff(a, n=2, axis=0), "m", FI),
    ("np.diff", lambda a: np.diff(a, prepend=0.0, append=a[:, :1]), "m", F),
    ("np.ediff1d", lambda a: np.ediff1d(a, to_begin=[1, 2]), "m", F),
    ("np.searchsorted", lambda a, b: np.searchsorted(a, b, side="right"), "sorted m", F),
    ("np.searchsorted", lambda a, b: np.searchsorted(a, b, sorter=np.argsort(a)), "v w", F),
    ("np.interp", lambda a, b: np.interp(a, b, b * 2), "m sorted", F),
    ("np.interp", lambda a, b: np.interp(a, b, b, left=0.0, period=3.0), "m sorted", F),
    ("np.digitize", lambda a, b: np.digitize(a, b, right=True), "m sorted", F),
    ("np.isin", lambda a, b: np.isin(a, b, invert=True), "m w", FI),
    ("np.vander", lambda a: np.vander(a, 3, increasing=True), "v", FI),
    ("np.polyval", np.polyval, "w m", FI),
    ("np.histogram", lambda a: np.histogram(a, bins=5, range=(-2, 2)), "v", F),
    ("np.histogram", lambda a, w: np.histogram(a[:4], bins=[-1, 0, 1], weights=w,
                                               density=True), "v w", F),
    ("np.histogram_bin_edges", lambda a: np.histogram_bin_edges(a, 4), "v", F),
    ("np.histogram2d", lambda a, b: np.histogram2d(a, b, bins=(2, 3)), "v v", F),
    ("np.cov", np.cov, "m", FI),
    ("np.cov", lambda a, b: np.cov(a, b, rowvar=False, ddof=0), "m m", F),
    ("np.corrcoef", np.corrcoef, "m", F),
    ("np.trapezoid", lambda a: np.trapezoid(a, dx=0.5, axis=0), "m", F),
    ("np.trapezoid", lambda a, b: np.trapezoid(a, b), "m w", F),
    ("np.linspace", lambda a, b: np.linspace(a, b, 4), "w w", FI),
    ("np.linspace", lambda a, b: np.linspace(a, b, 3, endpoint=False, axis=1), "m m", F),
    ("np.logspace", lambda a, b: np.logspace(a, b, 3), "w w", F),
    ("np.geomspace", lambda a, b: np.geomspace(np.abs(a) + 1, np.abs(b) + 2, 3), "w w", F),
    ("np.polyadd", np.polyadd, "v w", FI),
    ("np.polysub", np.polysub, "w v", F),
    ("np.polymul", np.polymul, "pv pw", FI),
    ("np.polyint", lambda a: np.polyint(a, 2), "v", F),
    ("np.polyder", np.polyder, "v", FI),
    ("np.polyder", lambda a: np.polyder(a, m=3), "w", F),
    ("np.poly", np.poly, "v", ("float32", "float64", "int64", "float16")),
    ("np.polyfit", lambda a, b: np.polyfit(a, b, 2), "v v", FI),
    ("np.polyfit", lambda a, b, w: np.polyfit(a[:4], b.T, 1, rcond=1e-3, w=np.abs(w) + 1),
     "v m w", F),
    ("np.gradient", np.gradient, "m", FI),
    ("np.gradient", lambda a: np.gradient(a, 0.5, axis=-1, edge_order=2), "m", F),
    ("np.gradient", lambda a, b: np.gradient(a, 2.0, np.cumsum(np.abs(b) + 0.5)), "m w", F),
    ("np.gradient", lambda a, b: np.gradient(a, b * 0 + 3.0, axis=0), "v v", F),
    ("np.histogramdd", lambda a: np.histogramdd(a, bins=(2, 3, 4, 1)), "m", F),
    ("np.histogramdd", lambda a, w: np.histogramdd(a[:, :2], bins=[[-1, 0, 1], 3],
                                                   range=[(-1, 1), (-2, 2)], weights=w[:3],
                                                   density=True), "m w", F),
    ("np.histogramdd", lambda a, b: np.histogramdd([a, b], bins=2), "v v", FI),
    ("np.block", lambda a, b: np.block([[a, b], [b, a]]), "m m", FI),
    ("np.block", lambda a, b: np.block([a, 1.5, b]), "v w", F),
    ("np.block", lambda a: np.block(a), "m", F),
    ("np.linalg.eig", np.linalg.eig, "sq", ("complex64", "complex128")),
    ("np.linalg.eigvals", np.linalg.eigvals, "sq", ("complex64", "complex128")),
    ("np.emath.sqrt", np.emath.sqrt, "m", ("complex64", "complex128", "uint8", "bool")),
    ("np.emath.log", np.emath.log, "m", ("complex64", "uint16")),
    ("np.emath.log2", np.emath.log2, "m", ("complex128", "uint8")),
    ("np.emath.log10", np.emath.log10, "m", ("complex64",)),
    ("np.emath.logn", lambda a: np.emath.logn(3, a), "m", ("complex128", "uint8")),
    ("np.emath.logn", lambda a, b: np.emath.logn(a, b), "m w", ("complex64",)),
    ("np.emath.power", lambda a, b: np.emath.power(a, b), "m w", ("complex64", "uint8")),
    ("np.emath.power", lambda a: np.emath.power(a, -2), "m", ("complex128", "uint8")),
    ("np.emath.arccos", np.emath.arccos, "m", ("complex64", "bool")),
    ("np.emath.arcsin", np.emath.arcsin, "m", ("complex128",)),
    ("np.emath.arctanh", np.emath.arctanh, "m", ("complex64", "bool")),
    ("np.real_if_close", lambda a: np.real_if_close(a) * 2, "m", FI),
    ("np.apply_along_axis", lambda a: np.apply_along_axis(np.cumsum, 1, a), "m", FI),
    ("np.apply_along_axis", lambda a: np.apply_along_axis(lambda r: r.max(), 0, a), "t3", F),
    ("np.apply_along_axis", lambda a: np.apply_along_axis(np.outer, -1, a, a[0, 0]), "t3", F),
    ("np.apply_over_axes", lambda a: np.apply_over_axes(np.sum, a, [0, 2]), "t3", FI),
    ("np.apply_over_axes", lambda a: np.apply_over_axes(np.mean, a, 1), "m", F),
    ("np.piecewise", lambda a: np.piecewise(a, [a < 0, a > 0.5], [-1, 2.5]), "m", FI),
    ("np.piecewise", lambda a, b: np.piecewise(a, [a < 0, b > 0], [-1.5, 0.5, 7]), "m m", F),
    ("np.piecewise", lambda a: np.piecewise(a, a > 0, [3]), "v", FI),
    # indices and bits
    ("np.lexsort", lambda a: np.lexsort((a[0], a[1])), "m", FI),
    ("np.ravel_multi_index", lambda a, b: np.ravel_multi_index((a, b), (3, 4)), "idx idx",
     ("int64",)),
    ("np.unravel_index", lambda a: np.unravel_index(a, (2, 2)), "idx", ("int64",)),
    ("np.ix_", lambda a, b: np.ix_(a[0], b[1]), "idx idx", ("int64",)),
    ("np.packbits", lambda a: np.packbits(a, axis=1), "bits", ("uint8",)),
    ("np.unpackbits", lambda a: np.unpackbits(a, count=-3), "bits", ("uint8",)),
    # hand-written handlers
    ("np.sum", lambda a: np.sum(a, axis=1, keepdims=True), "m", FI),
    ("np.prod", np.prod, "m", F),
    ("np.sum", lambda a: np.sum(a, dtype=np.float64), "m", ("float32", "int8", "bool")),
    ("np.prod", lambda a: np.prod(a, 1, np.int32), "m", ("int8", "float32")),
    ("np.mean", lambda a: np.mean(a, axis=0, dtype=np.float64), "m", ("float16", "int64")),
    ("np.var", lambda a: np.var(a, dtype=np.float64, ddof=1), "m", ("float16", "int64")),
    ("np.std", lambda a: np.std(a, 1, np.float32), "m", ("float16", "float64")),
    ("np.mean", lambda a: np.mean(a, 0), "m", FI),
    ("np.max", lambda a: np.max(a, axis=1), "m", F),
    ("np.amax", np.amax, "m", F),
    ("np.min", np.min, "m", F),
    ("np.amin", lambda a: np.amin(a, 0), "m", F),
    ("np.any", lambda a: np.any(a > 0, axis=0), "m", F),
    ("np.all", lambda a: np.all(a > 0), "m", F),
    ("np.var", lambda a: np.var(a, 0, ddof=1), "m", F),
    ("np.std", np.std, "m", F),
    ("np.argmax", lambda a: np.argmax(a, axis=1), "m", F),
    ("np.argmin", np.argmin, "m", F),
    ("np.reshape", lambda a: np.reshape(a, (4, 3)), "m", F),
    ("np.reshape", lambda a: np.reshape(a, (2, 6), order="F"), "m", FI),
    ("np.var", lambda a: np.var(a, axis=1, correction=1), "m", FI),
    ("np.std", lambda a: np.std(a, correction=0.5), "m", F),
    ("np.transpose", np.transpose, "m", F),
    ("np.permute_dims", lambda a: np.permute_dims(a, (2, 0, 1)), "t3", F),
    ("np.swapaxes", lambda a: np.swapaxes(a, 0, 2), "t3", F),
    ("np.expand_dims", lambda a: np.expand_dims(a, 1), "m", F),
    ("np.squeeze", np.squeeze, "s", F),
    ("np.broadcast_to", lambda a: np.broadcast_to(a, (2, 3, 4)), "m", F),
    ("np.tril", lambda a: np.tril(a, -1), "m", F),
    ("np.triu", np.triu, "m", F),
    ("np.concatenate", lambda a, b: np.concatenate([a, b], axis=1), "m m", F),
    ("np.concat", lambda a, b: np.concat([a, b]), "m m", F),
    ("np.stack", lambda a, b: np.stack((a, b), axis=-1), "m m", F),
    ("np.hstack", lambda a, b: np.hstack([a, b]), "m m", F),
    ("np.vstack", lambda a, b: np.vstack([a, b]), "m m", F),
    ("np.split", lambda a: np.split(a, 2, axis=1), "m", F),
    ("np.array_split", lambda a: np.array_split(a, 3, axis=1), "m", F),
    ("np.where", lambda a: np.where(a > 0, a, 0.5), "m", FI),
    ("np.clip", lambda a: np.clip(a, -0.5, 0.5), "m", FI),
    ("np.dot", np.dot, "m w", F),
    ("np.take", lambda a: np.take(a, [2, 0], axis=1), "m", F),
    ("np.take", lambda a: np.take(a, [0, 17, -20], mode="clip"), "m", FI),
    ("np.take", lambda a: np.take(a, [[1, 9], [-7, 2]], axis=1, mode="wrap"), "m", F),
    ("np.zeros_like", np.zeros_like, "m", F),
    ("np.empty_like", lambda a: np.copyto(e := np.empty_like(a, dtype=np.float32), a) or e,
     "m", F),  # every element set: the unset ones replay as zeros (tests/test_public_models.py)
    ("np.ones_like", lambda a: np.ones_like(a, dtype=np.int8), "m", F),
    ("np.full_like", lambda a: np.full_like(a, 3.5), "m", F),
    ("np.astype", lambda a: np.astype(a, np.float16), "m", F),
]
CASE_IDS = [f"{name}-{i}" for i, (name, *_rest) in enumerate(CASES)]
FROM_EXAMPLES = {"np.nonzero", "np.flatnonzero", "np.argwhere", "np.extract", "np.unique",
                 "np.compress"}
"""Functions whose result length depends on the data: captured with the arrays as examples
(a spec capture refuses them, REFUSED_CALLS)."""


def _inputs(name, arrays):
    """What a case is captured from: the arrays themselves for :data:`FROM_EXAMPLES`, else
    their specs."""
    if name in FROM_EXAMPLES:
        return [a.copy() for a in arrays]
    return [cv.spec(a.shape, a.dtype) for a in arrays]


def _bits_equal(expected, got):
    expected = np.asarray(expected)
    assert got.dtype == expected.dtype
    assert got.shape == expected.shape
    assert np.ascontiguousarray(got).tobytes() == np.ascontiguousarray(expected).tobytes()


def _kind(value):
    """The container structure of a result (a tensor stands for an ndarray or NumPy scalar)."""
    if isinstance(value, (tuple, list)):
        return (type(value).__name__, len(value))  # (a Python value a replay logs: plain)
    return "array"


def _results(value):
    """The arrays of a result, nested tuples and lists flattened in order (as the function
    form names them: ``out1_0``...)."""
    if not isinstance(value, (tuple, list)):
        return [value]
    return [array for item in value for array in _results(item)]


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_captured_function_replays_bit_for_bit(case, tmp_path):
    """Eager vs replay, and vs replay of the graph saved and loaded (params are plain data)."""
    name, fn, kinds, dtypes = case
    for dtype in dtypes:
        arrays = [make(k, dtype) for k in kinds.split()]
        with np.errstate(all="ignore"):
            eager = fn(*arrays)
        seen = {}

        def traced(*xs):
            out = fn(*xs)
            seen["kind"] = _kind(out)
            return out

        graph = cv.capture(traced, *_inputs(name, arrays))
        with np.errstate(all="ignore"):
            got = graph.replay(dict(zip(graph.inputs, arrays)))
        assert seen["kind"] == _kind(eager), (name, dtype)  # (logged by the replay, as a call)
        outs = [got[k] for k in graph.outputs]
        expected = _results(eager)
        assert len(outs) == len(expected)
        for e, o in zip(expected, outs):
            _bits_equal(e, o)
        path = tmp_path / f"{dtype}.json"
        graph.save(path)
        with np.errstate(all="ignore"):
            loaded = cv.load(path).replay(dict(zip(graph.inputs, arrays)),  # (no seen to log
                                          state="return")  # into: returned)
        for e, k in zip(expected, graph.outputs):
            _bits_equal(e, loaded[k])


def test_every_captured_gufunc_has_a_replay_case():
    tested = {name for name, *_ in CASES}
    gufuncs = {e.name for e in coverage.ufuncs() if e.status == "captured"
               and getattr(np, e.name[3:]).signature}
    assert gufuncs == {"np.matmul", "np.vecdot", "np.matvec", "np.vecmat"} <= tested


EDGE_SHAPES = [(), (0,), (1,), (2, 0), (0, 3), (1, 1), (2, 3, 1)]
# Edge shapes where capture is stricter than eager NumPy (it refuses at capture, never differs):
# reductions with axis=0 of a 0-d tensor (ops.reduced_shape), einsum repeated labels over an
# empty axis, tensorsolve of empty tensors, piecewise of a 0-d tensor (a 0-d array result), an
# inverse real transform of an empty axis padded to n points (NumPy returns unwritten memory).
STRICTER = {("np.amin", ()), ("np.any", ()), ("np.einsum", (0, 3)),
            ("np.linalg.tensorsolve", (0,)), ("np.linalg.tensorsolve", (2, 0)),
            ("np.linalg.tensorsolve", (0, 3)), ("np.piecewise", ()), ("np.fft.irfft", (0,)),
            ("np.fft.irfft", (0, 3))}


def _outcome(fn, arrays, capture, name=""):
    try:
        with np.errstate(all="ignore"):
            if not capture:
                return _results(fn(*arrays)), None
            graph = cv.capture(fn, *_inputs(name, arrays))
    except Exception as err:  # compared with the eager outcome by the caller
        return None, err
    try:
        with np.errstate(all="ignore"):
            got = graph.replay(dict(zip(graph.inputs, arrays)))
    except cv.ReplayError as err:
        return None, err
    return [got[k] for k in graph.outputs], None


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_edge_shapes_never_differ_from_eager(case):
    """Empty, 0-d and size-1 operands: the same result bit for bit, or capture raises (at
    capture where eager raises for the shapes alone; at replay where eager fails on values)."""
    name, fn, kinds, dtypes = case
    for shape in EDGE_SHAPES:
        arrays = [np.full(shape, 0.5, dtypes[0]) if np.dtype(dtypes[0]).kind in "fc"
                  else np.ones(shape, dtypes[0]) for _ in kinds.split()]
        eager, eager_err = _outcome(fn, arrays, capture=False)
        replay, capture_err = _outcome(fn, arrays, capture=True, name=name)
        if eager_err is None and capture_err is None:
            for e, o in zip(eager, replay):
                _bits_equal(e, o)
        elif eager_err is None:
            assert (name, shape) in STRICTER, (name, shape, capture_err)
        else:
            assert capture_err is not None, (name, shape, eager_err)


def test_every_captured_function_has_a_replay_case():
    tested = {name for name, *_ in CASES}
    funcs = coverage.dispatchable()
    captured = {e.name for e in coverage.functions() if e.status == "captured"
                and HANDLED[funcs[e.name]].__module__ != "capviz.numpy_api.writes"}
    assert sorted(captured - tested) == []  # (the writes, np.copyto..., have mutation tests)


def test_at_least_300_numpy_functions_are_captured():
    entries = coverage.functions() + coverage.ufuncs()
    assert sum(e.status == "captured" for e in entries) >= 300
    assert coverage.distinct_captured() >= 310  # aliases (np.abs, np.absolute) counted once


def test_every_dispatchable_function_is_captured_or_refused_by_name():
    for entry in coverage.functions():
        assert entry.status in ("captured", "answered", "data read", "refused"), entry
        if entry.status == "refused":
            assert entry.detail, entry.name


REFUSED_CALLS = [
    # refused from specs; from example arrays they record a size symbol (test_values.py)
    ("np.nonzero", lambda a: np.nonzero(a), r"np\.nonzero is not supported .*example array "
                                            r"instead of a spec"),
    ("np.unique", lambda a: np.unique(a), r"np\.unique is not supported .*symbolic length"),
    ("np.argwhere", lambda a: np.argwhere(a), r"np\.argwhere .*example array"),
    ("np.flatnonzero", lambda a: np.flatnonzero(a), r"np\.flatnonzero"),
    ("np.bincount", lambda a: np.bincount(a.astype(np.int64).ravel()), r"np\.bincount"),
    ("np.linalg.eig", lambda a: np.linalg.eig(a), r"np\.linalg\.eig .*eigh"),
    ("np.linalg.lstsq", lambda a: np.linalg.lstsq(a, a), r"np\.linalg\.lstsq .*pinv"),
    ("np.emath.sqrt", lambda a: np.emath.sqrt(a), r"np\.emath\.sqrt .*complex"),
    ("np.piecewise", lambda a: np.piecewise(a, [a > 0], [np.sin, 0.0]),
     r"np\.piecewise with a function .*x\[cond\].*np\.where\(cond, f\(x\), other\)"),
    ("np.polydiv", lambda a: np.polydiv(a[0], a[1]), r"np\.polydiv .*remainder"),
    ("np.poly of a matrix", np.poly, r"np\.poly of a square matrix .*np\.poly\(roots\)"),
    ("np.poly complex", lambda a: np.poly(a[0].astype(np.complex128)),
     r"np\.poly of complex roots .*conjugate pairs"),
    ("np.linalg.eigvals real", np.linalg.eigvals,
     r"np\.linalg\.eigvals of a float64 matrix .*eigvalsh.*complex128"),
    ("np.emath.arccos real", np.emath.arccos,
     r"np\.emath\.arccos of a float64 tensor .*astype\(np\.complex128\)"),
    ("np.emath.power int exponent", lambda a: np.emath.power(a.astype(np.complex64),
                                                             a.astype(np.int64)),
     r"np\.emath\.power of a int64 tensor"),
    ("polyfit full", lambda a: np.polyfit(a[0], a[1], 1, full=True),
     r"np\.polyfit\(\.\.\., full=\.\.\.\) .*np\.polyfit\(x, y, deg\)"),
    ("polyfit cov", lambda a: np.polyfit(a[0], a[1], 1, cov=True), r"cov= scales"),
    ("real_if_close complex", lambda a: np.real_if_close(a.astype(np.complex64)),
     r"np\.real_if_close of a complex tensor .*np\.real"),
    ("np.where(condition)", lambda a: np.where(a > 0), r"np\.where\(condition\) .*fill"),
    ("out=", lambda a: np.cumsum(a, out=a), r"np\.cumsum\(\.\.\., out=\.\.\.\)"),
    ("static tensor", lambda a: np.repeat(a, a.astype(np.int64)),
     r"np\.repeat\(\.\.\., repeats=<tensor>\) .*Python value"),
    ("pad empty", lambda a: np.pad(a, 1, mode="empty"), r"np\.pad\(\.\.\., mode='empty'\)"),
    ("qr r", lambda a: np.linalg.qr(a, mode="r"), r"np\.linalg\.qr\(\.\.\., mode='r'\)"),
    ("svd compute_uv", lambda a: np.linalg.svd(a, compute_uv=False), r"svdvals"),
    ("median overwrite", lambda a: np.median(a, overwrite_input=True), r"overwrite_input"),
    ("pad callable", lambda a: np.pad(a, 1, mode=lambda *a: None), r"np\.pad\(\.\.\., mode="),
]


@pytest.mark.parametrize("case", REFUSED_CALLS, ids=[c[0] for c in REFUSED_CALLS])
def test_refused_function_is_named_with_its_alternative(case):
    _, fn, pattern = case
    with pytest.raises(cv.UnsupportedOperationError, match="(?s)" + pattern) as info:
        cv.capture(fn, cv.spec((3, 3), "float64"))
    violations = info.value.graph.violations
    assert violations[-1].kind == "unsupported_op"
    assert "test_numpy_coverage.py" in violations[-1].message


def test_boolean_mask_read_is_refused_with_the_alternative():
    with pytest.raises(cv.UnsupportedOperationError,
                       match=r"(?s)test_numpy_coverage\.py:\d+.*tensor\[mask\] \(a read through a "
                             r"boolean mask\).*number of True entries.*np\.where\(mask, t, fill\)"):
        cv.capture(lambda x: x[x > 0], cv.spec((3,)))


def test_every_refused_function_raises_its_own_message():
    x = cv.tensor(np.ones((2, 2)), device=cv.Device("numpy"))
    for entry in coverage.functions():
        if entry.status != "refused" or "alias of" in entry.detail:
            continue
        func = coverage.dispatchable()[entry.name]
        with pytest.raises(cv.UnsupportedOperationError) as info:
            x.__array_function__(func, (), (x,), {})
        assert entry.name in str(info.value)
        assert entry.detail.split(";")[0] in str(info.value)
        assert "test_numpy_coverage.py:" in str(info.value)  # the user's line, eager too


def test_eager_tensors_run_the_numpy_function():
    x = make("spd", "float64")
    t = cv.tensor(x, device=cv.Device("numpy"))
    _bits_equal(np.linalg.inv(x), np.linalg.inv(t).numpy())
    _, r = np.linalg.qr(t)
    assert type(np.linalg.qr(t)) is type(np.linalg.qr(x))
    _bits_equal(np.linalg.qr(x).R, r.numpy())


def test_unknown_keyword_of_a_kwargs_function_is_refused_by_name():
    with pytest.raises(cv.UnsupportedOperationError, match=r"np\.pad\(\.\.\., bogus=\.\.\.\)"):
        cv.capture(lambda x: np.pad(x, 1, bogus=3), cv.spec((2,)))


# --- data reads and answers from shapes --------------------------------------------------------


def test_allclose_and_array_equal_are_data_reads():
    def fn(x):
        return np.allclose(x, x)

    with pytest.raises(cv.DataReadError, match=r"np\.allclose\(\)") as info:
        cv.capture(fn, cv.spec((3,)))
    assert info.value.graph.violations[0].kind == "data_read"
    eager = cv.tensor(np.arange(3.0), device=cv.Device("numpy"))
    assert np.array_equal(eager, np.arange(3.0)) is True


class _Seen(dict):
    """What the captured function saw: a dict subclass capviz does not walk, so what it
    stores stays from the capture's run (a plain dict's values are logged by each replay,
    and ndarrays stored there refused)."""


def test_functions_of_shapes_answer_as_numpy_does():
    seen = _Seen()

    def fn(x):
        seen["path"] = np.einsum_path("ij,jk", x, x.T)
        seen["tril"] = np.tril_indices_from(x)
        seen["complex"] = np.iscomplexobj(x)
        return x + 1

    cv.capture(fn, cv.spec((3, 3), "float32"))
    a = np.zeros((3, 3), np.float32)
    assert seen["path"] == np.einsum_path("ij,jk", a, a.T)
    assert all(np.array_equal(s, e) for s, e in zip(seen["tril"], np.tril_indices_from(a)))
    assert seen["complex"] is False


# --- shape rules are data-free ------------------------------------------------------------------

BIG = (10**6, 10**6)
STRUCTURAL = [
    lambda x: np.flip(x, 0), lambda x: np.moveaxis(x, 0, 1), lambda x: np.rot90(x),
    lambda x: np.ravel(x), lambda x: np.diagonal(x), lambda x: np.tile(x, (2, 1)),
    lambda x: np.roll(x, 3, axis=1), lambda x: np.pad(x, 2, mode="reflect"),
    lambda x: np.copy(x), lambda x: np.cumsum(x, axis=1), lambda x: np.sort(x),
    lambda x: np.median(x, axis=0), lambda x: np.linalg.inv(x), lambda x: np.linalg.qr(x),
    lambda x: np.fft.rfft(x), lambda x: np.einsum("ij,jk->ik", x, x),
    lambda x: np.lib.stride_tricks.sliding_window_view(x, 3, axis=1),
    lambda x: np.broadcast_arrays(x, x[0]), lambda x: np.hsplit(x, 2),
    lambda x: np.linspace(x[0], x[1], 10**9), lambda x: np.vander(x[0], 10**9),
    lambda x: np.histogram(x, bins=10**9), lambda x: np.repeat(x, 2, axis=0),
    lambda x: np.take_along_axis(x, np.argsort(x, axis=1), axis=1),
    lambda x: np.append(x, x, axis=0), lambda x: np.append(x, x),
]


def test_a_huge_capture_allocates_nothing():
    def program(x):
        return [out for f in STRUCTURAL for out in _results(f(x))]

    cv.capture(program, cv.spec((4, 4), "float64"))  # warm caches
    tracemalloc.start()
    try:
        graph = cv.capture(program, cv.spec(BIG, "float64"))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 5 * 2**20
    assert graph.nodes[-1].shape is not None


# --- one definition per op: handlers and methods against NumPy's signatures --------------------


def _params(sig, skip_first=False):
    params = list(sig.parameters.values())[1 if skip_first else 0:]
    return [(p.name, p.kind) for p in params]


def test_generated_handlers_have_numpy_signatures():
    for spec in SPECS.values():
        func = spec.numpy_function
        if spec.path == "einsum":
            continue
        assert inspect.signature(HANDLED[func]) == inspect.signature(func), spec.path


HAND_WRITTEN = [np.sum, np.prod, np.mean, np.max, np.min, np.any, np.all, np.var, np.std,
                np.argmax, np.argmin, np.transpose, np.swapaxes, np.expand_dims, np.squeeze,
                np.broadcast_to, np.tril, np.triu, np.stack, np.split, np.array_split,
                np.dot, np.take, np.round, np.around, np.astype, np.concatenate, np.hstack,
                np.vstack, np.reshape, np.block, np.apply_along_axis, np.apply_over_axes,
                np.piecewise, np.real_if_close, np.putmask, np.fill_diagonal, np.histogramdd,
                np.polyder, np.poly]


@pytest.mark.parametrize("func", HAND_WRITTEN, ids=lambda f: f.__name__)
def test_hand_written_handler_takes_numpy_parameters(func):
    mine = [name for name, _ in _params(inspect.signature(HANDLED[func]))]
    theirs = [name for name, _ in _params(inspect.signature(func))]
    assert mine == theirs


@pytest.mark.parametrize("name", sorted(methods.SAME_AS_FUNCTION))
def test_generated_method_matches_the_functions_parameters(name):
    """t.name(*args) is np.func(t, *args): ndarray's method parameters are the function's."""
    method = _params(inspect.signature(getattr(np.ndarray, name)), skip_first=True)
    func = _params(inspect.signature(methods.SAME_AS_FUNCTION[name]), skip_first=True)
    method_names = [n for n, kind in method if kind is not inspect.Parameter.VAR_KEYWORD]
    func_names = [n for n, kind in func if kind is not inspect.Parameter.VAR_KEYWORD]
    renamed = {"clip": {"min": "a_min", "max": "a_max"}, "dot": {"other": "b"}}.get(name, {})
    assert [renamed.get(n, n) for n in method_names] == func_names[:len(method_names)]
    assert inspect.signature(getattr(cv.Tensor, name)) == inspect.signature(
        getattr(np.ndarray, name))


# --- the ndarray API ---------------------------------------------------------------------------

METHOD_CASES = [
    ("squeeze", lambda t: t[None].squeeze(0)), ("dot", lambda t: t.dot(t.T)),
    ("copy", lambda t: t.copy()), ("flatten", lambda t: t.flatten()),
    ("ravel", lambda t: t.ravel()), ("cumsum", lambda t: t.cumsum(1)),
    ("cumprod", lambda t: t.cumprod(axis=0)), ("prod", lambda t: t.prod(0, keepdims=True)),
    ("any", lambda t: (t > 0).any(1)), ("all", lambda t: (t > 0).all()),
    ("round", lambda t: t.round(1)), ("repeat", lambda t: t.repeat(2, axis=0)),
    ("argsort", lambda t: t.argsort(0)), ("argpartition", lambda t: t.argpartition(1)),
    ("clip", lambda t: t.clip(-0.5, 0.5)), ("clip", lambda t: t.clip(min=0)),
    ("clip", lambda t: t.clip(max=0.1)), ("conj", lambda t: t.conj()),
    ("conjugate", lambda t: t.conjugate()), ("real", lambda t: t.real),
    ("imag", lambda t: t.imag), ("diagonal", lambda t: t.diagonal(1)),
    ("trace", lambda t: t.trace()),
    # a sorted array: searchsorted of an unsorted one is an accident of the search (refused)
    ("searchsorted", lambda t: np.sort(t[0]).searchsorted(t[1])),
    ("view", lambda t: t.view(np.int64) if t.dtype == np.float64 else t.view(np.int32)),
    ("view", lambda t: t.view(np.uint8)), ("sum", lambda t: t.sum(1, dtype=np.float64)),
    ("mean", lambda t: t.mean(0, np.float64)), ("prod", lambda t: t.prod(dtype=np.int64)),
    ("mean", lambda t: t.mean(axis=0)), ("max", lambda t: t.max(1)),
    ("min", lambda t: t.min()), ("std", lambda t: t.std(0, ddof=1)),
    ("var", lambda t: t.var()), ("argmax", lambda t: t.argmax(1)),
    ("argmin", lambda t: t.argmin()), ("reshape", lambda t: t.reshape(4, 3)),
    ("reshape", lambda t: t.reshape((2, -1), order="C")),
    ("transpose", lambda t: t.transpose(1, 0)), ("transpose", lambda t: t.transpose()),
    ("swapaxes", lambda t: t.swapaxes(0, 1)), ("astype", lambda t: t.astype(np.int16)),
    ("astype", lambda t: t.astype(np.float64, casting="safe")), ("take", lambda t: t.take(3)),
    ("compress", lambda t: t.compress([1, 0, 1], axis=0)), ("mT", lambda t: t.mT),
    ("T", lambda t: t.T), ("choose", lambda t: (t > 0).astype(np.int8).choose([t, -t])),
]


@pytest.mark.parametrize("case", METHOD_CASES, ids=[f"{c[0]}-{i}" for i, c in
                                                    enumerate(METHOD_CASES)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_ndarray_method_replays_bit_for_bit(case, dtype):
    _, fn = case
    a = make("m", dtype)
    graph = cv.capture(fn, cv.spec(a.shape, dtype))
    _bits_equal(fn(a), graph.replay({"t": a})["out"])


def test_metadata_attributes_are_ndarrays():
    def fn(t):
        assert (t.itemsize, t.nbytes, t.size, t.ndim, t.shape) == (4, 48, 12, 2, (3, 4))
        return t

    cv.capture(fn, cv.spec((3, 4), "float32"))


@pytest.mark.parametrize("name", ["item", "tolist", "tobytes"])
def test_value_methods_are_data_reads(name):
    with pytest.raises(cv.DataReadError, match=rf"\.{name}\(\)"):
        cv.capture(lambda t: getattr(t + 1, name)(), cv.spec((1,), "float32"))


def test_every_ndarray_attribute_is_supported_or_refused():
    entries = coverage.ndarray_attributes()
    assert [e.name for e in entries if e.status == "missing"] == []


@pytest.mark.parametrize("name", ["strides", "flat", "tofile", "byteswap"])
def test_unsupported_ndarray_attribute_is_refused_by_name(name):
    def fn(t):
        attr = getattr(t, name)
        return attr() if callable(attr) else attr

    with pytest.raises(cv.UnsupportedOperationError, match=rf"tensor\.{name}"):
        cv.capture(fn, cv.spec((3,), "float32"))


def test_unknown_attribute_is_still_an_attribute_error():
    t = cv.tensor(np.ones(2), device=cv.Device("numpy"))
    assert not hasattr(t, "no_such_thing")


def test_astype_checks_casting_as_numpy_does():
    t = cv.tensor(np.ones(2), device=cv.Device("numpy"))
    with pytest.raises(TypeError, match="according to the rule 'safe'"):
        t.astype(np.int32, casting="safe")
    with pytest.raises(TypeError):
        np.ones(2).astype(np.int32, casting="safe")


# --- the coverage page ---------------------------------------------------------------------------


def test_coverage_page_is_current():
    page = open(os.path.join(ROOT, "docs", "numpy-coverage.md"), encoding="utf-8").read()
    assert page == coverage.markdown(), "docs/numpy-coverage.md is stale: run " \
                                        "python docs/gen_coverage.py"


@pytest.mark.parametrize("name,fn,op", [
    ("np.corrcoef", lambda a: np.corrcoef(a), "corrcoef"),
    ("np.linalg.inv", lambda a: np.linalg.inv(a), "linalg.inv"),
    ("np.fft.fft", lambda a: np.fft.fft(a), "fft.fft"),
    ("np.polyval", lambda a: np.polyval(a[0], a), "polyval"),
    ("np.sinc", lambda a: np.sinc(a), "sinc"),
])
def test_the_jax_column_of_an_op_no_subnormal_check_covers_says_what_a_replay_does(name, fn,
                                                                                   op):
    # a default JAX replay refuses it by name; arithmetic='xla' runs it within the tolerance
    pytest.importorskip("jax")
    assert coverage.engines(name)[0] == "refused (arithmetic='xla': tolerance)"
    a = np.array([[2.0, 1.0], [1.0, 3.0]])
    graph = cv.capture(fn, cv.spec(a.shape, a.dtype))
    with pytest.raises(cv.UnsupportedOperationError,
                       match=rf"^op '{op}' cannot run on the jax backend: XLA flushes subnormal "
                             r"floats .*arithmetic='xla'"):
        graph.replay({"a": a}, backend="jax")
    got = graph.replay({"a": a}, backend="jax", arithmetic="xla", to_numpy=True)["out"]
    np.testing.assert_allclose(got, fn(a), rtol=1e-4, atol=1e-4)


def test_supported_functions_lists_the_captured_ones():
    names = set(cv.supported_functions())
    assert {"np.pad", "np.einsum", "np.linalg.inv", "np.fft.rfft", "np.cumsum"} <= names
    assert "np.intersect1d" not in names


def _complex_rows():
    """The captured ufunc rows of one output NumPy computes on complex128 operands."""
    rows = []
    for e in coverage.ufuncs():
        ufunc = getattr(np, e.name[3:])
        complex_in = "D" * ufunc.nin
        if e.status == "captured" and ufunc.nout == 1 and not ufunc.signature \
                and any(t in (f"{complex_in}->D", f"{complex_in}->d") for t in ufunc.types):
            rows.append((e.name, ufunc))
    return rows


@pytest.mark.parametrize("name,ufunc", _complex_rows(), ids=[n for n, _ in _complex_rows()])
def test_the_jax_column_says_what_a_replay_does_with_complex_operands(name, ufunc):
    # review 3 finding 31: each row says it, not only the legend
    pytest.importorskip("jax")
    jax_column = coverage.engines(name)[0]
    operands = [np.array([0.5 + 0.25j, -1.5 + 2.0j, 0.75 - 0.5j])] * ufunc.nin
    graph = cv.capture(ufunc, *[cv.spec(3, "complex128") for _ in range(ufunc.nin)])
    feed = dict(zip(graph.inputs, operands))
    refused = "complex: refused" in jax_column or jax_column.startswith("refused") or (
        "refused by a complex one" in jax_column)  # divide: two complex operands
    if refused:
        with pytest.raises(cv.UnsupportedOperationError):
            graph.replay(feed, backend="jax")
        return
    assert "complex: checked" in jax_column or "complex: exact" in jax_column \
        or jax_column == "exact", jax_column
    got = graph.replay(feed, backend="jax", to_numpy=True)["out"]
    np.testing.assert_allclose(got, ufunc(*operands), rtol=1e-4, atol=1e-4)
