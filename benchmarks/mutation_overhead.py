"""What the mutation machinery costs a capture that never writes. Run:
python benchmarks/mutation_overhead.py

Baseline: the same recorder with the write/view bookkeeping taken out of ``Recorder.apply`` (the
per-operand ``_alias`` check and the per-op view lookup), measured in the same run on the same
10,000-op elementwise chain, interleaved (alternating which goes first), median of per-pair
ratios. The ``_alias`` slot every tensor carries is in both.
"""

from __future__ import annotations

import gc
import statistics
import sys
import time

from _common import chain

import capviz as cv
from capviz.core.errors import ShapeError
from capviz.core.source import source_of, user_frame, user_source
from capviz.trace import context
from capviz.trace import recorder as recorder_module
from capviz.trace.recorder import Recorder
from capviz.trace.tensor import Tensor

ROUNDS = 61


def apply_without_bookkeeping(self, op, args, params):
    """``Recorder.apply`` as it was before writes were recorded (single-output ops)."""
    if self.closed or self not in context.RECORDERS.get():
        self.check_usable()
    conv = []
    for a in args:
        ta = type(a)
        if ta is Tensor:
            conv.append(a._data if a._trace is self else self.adopt(a))
        elif ta in recorder_module._LITERALS:
            conv.append(a)
        else:
            conv.append(self.adopt_value(a))
    try:
        meta = op.meta(conv, params)
    except ShapeError as err:
        raise self._located(err, user_source()) from None
    frame = user_frame(sys._getframe(1))
    return Tensor(self._append("op", op.name, tuple(conv), params, meta[0], meta[1],
                               source_of(frame), frame=frame), self)


def main() -> None:
    n = 10_000
    spec = cv.spec((4,), "float32")

    def once(apply) -> float:
        Recorder.apply = apply
        start = time.perf_counter()
        cv.capture(lambda x: chain(x, n), spec)
        return time.perf_counter() - start

    with_hooks = Recorder.apply
    gc.disable()  # collections would land on either side at random
    try:
        once(with_hooks)
        ratios, a, b = [], [], []
        for i in range(ROUNDS):
            if i % 2:
                t_with, t_without = once(with_hooks), once(apply_without_bookkeeping)
            else:
                t_without, t_with = once(apply_without_bookkeeping), once(with_hooks)
            a.append(t_with)
            b.append(t_without)
            ratios.append(t_with / t_without)
    finally:
        Recorder.apply = with_hooks
        gc.enable()
    print(f"capture of a 10,000-op chain that never writes ({ROUNDS} interleaved pairs)")
    print(f"  with write/view bookkeeping    {1e6 * statistics.median(a) / n:8.2f} us/op")
    print(f"  without (baseline)             {1e6 * statistics.median(b) / n:8.2f} us/op")
    print(f"  ratio of medians               {statistics.median(a) / statistics.median(b):8.3f}x"
          "  goal <= 1.05x")
    print(f"  median of pair ratios          {statistics.median(ratios):8.3f}x")


if __name__ == "__main__":
    main()
