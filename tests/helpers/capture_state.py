"""What a capture leaves behind: the state the interrupt and exception-safety tests count."""

import random

import numpy as np

import capviz as cv
from capviz.randomness import hooks
from capviz.trace.context import name_scope_path, registered_recorders

# The functions the seed and draw hooks replace while a capture is open, as they are before any
# capture (this module is imported when none is open).
ORIGINALS = {
    "np.random.seed": (np.random, "seed", np.random.seed),
    "np.random.rand": (np.random, "rand", np.random.rand),
    "np.random.mtrand._rand": (np.random.mtrand, "_rand", np.random.mtrand._rand),
    "random.seed": (random, "seed", random.seed),
    "random.random": (random, "random", random.random),
}


def leaks(capture_devices=(), rng_devices=()):
    """Each kind of capture state still held, with how much of it (an empty dict: nothing)."""
    found = {
        "scopes registered in this context": len(registered_recorders()),
        "open scopes in this context": int(cv.is_capturing()),
        "name-scope path in this context": len(name_scope_path()),
        "hooks installed": int(hooks.installed()),
        "busy capture devices": sum(cap._active is not None for cap in capture_devices),
        "open captures bound to rng devices": sum(
            not r.closed for dev in rng_devices for r in dev._captures),
    }
    for name, (owner, attr, original) in ORIGINALS.items():
        found[f"{name} replaced"] = int(getattr(owner, attr) is not original)
    return {what: n for what, n in found.items() if n}
