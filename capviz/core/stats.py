"""Per-node value statistics, shown in tooltips and the view's value panel."""

from __future__ import annotations

import dataclasses

import numpy as np


@dataclasses.dataclass
class Stats:
    """Summary of one node's value."""

    min: float
    max: float
    mean: float
    std: float
    nan: int
    inf: int

    def text(self) -> str:
        """One line for tooltips."""
        return (f"min {self.min:.4g}  max {self.max:.4g}  mean {self.mean:.4g}  "
                f"std {self.std:.4g}  nan {self.nan}  inf {self.inf}")


def value_stats(arr: np.ndarray) -> Stats | None:
    """Statistics of a host array (``None`` for non-numeric or empty values); an engine's
    array goes through ``capviz.backends.registry.host_array`` first."""
    if arr.dtype.kind not in "biuf" or arr.size == 0:
        return None
    a = arr.astype(np.float64)
    finite = a[np.isfinite(a)]
    nan, inf = int(np.isnan(a).sum()), int(np.isinf(a).sum())
    if finite.size == 0:
        return Stats(float("nan"), float("nan"), float("nan"), float("nan"), nan, inf)
    return Stats(float(finite.min()), float(finite.max()), float(finite.mean()),
                 float(finite.std()), nan, inf)
