"""Assertions for tests of captured graphs (also used by the pytest plugin).

``assert_graph_snapshot`` stores graph structure as JSON baselines next to the test (like
pytest-mpl's baseline images); ``--capviz-update-snapshots`` (re)writes them.

Each assertion sets ``__tracebackhide__``, as pytest's own helpers do, so a failure's traceback
ends at the test's line, not in this module.
"""

from __future__ import annotations

import difflib
import json
import os
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from capviz.core.ir import Node
from capviz.graph import CapturedGraph
from capviz.io.json import encode
from capviz.io.printing import literal_text, type_text

#: Default for ``update`` in :func:`assert_graph_snapshot`; the pytest plugin sets it from
#: ``--capviz-update-snapshots``.
UPDATE_SNAPSHOTS = False


def structure(graph: CapturedGraph) -> list[str]:
    """The structure of a graph, one line per node: kind, op, operands, params, shape, dtype,
    names and scope. Source lines and constant values are left out, so the structure is stable
    across edits that do not change the program."""
    lines = []
    for n in graph.nodes:
        operands = " ".join(f"%{a.index}" if isinstance(a, Node) else literal_text(a)
                            for a in n.args)
        params = json.dumps({k: encode(v) for k, v in n.params.items()
                             if k not in ("message",)}, sort_keys=True)
        name = f" name={n.name}" if n.name is not None else ""
        scope = f" scope={n.scope}" if n.scope else ""
        lines.append(f"%{n.index} {n.kind} {n.op or ''}({operands}) {params} "
                     f": {type_text(n)}{name}{scope}".replace("  ", " "))
    return lines


def assert_no_violations(graph: CapturedGraph) -> None:
    """Fail listing every violation (kind, level, where, first line of the message)."""
    __tracebackhide__ = True
    if graph.violations:
        rows = "\n".join(f"  {v.level} {v.kind} at {v.location}: {v.message.splitlines()[0]}"
                         for v in graph.violations)
        raise AssertionError(f"graph has {len(graph.violations)} violation(s):\n{rows}")


def assert_graph_equal(actual: CapturedGraph, expected: CapturedGraph) -> None:
    """Fail with a unified diff when the two graphs differ in structure (see :func:`structure`)."""
    __tracebackhide__ = True
    a, b = structure(actual), structure(expected)
    if a != b:
        diff = "\n".join(difflib.unified_diff(b, a, "expected", "actual", lineterm=""))
        raise AssertionError(f"graphs differ:\n{diff}")


def assert_replay_matches(graph: CapturedGraph, fn: Callable, inputs: Mapping[str, Any],
                          rtol: float = 1e-6, atol: float = 0.0, backend: str = "numpy") -> None:
    """Replay ``graph`` and compare each output with ``fn`` run eagerly on the same inputs
    (passed positionally, in graph input order)."""
    __tracebackhide__ = True
    replayed = graph.replay(inputs, backend=backend, to_numpy=True)
    eager = fn(*[np.array(inputs[name], copy=True) for name in graph.inputs])
    if isinstance(eager, dict):
        expected = {str(k): v for k, v in eager.items()}
    elif isinstance(eager, (tuple, list)):
        expected = {f"out{i}": v for i, v in enumerate(eager)}
    else:
        expected = {graph.outputs[0] if graph.outputs else "out": eager}
    for name in graph.outputs:
        if name not in expected:
            raise AssertionError(f"fn returned no value for output {name!r}")
        np.testing.assert_allclose(np.asarray(replayed[name]), np.asarray(expected[name]),
                                   rtol=rtol, atol=atol,
                                   err_msg=f"output {name!r}: replay differs from eager fn")


def assert_graph_snapshot(graph: CapturedGraph, name: str, directory: str | None = None,
                          update: bool | None = None) -> None:
    """Compare the graph's structure with the JSON baseline ``directory/name.json``.

    A missing baseline fails (with how to create it) unless ``update`` is true, which writes it;
    ``update`` defaults to :data:`UPDATE_SNAPSHOTS` (``--capviz-update-snapshots``).
    """
    __tracebackhide__ = True
    if not name or os.path.basename(name) != name:
        raise ValueError(f"a snapshot name must be a plain file name, got {name!r}")
    directory = directory or os.path.join(os.getcwd(), "__capviz_snapshots__")
    path = os.path.join(directory, f"{name}.json")
    update = UPDATE_SNAPSHOTS if update is None else update
    current = structure(graph)
    if update:
        os.makedirs(directory, exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            json.dump({"capviz_snapshot": 1, "nodes": current}, f, indent=1)
        return
    if not os.path.exists(path):
        raise AssertionError(f"no snapshot baseline {path}; run pytest with "
                             "--capviz-update-snapshots to create it")
    with open(path, encoding="utf-8") as f:
        stored = json.load(f).get("nodes", [])
    if stored != current:
        diff = "\n".join(difflib.unified_diff(stored, current, "baseline", "actual",
                                              lineterm=""))
        raise AssertionError(f"graph differs from snapshot {path} (rerun with "
                             f"--capviz-update-snapshots if the change is intended):\n{diff}")
