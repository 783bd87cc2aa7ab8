"""Running the differential suite: every case on every backend, totals per backend and class."""

from __future__ import annotations

import collections
import dataclasses
import importlib.util
from collections.abc import Callable, Iterable, Sequence

from capviz.backends import registry

from . import classify
from .cases import Case

BACKENDS = ("numpy", "jax", "dask")
"""The backends every case replays on (those installed)."""


@dataclasses.dataclass
class Outcome:
    case: Case
    backend: str
    kind: str
    detail: str


def available(names: Sequence[str] = BACKENDS) -> list[str]:
    """The backends of ``names`` whose engine is installed."""
    engines = {"jax": "jax", "dask": "dask.array"}
    return [n for n in names if n not in engines or importlib.util.find_spec(
        engines[n].split(".")[0]) is not None]


def run(cases: Iterable[Case], backends: Sequence[str], into: list[Outcome] | None = None,
        progress: Callable[[int], None] | None = None) -> list[Outcome]:
    """Each case eagerly, captured once per signature, replayed on each backend. The outcomes
    go into ``into`` as they come (so an interrupted run keeps what it did); ``progress`` is
    called with the number of cases done after each case."""
    graphs: dict = {}
    outcomes = [] if into is None else into
    for done, case in enumerate(cases, 1):
        want, eager_error = classify.eager(case.base.fn, case.arrays)
        graph = graphs.get(case.signature)
        if graph is None:
            graph = graphs[case.signature] = classify.capture(case.base.fn, case.arrays)
        for name in backends:
            backend = registry.get(name)
            if isinstance(graph, BaseException):
                got, error = None, graph
            else:
                got, error = classify.replay(graph, case.arrays, name)
            declared = set() if error is not None else classify.declared_inexact(graph,
                                                                                  backend)
            kind = classify.classify(want, eager_error, got, error, backend, declared)
            if kind in ("silent", "tolerance") and got is not None and want is not None:
                # NumPy's own answer on the same values at another alignment?
                for other in classify.eager_answers(case.base.fn, case.arrays):
                    if classify.compare(got, other, backend) == "exact":
                        kind = "exact"
                        break
            detail = "" if error is None else f"{type(error).__name__}: {error}"
            if eager_error is not None:
                detail += f" | eager {type(eager_error).__name__}: {eager_error}"
            outcomes.append(Outcome(case, name, kind, detail[:400]))
        if progress is not None:
            progress(done)
    return outcomes


def totals(outcomes: Iterable[Outcome]) -> dict[str, collections.Counter]:
    """Counts per backend and class."""
    table: dict[str, collections.Counter] = {}
    for o in outcomes:
        table.setdefault(o.backend, collections.Counter())[o.kind] += 1
    return table


def table(outcomes: Sequence[Outcome]) -> str:
    """The totals as a Markdown table (one row per backend)."""
    counts = totals(outcomes)
    lines = ["| replay | " + " | ".join(classify.CLASSES) + " | cases |",
             "|---" * (len(classify.CLASSES) + 2) + "|"]
    for name, c in counts.items():
        lines.append(f"| {name} | " + " | ".join(str(c[k]) for k in classify.CLASSES)
                     + f" | {sum(c.values())} |")
    return "\n".join(lines)
