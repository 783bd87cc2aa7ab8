"""Running the differential suite: every case on every backend, totals per backend and class."""

from __future__ import annotations

import collections
import dataclasses
import importlib.util
from collections.abc import Callable, Iterable, Sequence

from capviz.backends import registry

from . import cases as _cases
from . import classify
from .cases import Case
from .worker import CRASH, TIMEOUT, EagerWorker

BACKENDS = ("numpy", "jax", "dask", "dask2")
"""The rows every case replays on (those whose engine is installed): a backend's name, or a
row of :data:`ROWS`."""

ROWS = {"dask2": ("dask", {"chunks": 2})}
"""Rows that replay on a backend with options, by name: ``dask2`` is Dask with every input in
chunks of 2 along each axis (``dask``'s ``chunks="auto"`` gives the suite's small arrays one
chunk, so only this row reaches what Dask does over several chunks: sums combined chunk by
chunk, rechunks, overlaps)."""

EAGER_LIMIT = 20.0
"""Seconds eager NumPy may take on one case (in the worker process) before the case is classed
``eager_timeout``: every case takes milliseconds, but NumPy's LAPACK can loop forever."""


@dataclasses.dataclass
class Outcome:
    case: Case
    backend: str
    kind: str
    detail: str


def row(name: str) -> tuple[str, dict]:
    """The backend a row replays on and its replay options (:data:`ROWS`)."""
    return ROWS.get(name, (name, {}))


def available(names: Sequence[str] = BACKENDS) -> list[str]:
    """The rows of ``names`` whose engine is installed."""
    engines = {"jax": "jax", "dask": "dask"}
    return [n for n in names if row(n)[0] not in engines
            or importlib.util.find_spec(engines[row(n)[0]]) is not None]


def run(cases: Iterable[Case], backends: Sequence[str], into: list[Outcome] | None = None,
        progress: Callable[[int], None] | None = None,
        eager_limit: float = EAGER_LIMIT) -> list[Outcome]:
    """Each case eagerly (in a worker process, at most ``eager_limit`` seconds: past it the
    case is ``eager_timeout`` on every backend, and not replayed, since a replay would run the
    same NumPy code), captured once per signature, replayed on each backend. The outcomes go
    into ``into`` as they come (so an interrupted run keeps what it did); ``progress`` is
    called with the number of cases done after each case."""
    outcomes = [] if into is None else into
    known = {b.id: b for b in _cases.all_bases()}
    with EagerWorker(eager_limit, known) as worker:
        _run(cases, backends, outcomes, progress, worker)
    return outcomes


def _run(cases: Iterable[Case], backends: Sequence[str], outcomes: list[Outcome],
         progress: Callable[[int], None] | None, worker: EagerWorker) -> None:
    graphs: dict = {}
    for done, case in enumerate(cases, 1):
        eager = worker.call("eager", case.base, case.arrays)
        if eager in (TIMEOUT, CRASH):
            detail = (f"eager NumPy ran past {worker.limit:g} s" if eager == TIMEOUT
                      else "eager NumPy's worker process died")
            outcomes.extend(Outcome(case, name, f"eager_{eager}", detail) for name in backends)
        else:
            want, eager_error = eager
            _replays(case, backends, want, eager_error, graphs, outcomes, worker)
        if progress is not None:
            progress(done)


def _replays(case: Case, backends: Sequence[str], want: list | None,
             eager_error: BaseException | None, graphs: dict, outcomes: list[Outcome],
             worker: EagerWorker) -> None:
    """The case captured (once per signature) and replayed on each backend, classified."""
    graph = graphs.get(case.signature)
    if graph is None:
        graph = graphs[case.signature] = classify.capture(case.base.fn, case.arrays)
    limits: dict = {}  # the contractions' declared bounds (classify.contraction_limits),
    #                    by whether x @ w + b outputs are held to their product's (JAX's rule)
    for name in backends:
        engine, options = row(name)
        backend = registry.get(engine)
        if isinstance(graph, BaseException):
            got, error = None, graph
        else:
            got, error = classify.replay(graph, case.arrays, engine, **options)
        declared = set() if error is not None else classify.declared_inexact(graph, backend)
        kept_adds = engine == "jax"
        if kept_adds not in limits and error is None and not backend.exact:  # once per case
            limits[kept_adds] = classify.contraction_limits(graph, case.arrays, kept_adds)
        kind = classify.classify(want, eager_error, got, error, backend, declared,
                                 limits.get(kept_adds))
        if kind in ("silent", "tolerance") and got is not None and want is not None:
            # NumPy's own answer on the same values at another alignment?
            answers = worker.call("answers", case.base, case.arrays)
            for other in answers if isinstance(answers, list) else []:
                if classify.compare(got, other, backend) == "exact":
                    kind = "exact"
                    break
        detail = "" if error is None else f"{type(error).__name__}: {error}"
        if kind == "silent" and got is not None and want is not None:
            detail = classify.difference(got, want)
        if eager_error is not None:
            detail += f" | eager {type(eager_error).__name__}: {eager_error}"
        outcomes.append(Outcome(case, name, kind, detail[:400]))


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
