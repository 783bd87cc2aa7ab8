"""Peak memory of GPT-2's Dask replay, whose products reaching a bias or residual add run on one
block (9f42f34), against the same replay with them left to dask.array's blocks (before it), a
NumPy replay and eager NumPy, all in this run. Run:
python benchmarks/dask_gpt_memory.py [--layers 2] [--tokens 512] [--rows 64]

The forward of ``benchmarks/peers_gpt.py`` (picoGPT's source, unchanged, captured), float32,
biases drawn from N(0, 0.5) (nonzero: an add that can cancel its product), its (tokens, 768)
input in chunks of ``--rows`` rows (the contracted axis, 768, whole in each block), the
single-threaded scheduler, ``tracemalloc``'s peak of one replay after a first one (weights and
input exist before the measure starts). Each row says whether the output is eager NumPy's bits
and its largest difference from it relative to its largest magnitude.

Why the products stay on one block (brief 10, W=25d, item 2: "keep blocks where the contracted
axis is whole in one block"): a product that reaches an add that can cancel must be NumPy's
bits (``capviz/backends/dask/before_cancel.py``), and NumPy's is one BLAS call on the whole
operands, whose result depends on the shapes it is called with. The second table measures it
on this machine: for ``x @ W`` with ``W`` (768, 2304), the share of the elements of NumPy's
product that a product of row blocks (the contracted axis whole in each) gives otherwise. Where
it is not 0, keeping the blocks would replace NumPy's bits by other roundings, which the add
then cancels: silent.
"""

from __future__ import annotations

import argparse
import time
import tracemalloc
import warnings

import dask
import dask.array as da
import numpy as np
from gpt2_pico import gpt2_embedded, init_params

import capviz as cv
from capviz.backends import contraction_bound
from capviz.backends.dask import before_cancel


def _params(layers: int) -> dict:
    params = init_params(layers, n_vocab=2000)
    rng = np.random.default_rng(2)
    for block in params["blocks"]:
        for dense in (block["mlp"]["c_fc"], block["mlp"]["c_proj"], block["attn"]["c_attn"],
                      block["attn"]["c_proj"]):
            dense["b"] = (rng.standard_normal(dense["b"].shape) * 0.5).astype(np.float32)
    return params


def _peak(run) -> tuple[float, float, object]:
    """(peak MiB, seconds, output) of ``run()`` after a first call."""
    run()
    tracemalloc.start()
    try:
        start = time.perf_counter()
        out = run()
        seconds = time.perf_counter() - start
        return tracemalloc.get_traced_memory()[1] / 2**20, seconds, out
    finally:
        tracemalloc.stop()


def _blocked(nodes):
    """``before_cancel.feeding`` without the products (the tree before 9f42f34)."""
    return {k: reaches for k, reaches in _FEEDING(nodes).items()
            if not contraction_bound.is_contraction_node(reaches[0].sum)}


_FEEDING = before_cancel.feeding


def _row_blocks(rows: int) -> None:
    rng = np.random.default_rng(0)
    print("\nx @ W, W (768, 2304), x (512, 768) in blocks of rows: elements of NumPy's product "
          "a product of row blocks gives otherwise")
    print(f"{'dtype':<10}" + "".join(f"{f'{r} rows':>12}" for r in (8, 32, rows, 128)))
    for dtype in (np.float32, np.float64):
        x = rng.standard_normal((512, 768)).astype(dtype)
        w = (rng.standard_normal((768, 2304)) * 0.02).astype(dtype)
        whole = x @ w
        shares = []
        for r in (8, 32, rows, 128):
            blocks = np.concatenate([x[i:i + r] @ w for i in range(0, len(x), r)])
            shares.append(float(np.mean(blocks != whole)))
        print(f"{np.dtype(dtype).name:<10}" + "".join(f"{100 * s:>11.1f}%" for s in shares))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--tokens", type=int, default=512)
    parser.add_argument("--rows", type=int, default=64)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    params = _params(args.layers)
    weights = {k: v for k, v in params.items() if k != "wpe"}
    x = (np.random.default_rng(1).standard_normal((args.tokens, 768)) * 0.1).astype(np.float32)

    def forward(x):
        return gpt2_embedded(x, **weights, n_head=12)

    want = forward(x)
    graph = cv.capture(forward, cv.spec(x.shape, x.dtype))
    chunked = da.from_array(x, chunks=(args.rows, 768))

    def dask_replay():
        return graph.replay({"x": chunked}, backend="dask")["out"]

    print(f"GPT-2 forward: {args.layers} layers, width 768, {args.tokens} tokens, float32, "
          f"input {x.nbytes / 2**20:.1f} MiB in chunks of {args.rows} rows; single-threaded "
          f"scheduler; dask {dask.__version__}, numpy {np.__version__}")
    print(f"{'replay':<52} {'peak MiB':>9} {'/eager':>7} {'s':>7}  {'bits':<6} "
          f"{'max rel diff':>12}")
    rows = []
    with dask.config.set(scheduler="single-threaded"):
        rows.append(("dask, products on one block (main)", *_peak(dask_replay)))
        before_cancel.feeding = _blocked
        try:
            rows.append(("dask, products left to dask.array's blocks (before)",
                         *_peak(dask_replay)))
        except cv.CapvizError as err:
            print(f"{'dask, products left to blocks (before)':<52} refused: {str(err)[:60]}")
        finally:
            before_cancel.feeding = _FEEDING
    rows.append(("numpy replay", *_peak(lambda: graph.replay({"x": x}, backend="numpy")["out"])))
    rows.append(("eager numpy", *_peak(lambda: forward(x))))
    scale = float(np.max(np.abs(want)))
    eager = rows[-1][1]
    for name, peak, seconds, out in rows:
        out = np.asarray(out)
        bits = out.tobytes() == want.tobytes()
        diff = float(np.max(np.abs(out.astype(np.float64) - want))) / scale
        print(f"{name:<52} {peak:>9.1f} {peak / eager:>6.2f}x {seconds:>7.2f}  {bits!s:<6} "
              f"{diff:>12.2e}")
    _row_blocks(args.rows)


if __name__ == "__main__":
    main()
