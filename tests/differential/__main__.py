"""``python -m tests.differential [--thorough] [--cases N] [--seed S] [--part K/N]
[--only TEXT] [--compositions with|none|only] [--show CLASS...] [--eager-limit SECONDS]``:
the differential suite's totals per backend and class (the CI profile by default). ``--only TEXT``
runs the bases whose id holds it (``np.add`` selects ``ufunc.add`` too; one that selects nothing is
refused, naming the bases whose program calls it) and prints how many cases of each it drew; a slow
base (:data:`cases.SLOW`: ``float16_sums``) draws at most its limit, every base at most ``--per-base
N``. ``--part K/N`` runs the K-th of N contiguous slices of the drawn cases (two parts run side by
side on two cores); an interrupted run (Ctrl-C) prints the totals of what it did. Eager NumPy runs
in a worker process: a case it does not finish within ``--eager-limit`` seconds is classed
``eager_timeout`` and always listed. The compositions (:mod:`.compositions`: a fifth of them drawn
once in the CI profile, each of them four times in the thorough one) come after the op table's
cases (``--compositions none`` leaves them out, ``only`` runs them alone; ``--only`` selects among
all of them too, ``--cases`` counts the op table's cases only)."""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # helpers

from tests.differential import cases, run

PROFILES = {"ci": (None, 1), "thorough": (20_000, 8)}
"""Cases and value draws per signature: the CI profile draws every base once (with one
generator drawn at random), the thorough one 20,000 cases, eight draws per signature (each
generator twice: 2,500 captures and compiles)."""


COMPOSITION_DRAWS = 4
"""Draws of each composition in the thorough profile (one per value generator: 5,200 cases); the
CI profile draws a fifth of them once (:func:`compositions.table`: 260 cases)."""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.differential")
    parser.add_argument("--thorough", action="store_true", help="20,000 cases")
    parser.add_argument("--cases", type=int, help="how many cases (overrides the profile)")
    parser.add_argument("--seed", type=int, default=25)
    parser.add_argument("--backend", action="append",
                        help="only these rows (numpy, jax, dask; dask2: Dask in chunks of 2)")
    parser.add_argument("--only", help="only bases whose id contains this (np.add: ufunc.add "
                        "too)")
    parser.add_argument("--per-base", type=int,
                        help="at most this many cases of each base (the slow ones of "
                             "cases.SLOW have their own limit)")
    parser.add_argument("--compositions", choices=("with", "none", "only"), default="with",
                        help="the compositions (tests/differential/compositions.py): drawn "
                             "after the op table's cases (with), left out, or alone")
    parser.add_argument("--skip", action="append", default=[],
                        help="leave out bases whose id contains this")
    parser.add_argument("--show", action="append", default=[],
                        help="list the cases of this class (raw_error, silent...)")
    parser.add_argument("--part", default="0/1", help="K/N: only the K-th of N slices (0-based)")
    parser.add_argument("--eager-limit", type=float, default=run.EAGER_LIMIT,
                        help="seconds eager NumPy may take on a case (in a worker process) "
                             "before the case is classed eager_timeout")
    parser.add_argument("--every", type=int, default=500,
                        help="print progress to stderr after this many cases")
    args = parser.parse_args(argv)
    part, parts = _part(parser, args.part)
    n, per_signature = PROFILES["thorough" if args.thorough else "ci"]
    composed = [] if args.compositions == "none" else cases.compose(
        args.seed, COMPOSITION_DRAWS if args.thorough else 1, only=args.only or "",
        every=args.thorough or bool(args.only))
    try:  # the CI profile: each selected base once
        if args.compositions == "only":
            drawn = []
        else:
            n = args.cases or n or len(cases.selected(args.only or ""))
            drawn = cases.sample(n, args.seed, per_signature, only=args.only or "",
                                 per_base=args.per_base)
    except ValueError as err:  # --only that selects nothing
        if not composed:
            parser.error(str(err))
        drawn = []
    drawn += composed
    if args.only:  # what the selection drew, and the limits that held it
        print(_drawn_text(drawn, cases.caps(args.per_base)), flush=True)
    drawn = [c for c in drawn if not any(s in c.base.id for s in args.skip)]
    # contiguous slices: the draws of one signature stay together, captured once
    drawn = drawn[part * len(drawn) // parts:(part + 1) * len(drawn) // parts]
    backends = run.available(args.backend or run.BACKENDS)
    start = time.perf_counter()
    outcomes: list = []
    done = [0]
    interrupted = False

    def progress(count: int) -> None:
        done[0] = count
        if count % args.every == 0:
            print(f"{count}/{len(drawn)} cases, {time.perf_counter() - start:.0f} s",
                  file=sys.stderr, flush=True)

    try:
        run.run(drawn, backends, into=outcomes, progress=progress,
                eager_limit=args.eager_limit)
    except KeyboardInterrupt:
        interrupted = True
        print(f"interrupted after {done[0]} of {len(drawn)} cases", flush=True)
    part_text = f", part {part}/{parts}" if parts > 1 else ""
    print(f"{done[0]} cases x {len(backends)} backends, seed {args.seed}{part_text}, "
          f"{time.perf_counter() - start:.0f} s")
    print(run.table(outcomes))
    listed = [k for k in ("eager_timeout", "eager_crash") if k not in args.show]
    for kind in [*args.show, *listed]:  # eager NumPy's own failures are always listed
        for o in outcomes:
            if o.kind == kind:
                print(f"{o.backend:6} {kind:10} {o.case.id}: {o.detail}")
    return 130 if interrupted else 0


def _drawn_text(drawn: list, limits: dict) -> str:
    """``drawn: 40 float16_sums (its limit: cases.SLOW)...``: the cases of each base drawn."""
    counts: dict[str, int] = {}
    for case in drawn:
        counts[case.base.id] = counts.get(case.base.id, 0) + 1
    items = [f"{count} {name}" + (" (its limit)" if count >= limits.get(name, count + 1) else "")
             for name, count in counts.items()]
    return "drawn: " + ", ".join(items[:12]) + (f" and {len(items) - 12} more bases"
                                                 if len(items) > 12 else "")


def _part(parser: argparse.ArgumentParser, text: str) -> tuple[int, int]:
    try:
        part, parts = (int(v) for v in text.split("/"))
    except ValueError:
        parser.error(f"--part takes K/N (e.g. 0/2), got {text!r}")
    if not 0 <= part < parts:
        parser.error(f"--part {text}: K must be 0 to N-1")
    return part, parts


if __name__ == "__main__":
    sys.exit(main())
