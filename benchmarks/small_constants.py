"""What checking the small constants' sources costs a replay (python benchmarks/small_constants.py).

A capture copies an ndarray operand under 1 MiB (a bias, a layer norm's gain); where that array
outlives the call, every replay fingerprints it (XXH3 of a view made anew from a weak reference)
beside the weights kept by reference, and refuses it changed (capviz/core/references.py,
hostile review 9, finding 3). Measured on GPT-2 small's blocks (``benchmarks/gpt2_pico.py``,
768 wide, biases 0.02 N(0, 1): each block's 8 biases and gains are such copies), 16 tokens,
``graph.compile()`` calls: the graph as captured against the same graph with its small
constants' sources dropped (the check of the weights kept), timed in alternating rounds in one
process (medians of 11 rounds of 5 calls); and the check alone (``check_unchanged``, 100 calls
a round), whose difference is the small constants' share.
"""

from __future__ import annotations

import argparse
import os

import numpy as np
from _common import header, interleaved, row
from gpt2_pico import gpt2_embedded, init_params

import capviz as cv
from capviz.core import references


def graphs(layers: int, tokens: int):
    params = init_params(layers, n_vocab=4096, bias_scale=0.02)
    weights = {k: params[k] for k in ("wte", "blocks", "ln_f")}
    x = np.random.default_rng(0).standard_normal((tokens, 768)).astype(np.float32)

    def forward(x):
        return gpt2_embedded(x, **weights, n_head=12)

    spec = cv.spec(x.shape, "float32")
    checked, plain = cv.capture(forward, spec), cv.capture(forward, spec)
    for index in list(plain.constant_sources):
        del plain.constant_sources[index]
        del plain.constant_fingerprints[index]
    return params, x, checked, plain


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--tokens", type=int, default=16)
    args = parser.parse_args()
    print(f"load: {os.getloadavg()[0]:.2f} (1 min), {os.cpu_count()} cores")
    params, x, checked, plain = graphs(args.layers, args.tokens)
    small = len(checked.constant_sources)
    weights = len(checked.constant_fingerprints) - small
    header(f"GPT-2 small, {args.layers} blocks, {args.tokens} tokens: compiled replay with "
           f"{small} small constants checked ({weights} weights kept by reference checked "
           "on both sides) vs without (median of 11 rounds of 5 calls)")
    fn, base = checked.compile(), plain.compile()
    np.testing.assert_array_equal(fn(x)[0], base(x)[0])

    def run(f):
        def calls():
            for _ in range(5):
                f(x)
        return calls

    with_check, without = interleaved([run(fn), run(base)], rounds=11)
    row("replay, small constants checked", f"{with_check / 5 * 1e3:.2f} ms",
        f"{without / 5 * 1e3:.2f} ms unchecked", with_check / without, "~1.00x")
    check = [lambda: [references.check_unchanged(checked) for _ in range(100)],
             lambda: [references.check_unchanged(plain) for _ in range(100)]]
    both, weights_only = interleaved(check, rounds=11)
    row("the check alone (check_unchanged)", f"{both / 100 * 1e3:.3f} ms",
        f"{weights_only / 100 * 1e3:.3f} ms weights only", both / weights_only)
    print(f"the small constants' share: {(both - weights_only) / 100 * 1e6:.0f} us per replay, "
          f"{(both - weights_only) / 100 / small * 1e6:.1f} us per constant")
    del params


if __name__ == "__main__":
    main()
