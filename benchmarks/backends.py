"""Replay backends (issue: backends). Run: python benchmarks/backends.py [--rounds N] [--only S]

One table from three parts, each runnable alone and each measuring its baseline in the same run
(interleaved rounds, medians):

- ``backends_dask.py``: Dask, threaded and on a 2-worker ``LocalCluster``, vs the NumPy replay
  of the same graph on an elementwise + reduction pipeline over 2 GB;
- ``backends_jax.py``: the JAX backend vs the NumPy replay on the 100-op chain over
  (1024, 1024) float32 and on the transformer block; first-call compile time apart;
- ``backends_memory.py``: the peak memory of a NumPy replay vs ``graph.memory_plan()``'s
  estimate.

A part whose engine is not installed prints why and is left out.
"""

from __future__ import annotations

import argparse
import importlib

PARTS = ("backends_memory", "backends_dask", "backends_jax")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds per figure")
    parser.add_argument("--only", choices=[p.removeprefix("backends_") for p in PARTS],
                        help="run one part")
    args = parser.parse_args()
    rows = []
    for part in PARTS:
        if args.only and part != f"backends_{args.only}":
            continue
        try:
            module = importlib.import_module(part)
            rows.extend(module.run(args.rounds))
        except ImportError as err:
            print(f"{part}: left out ({err})")
    width = max((len(name) for name, _, _ in rows), default=10)
    for name, figure, goal in rows:
        print(f"{name:<{width}}  {figure:<40}  goal: {goal}")


if __name__ == "__main__":
    main()
