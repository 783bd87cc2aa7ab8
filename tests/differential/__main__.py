"""``python -m tests.differential [--thorough] [--cases N] [--seed S] [--show CLASS...]``:
the differential suite's totals per backend and class (the CI profile by default)."""

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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.differential")
    parser.add_argument("--thorough", action="store_true", help="20,000 cases")
    parser.add_argument("--cases", type=int, help="how many cases (overrides the profile)")
    parser.add_argument("--seed", type=int, default=25)
    parser.add_argument("--backend", action="append", help="only these backends")
    parser.add_argument("--only", help="only bases whose id contains this")
    parser.add_argument("--show", action="append", default=[],
                        help="list the cases of this class (raw_error, silent...)")
    args = parser.parse_args(argv)
    n, per_signature = PROFILES["thorough" if args.thorough else "ci"]
    n = args.cases or n or len(cases.bases())
    drawn = cases.sample(n, args.seed, per_signature, only=args.only or "")
    backends = run.available(args.backend or run.BACKENDS)
    start = time.perf_counter()
    outcomes = run.run(drawn, backends)
    print(f"{len(drawn)} cases x {len(backends)} backends, seed {args.seed}, "
          f"{time.perf_counter() - start:.0f} s")
    print(run.table(outcomes))
    for kind in args.show:
        for o in outcomes:
            if o.kind == kind:
                print(f"{o.backend:6} {kind:10} {o.case.id}: {o.detail}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
