"""The census harness of the public-code-style programs (tests/test_public_*.py): a program is
run eagerly over three calls, then set up again from scratch (same seeds), captured the first
time and replayed over the same three calls. After each call the outputs, every state array the
program names (its ``states()``: attributes, globals, list and dict items) and the live random
generators (NumPy's global one, Python's ``random``, and any generator the program lists) are
compared bit for bit, dtypes and shapes included, and the states' Python types (a logged
``np.float64`` is not a Python float; lists and dicts item by item).

A verdict is one of:
- ``exact``: every call matched;
- ``refused``: a capviz error at capture (or at a replay), the error kept for its message;
- ``silent``: a replay differed from the eager call with no error (the detail says where);
- ``raw``: an error that is not a capviz error.
"""

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import capviz as cv
from capviz.core.errors import CapvizError

SEED = 1234


@dataclass
class Program:
    """What a program's ``setup()`` returns: the function a user would capture, the arguments of
    three calls (ndarrays), and the state it keeps (name -> ndarray or Generator/RandomState)."""

    fn: Callable
    calls: list
    states: Callable[[], dict] = dict
    capture_kwargs: dict = field(default_factory=dict)
    examples: bool = False  # capture with the first call's arrays (branches become guards)


@dataclass
class Verdict:
    kind: str
    error: BaseException | None = None
    detail: str = ""
    graph: Any = None

    @property
    def first_line(self) -> str:
        if self.error is None:
            return self.detail
        return str(self.error).splitlines()[0] if str(self.error) else ""


def _snap(value):
    if isinstance(value, np.random.Generator):
        return ("gen", repr(value.bit_generator.state))
    if isinstance(value, np.random.RandomState):
        return ("rs", repr(value.get_state(legacy=False)))
    arr = np.asarray(value)
    return (arr.dtype.str, arr.shape, arr.tobytes())


def _typed(value):
    """A state's snapshot with its Python type (a logged np.float64, a Python float and a 0-d
    ndarray differ), containers item by item."""
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, tuple(_typed(v) for v in value))
    if isinstance(value, dict):
        return (type(value).__name__, tuple((repr(k), _typed(v)) for k, v in value.items()))
    return (type(value).__name__, _snap(value))


def _outputs(out):
    return tuple(out) if isinstance(out, tuple) else (out,)


def _world(program):
    snap = {f"state {k}": _typed(v) for k, v in program.states().items()}
    snap["np.random"] = ("rs", repr(np.random.get_state(legacy=False)))
    snap["random"] = repr(random.getstate())
    return snap


def _seed():
    np.random.seed(SEED)
    random.seed(SEED)


def _differ(want, got):
    for key in want:
        if key not in got or want[key] != got[key]:
            return key
    return None


def run(setup: Callable[[], Program], warm: bool = False) -> Verdict:
    """Eager over three calls, then a first capture and three replays from the same start
    (the process's global generators are put back after). ``warm``: one eager call with the
    first call's arrays before both (the capture is then a later one: the lifted path)."""
    saved = np.random.get_state(), random.getstate()
    try:
        return _run(setup, warm)
    finally:
        np.random.set_state(saved[0])
        random.setstate(saved[1])


def _run(setup: Callable[[], Program], warm: bool = False) -> Verdict:
    _seed()
    program = setup()
    calls = program.calls  # the same arguments for both runs (a setup may draw new ones)
    if warm:
        program.fn(*[np.copy(a) for a in calls[0]])
    eager = []
    for args in calls:
        outs = _outputs(program.fn(*[np.copy(a) for a in args]))
        eager.append(([_snap(o) for o in outs], _world(program)))
    _seed()
    program = setup()
    if warm:
        program.fn(*[np.copy(a) for a in calls[0]])
    if program.examples:
        specs = [np.copy(a) for a in calls[0]]
    else:
        specs = [cv.spec(np.shape(a), np.asarray(a).dtype) for a in calls[0]]
    try:
        graph = cv.capture(program.fn, *specs, **program.capture_kwargs)
    except CapvizError as err:
        return Verdict("refused", err)
    except Exception as err:
        return Verdict("raw", err)
    for k, (args, (want_outs, want_world)) in enumerate(zip(calls, eager)):
        try:
            result = graph.replay(dict(zip(graph.inputs, [np.copy(a) for a in args])))
        except CapvizError as err:
            return Verdict("refused", err, graph=graph)
        except Exception as err:
            return Verdict("raw", err, graph=graph)
        got_outs = [_snap(result[name]) for name in graph.outputs]
        if got_outs != want_outs:
            return Verdict("silent", detail=f"call {k + 1}: outputs differ", graph=graph)
        where = _differ(want_world, _world(program))
        if where is not None:
            return Verdict("silent", detail=f"call {k + 1}: {where} differs", graph=graph)
    return Verdict("exact", graph=graph)


def line_of(path: str, code: str) -> int:
    """The line number of the one line of ``path`` that holds ``code`` (stripped)."""
    with open(path, encoding="utf-8") as f:
        hits = [k for k, line in enumerate(f, 1) if line.strip() == code]
    assert len(hits) == 1, (code, hits)
    return hits[0]


def refusal(setup: Callable[[], Program]) -> tuple[type, list[str]]:
    """The error type and message lines of a program the census finds refused."""
    verdict = run(setup)
    assert verdict.kind == "refused", (verdict.kind, verdict.detail, verdict.first_line)
    return type(verdict.error), str(verdict.error).splitlines()


def refused_at(setup: Callable[[], Program], error: type, path: str, line: str, code: str,
               func: str, what: str) -> list[str]:
    """The message lines of the refusal of ``setup``'s program, checked: an ``error``, its
    first line ``code`` (as quoted) at the line of ``path`` that holds ``line``, in ``func``,
    then ``what``; at most three lines, the last a fix."""
    kind, lines = refusal(setup)
    assert kind is error
    assert lines[0].startswith(f"`{code}` at {path}:{line_of(path, line)} in {func}: {what}"), \
        lines[0]
    assert len(lines) <= 3 and lines[-1].startswith("Fix: ")
    return lines
