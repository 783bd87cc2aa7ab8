"""The cases of the differential suite: the op table's examples and :mod:`.forms`, each with
its data inputs drawn by a seeded sampler (dtype, value generator, shape, layout)."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable

import numpy as np

from . import compositions, values
from .forms import FORMS

EDGE_SHAPES = [(), (0,), (1,), (2, 0), (1, 1)]
"""Shapes given to every data input of an edge case (empty, 0-d, size 1)."""

SKIPPED = {"random": "draws of cv.random, which eager NumPy has not (tests/test_rng.py "
                     "compares them across backends)"}
"""Examples the suite leaves out, with the reason."""


@dataclasses.dataclass(frozen=True)
class Base:
    """A program and its inputs' templates: a data input is re-drawn by the sampler (its
    template gives the shape), a fixed one (an index) is passed as it is."""

    id: str
    fn: Callable
    templates: tuple
    data: tuple  # per input: True when the sampler draws it


@dataclasses.dataclass(frozen=True)
class Case:
    """One case: a base program with drawn inputs."""

    base: Base
    dtype: str
    generator: str
    shape: str  # "own", or the edge shape it was given
    layout: str  # "C" or "strided"
    arrays: tuple

    @property
    def id(self) -> str:
        return f"{self.base.id}[{self.dtype},{self.generator},{self.shape},{self.layout}]"

    @property
    def signature(self) -> tuple:
        """What its capture depends on: the program and its inputs' shapes and dtypes."""
        return (self.base.id, tuple((a.shape, a.dtype.str) for a in self.arrays))


def _examples() -> list:
    """:func:`helpers.op_examples.examples`, their inputs drawn from the generators' seeds
    (whatever drew from them before), the generators' states kept."""
    import test_numpy_coverage
    from helpers import op_examples

    generators = [(op_examples, "_RNG", 20261130), (test_numpy_coverage, "RNG", 7)]
    saved = [(module, name, getattr(module, name)) for module, name, _ in generators]
    try:
        for module, name, seed in generators:
            setattr(module, name, np.random.default_rng(seed))
        return op_examples.examples()
    finally:
        for module, name, rng in saved:
            setattr(module, name, rng)


@functools.cache
def bases() -> tuple[Base, ...]:
    """Every example of the op table (:func:`helpers.op_examples.examples`) and every form."""
    out = []
    for name, fn, arrays in _examples():
        if name in SKIPPED:
            continue
        ufunc = name.startswith("ufunc.")
        data = tuple(ufunc or a.dtype.kind in "fc" for a in arrays)
        out.append(Base(name, fn, tuple(arrays), data))
    for name, fn, inputs in FORMS:
        templates = tuple(i[0] if isinstance(i, tuple) and isinstance(i[0], np.ndarray)
                          else np.zeros(i) for i in inputs)
        data = tuple(not (isinstance(i, tuple) and isinstance(i[0], np.ndarray))
                     for i in inputs)
        out.append(Base(f"form.{name}", fn, templates, data))
    return tuple(out)


@functools.cache
def composition_bases() -> tuple[Base, ...]:
    """Every composition of :mod:`.compositions` (a producer, a path, a consumer, values that
    cancel or not): drawn by :func:`compose`, beside the op table's cases."""
    templates = tuple(np.zeros(shape) for shape in compositions.SHAPES)
    return tuple(Base(name, fn, templates, (True,) * len(templates))
                 for name, fn, _ in compositions.table())


@functools.cache
def _ci_compositions() -> frozenset[str]:
    return frozenset(name for name, _, ci in compositions.table() if ci)


def all_bases() -> tuple[Base, ...]:
    """:func:`bases` and :func:`composition_bases`: every base a case can be drawn from."""
    return bases() + composition_bases()


def compose(seed: int, per_signature: int = 1, only: str = "", every: bool = True) -> list[Case]:
    """Each composition whose id holds ``only`` (every one for ``""``; with ``every`` false,
    those of the CI profile only: :func:`compositions.table`), drawn ``per_signature`` times by
    a seeded sampler: a dtype of :data:`compositions.DTYPES` and a layout per base, normal
    values first, then the other generators in a drawn order."""
    rng = np.random.default_rng([seed, 37])
    out = []
    for base in composition_bases():
        if only not in base.id or not (every or base.id in _ci_compositions()):
            continue
        dtype = compositions.DTYPES[rng.integers(len(compositions.DTYPES))]
        layout = "strided" if rng.random() < 0.25 else "C"
        others = [values.GENERATORS[i] for i in rng.permutation(len(values.GENERATORS))]
        order = ["normal"] + [g for g in others if g != "normal"]
        order = (order * (per_signature // len(order) + 1))[:per_signature]
        out.extend(draw(base, rng, dtype, generator, "own", layout) for generator in order)
    return out


def draw(base: Base, rng: np.random.Generator, dtype: str, generator: str, shape: str,
         layout: str) -> Case:
    """The case of ``base`` with these choices (the values drawn from ``rng``)."""
    arrays = []
    for template, data in zip(base.templates, base.data):
        if not data:
            arrays.append(template)
            continue
        dims = template.shape if shape == "own" else EDGE_SHAPES[int(shape)]
        a = values.fill(rng, dims, dtype, generator)
        if template.dtype.kind in "fc" and np.dtype(dtype).kind in "fc" and shape == "own" \
                and not base.id.startswith("comp."):  # a composition's templates are shapes
            a = _keep_domain(template, a, generator)
        arrays.append(values.non_contiguous(a) if layout == "strided" else a)
    return Case(base, dtype, generator, shape, layout, tuple(arrays))


def _keep_domain(template: np.ndarray, a: np.ndarray, generator: str) -> np.ndarray:
    """Normal values of a structured template (a sorted vector, a positive definite matrix)
    keep its structure: the template's values in the case's dtype."""
    if generator != "normal":
        return a
    with np.errstate(all="ignore"):
        return template.astype(a.dtype)


def selected(only: str = "") -> list[Base]:
    """The bases whose id holds ``only`` (a ufunc's examples are ``ufunc.<name>``: ``np.add``
    selects ``ufunc.add`` too).

    Raises:
        ValueError: no base's id holds it, naming the bases whose program calls it (``np.arange``
            is called by ``creation``, which has no id of its own).
    """
    names = {only}
    if only.startswith("np."):
        names.add("ufunc." + only.removeprefix("np."))
    chosen = [b for b in bases() if any(name in b.id for name in names)]
    if chosen:
        return chosen
    callers = [b.id for b in bases() if _calls(b, only)]
    hint = (f"bases whose program calls it: {', '.join(callers[:8])}" if callers
            else "no base's program calls it either")
    raise ValueError(f"--only {only}: no base's id holds {only!r}; {hint} (ids: "
                     "np.<function>-<k>, ufunc.<name>, method.<name>-<k>, form.<name>...)")


def _calls(base: Base, name: str) -> bool:
    """Whether ``base``'s program names every part of ``name`` (``np.arange``: ``arange``;
    ``np.linalg.norm``: ``linalg`` and ``norm``) in its code or a function defined in it."""
    parts = set(name.split(".")) - {"np", "numpy"}
    code = getattr(base.fn, "__code__", None)
    names: set[str] = set()
    stack = [code] if code is not None else []
    while stack:
        code = stack.pop()
        names.update(code.co_names)
        stack.extend(c for c in code.co_consts if hasattr(c, "co_names"))
    return bool(parts) and parts <= names


SLOW = {"float16_sums": (40, "600 and 12,000 float16 terms, replayed in chunks of 2 (3,000 "
                            "blocks, m @ m.T of 45,000 block products): 17 to 40 s a case on "
                            "2 shared cores; the thorough profile draws it 40 times")}
"""Bases whose every case takes seconds, with the most cases one run draws of each and why:
``--only float16_sums --thorough`` drew the profile's 20,000 cases of it (days). Every other
base draws as many as asked (``--thorough --only np.matmul``: 20,000 cases of matmul)."""


def caps(per_base: int | None = None) -> dict[str, int]:
    """The most cases a run draws of each base that has a limit: :data:`SLOW`'s, and
    ``per_base`` for every base where given (the smaller of the two)."""
    limits = {name: cap for name, (cap, _) in SLOW.items()}
    if per_base is None:
        return limits
    return {b.id: min(per_base, limits.get(b.id, per_base)) for b in bases()}


def sample(n: int, seed: int, per_signature: int = 4, only: str = "",
           per_base: int | None = None) -> list[Case]:
    """``n`` cases drawn by a seeded sampler: every base in turn, each time a dtype, a shape
    (its own, or an edge shape one time in six) and a layout, with ``per_signature`` value
    generators sharing them (one capture and one compile per signature; with one, a generator
    drawn at random); ``only``: the bases :func:`selected` picks. A base past its limit
    (:func:`caps`: :data:`SLOW`, ``per_base``) draws no more (the others draw the rest; fewer
    than ``n`` in all where every selected base is at its limit)."""
    rng = np.random.default_rng(seed)
    all_bases = selected(only)
    limits = caps(per_base)
    drawn: dict[str, int] = {}
    cases: list[Case] = []
    k = 0
    while len(cases) < n:
        open_bases = [b for b in all_bases if drawn.get(b.id, 0) < limits.get(b.id, n)]
        if not open_bases:
            break
        base = all_bases[k % len(all_bases)]
        k += 1
        if drawn.get(base.id, 0) >= limits.get(base.id, n):
            continue  # at its limit: no draw (the other bases' draws are as without it)
        drawn[base.id] = drawn.get(base.id, 0) + per_signature
        dtype = values.DTYPES[rng.integers(len(values.DTYPES))]
        shape = "own" if rng.random() > 1 / 6 else str(rng.integers(len(EDGE_SHAPES)))
        layout = "strided" if rng.random() < 0.25 else "C"
        order = [values.GENERATORS[i] for i in rng.permutation(len(values.GENERATORS))]
        if per_signature > 1:  # normal values first, where the others are compared with them
            order = ["normal"] + [g for g in order if g != "normal"]
        # more than one draw per generator past four (new values, one capture and compile)
        order = (order * (per_signature // len(order) + 1))[:per_signature]
        for generator in order:
            cases.append(draw(base, rng, dtype, generator, shape, layout))
    return cases[:n]
