"""An op bound while a capture is open runs NumPy's own function at every later replay, not
capviz's hook of it (the order-dependent failure of
``test_backend_contract[dask-distributed-np.copy-13]``, stop 37: the capture of
``docs/guide/values.md``'s ``nbody_step`` computed its example's ``y.copy()`` for a size
symbol while the creation hooks stood in NumPy's namespace; ``Op.bind`` kept the hook, and a
later replay of ``np.copy`` on a dask cluster failed with "Can't pickle local object
'_impl.<locals>.impl.<locals>.run'": the hook holds a thread-local)."""

from __future__ import annotations

import cloudpickle
import numpy as np

import capviz as cv
from capviz import ops


def nbody_step(y):
    y = y.copy()
    y[y > 0] = y[y > 0] ** -1.5
    return y, y[y > 1].mean()


def test_an_op_bound_inside_a_capture_runs_numpy_s_own_function(monkeypatch):
    op = ops.OPS["copy"]
    monkeypatch.setattr(op, "_bound", {})
    graph = cv.capture(nbody_step, np.array([4.0, -1.0, 0.25, 9.0]))
    bound = op.bind(np)  # bound by the capture (its example's size symbol), kept
    assert op._bound == {"numpy": bound}
    x = np.array([1.0, 2.0, -3.0, 0.5])
    run = cloudpickle.loads(cloudpickle.dumps(bound))  # as a dask cluster sends a task
    assert run(x).tobytes() == x.tobytes()
    assert graph.replay({"y": x})["out0"].tobytes() == nbody_step(x)[0].tobytes()

