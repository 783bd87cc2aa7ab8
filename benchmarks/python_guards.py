"""What the guards on Python values cost a replay. Run: python benchmarks/python_guards.py

Each replay (``graph.replay`` and a compiled ``graph.compile()`` call) first reads every place
a guard names (``self.cfg.c17``: a weak reference, a ``getattr`` per step) and compares its
value with the captured one (capviz/core/python_guards.py). Measured on one graph: a model
whose config object holds N floats, all guarded (its forward reads one by ``getattr``, so the
walk takes every name as reachable); the baseline is the same graph with its guards removed,
timed in alternating rounds in the same process by its CPU time (medians of 15 rounds of
2,000 replays of a 4x3 input: the smallest replay, where the check weighs most). Each row
also holds the guards of the model's other values and of the module's globals the code names
(N + 5 in all).

Then the check alone (``capviz.core.python_guards.check``) in real models, where a guard's path
runs through dicts and lists (review 9, finding 25): a PyTorch-shaped module tree (12 blocks of
a batch norm and a dropout, children in ``_modules`` dicts: paths of 7 steps) and GPT-2 small
(picoGPT's 12 blocks of parameter dicts, ``gpt2_pico.py``). The baseline, timed in alternating
rounds with it, reads every guard's place from the start, one guard after another
(``PythonGuard.read`` and ``same``: how the check read every path that is not attributes only
before it walked the paths as one tree).
"""

from __future__ import annotations

import os
import time

import numpy as np
from _common import header, interleaved, row
from gpt2_pico import gpt2_embedded, init_params

import capviz as cv
from capviz.core.python_guards import UNREAD, check, same

ROUNDS, CALLS = 15, 2000
CLOCK = time.process_time  # (this process's CPU time: a loaded machine disturbs it less)


class Config:
    def __init__(self, n: int) -> None:
        for k in range(n):
            setattr(self, f"c{k}", 0.5 + k)


class Model:
    def __init__(self, n: int) -> None:
        self.cfg = Config(n)
        self.training = True

    def forward(self, x):
        scale = getattr(self.cfg, "c0")  # (a name built at run time: every attribute guarded)
        if self.training:
            return x * scale
        return x


def graphs(n: int):
    model = Model(n)
    x = np.ones((4, 3))
    guarded = cv.capture(model.forward, x)
    plain = cv.capture(model.forward, x)
    plain.python_guards = []
    return model, x, guarded, plain


def main() -> None:
    print(f"load: {os.getloadavg()[0]:.2f} (1 min), {os.cpu_count()} cores")
    header("replay with N guards on Python values vs the same graph without them "
           f"(median of {ROUNDS} rounds of {CALLS} replays, 4x3 float64)")
    for n in (1, 10, 100, 1000):
        _model, x, guarded, plain = graphs(n)  # (held: a freed model's guards are skipped)
        count = len(guarded.python_guards)
        inputs = {"x": x}

        def replay(graph=None, inputs=inputs):
            for _ in range(CALLS):
                graph.replay(inputs)

        a, b = interleaved([lambda g=guarded: replay(g), lambda g=plain: replay(g)], ROUNDS,
                           CLOCK)
        row(f"graph.replay, {count} guards", f"{a / CALLS * 1e6:.2f} us",
            f"{b / CALLS * 1e6:.2f} us (none)", a / b,
            f"{(a - b) / CALLS / max(count, 1) * 1e9:.0f} ns per guard")
        fa, fb = guarded.compile(), plain.compile()

        def called(fn=None, x=x):
            for _ in range(CALLS):
                fn(x)

        a, b = interleaved([lambda f=fa: called(f), lambda f=fb: called(f)], ROUNDS, CLOCK)
        row(f"compiled call, {count} guards", f"{a / CALLS * 1e6:.2f} us",
            f"{b / CALLS * 1e6:.2f} us (none)", a / b,
            f"{(a - b) / CALLS / max(count, 1) * 1e9:.0f} ns per guard")


class Module:
    """PyTorch's shape: children in ``_modules``, reached through ``__getattr__``."""

    def __init__(self) -> None:
        self.__dict__["_modules"] = {}
        self.training = True

    def __setattr__(self, key, value) -> None:
        if isinstance(value, Module):
            self._modules[key] = value
        else:
            object.__setattr__(self, key, value)

    def __getattr__(self, key):
        modules = self.__dict__.get("_modules", {})
        if key in modules:
            return modules[key]
        raise AttributeError(key)

    def __call__(self, x):
        return self.forward(x)


class Dropout(Module):
    def __init__(self, p: float) -> None:
        super().__init__()
        self.p = p

    def forward(self, x):
        return x * (1.0 - self.p) if self.training else x


class Norm(Module):
    def __init__(self) -> None:
        super().__init__()
        self.eps = 1e-5

    def forward(self, x):
        return (x - x.mean(0)) / (1.0 + self.eps) if self.training else x


class Block(Module):
    def __init__(self) -> None:
        super().__init__()
        self.bn = Norm()
        self.drop = Dropout(0.5)

    def forward(self, x):
        return self.drop(self.bn(x))


class Net(Module):
    def __init__(self, depth: int) -> None:
        super().__init__()
        for k in range(depth):
            setattr(self, str(k), Block())

    def forward(self, x):
        for block in self._modules.values():
            x = block(x)
        return x


def one_by_one(guards) -> None:
    """The baseline: every guard's place read from the start (as ``check`` reads a guard
    whose path is not attributes only when its tree's walk fails)."""
    for guard in guards:
        now = guard.read()
        if now is not guard.value and now not in UNREAD and not same(guard.value, now):
            raise AssertionError(guard.label)


def real_models() -> None:
    header("the check alone in real models vs each guard's path read from the start "
           f"(median of {ROUNDS} rounds of {CALLS} checks)")
    net = Net(12)
    params = init_params(n_layer=12, n_embd=768, n_vocab=100, n_ctx=32, bias_scale=0.02)
    x = np.ones((8, 768), np.float32)
    models = [
        ("module tree, 12 blocks", cv.capture(net, cv.spec((4, 3), "float64"))),
        ("GPT-2 small (gpt2_pico)", cv.capture(
            lambda x: gpt2_embedded(x, params["wte"], params["blocks"], params["ln_f"], 12),
            cv.spec(x.shape, x.dtype)))]
    for name, graph in models:
        guards = graph.python_guards
        count = len(guards)
        check(guards)

        def checked(guards=guards):
            for _ in range(CALLS):
                check(guards)

        def each(guards=guards):
            for _ in range(CALLS):
                one_by_one(guards)

        a, b = interleaved([checked, each], ROUNDS, CLOCK)
        row(f"{name}, {count} guards", f"{a / CALLS * 1e6:.1f} us",
            f"{b / CALLS * 1e6:.1f} us (one by one)", a / b,
            f"{a / CALLS / count * 1e9:.0f} ns per guard (one by one: "
            f"{b / CALLS / count * 1e9:.0f})")


if __name__ == "__main__":
    main()
    real_models()
