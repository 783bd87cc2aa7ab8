"""Write docs/numpy-coverage.md from the code (capviz/numpy_api/coverage.py).

Run: python docs/gen_coverage.py   (tests/test_numpy_coverage.py fails when the page is stale)
"""

from __future__ import annotations

import os

HERE = os.path.dirname(os.path.abspath(__file__))


def main() -> None:
    from capviz.numpy_api.coverage import markdown

    with open(os.path.join(HERE, "numpy-coverage.md"), "w", encoding="utf-8") as f:
        f.write(markdown())


if __name__ == "__main__":
    main()
