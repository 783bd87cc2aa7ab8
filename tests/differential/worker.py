"""Eager NumPy in a worker process with a time limit.

NumPy's own code can run forever on some drawn values (the thorough profile once hung for two
hours inside LAPACK's ``dbdsqr``, ``np.linalg.svd`` on a drawn case), so each case's eager
NumPy runs in a worker process, one process reused case after case: a call that exceeds the
limit has its worker killed (the next call starts another) and the case is classed
``eager_timeout`` by :func:`.run.run`; a worker that dies (a crash inside NumPy) classes it
``eager_crash``. Neither is left out of the totals.

The worker is started with ``spawn`` (never forked from a process running JAX's threads). A
case's function reaches it by its base's id, looked up in :func:`.cases.all_bases` there (the
examples are lambdas, which do not pickle), or pickled itself when it is not one of the bases.
The limit counts the call alone: the worker fills its table of bases before it says "ready",
and says "started" once a payload is unpickled (a pickled function's module imported).
"""

from __future__ import annotations

import importlib
import multiprocessing
import pickle
from typing import Any

TIMEOUT = "timeout"
CRASH = "crash"


def _table() -> dict:
    """The bases' functions by id (:func:`.cases.all_bases`), as the worker looks them up."""
    from . import cases

    return {b.id: b.fn for b in cases.all_bases()}


def _sendable(answer: tuple) -> tuple:
    """``answer`` as it can be pickled: an exception that does not pickle travels as its
    class's address and its ``args``, and is rebuilt without ``__init__`` (:func:`_rebuilt`)."""
    try:
        pickle.dumps(answer)
        return answer
    except Exception:  # any pickling failure: send the exception's parts
        result, err = answer
        kind = type(err)
        return result, ("exception", kind.__module__, kind.__qualname__,
                        tuple(str(a) for a in err.args))


def _rebuilt(err: Any) -> Any:
    if not (isinstance(err, tuple) and err and err[0] == "exception"):
        return err
    _, module, qualname, args = err
    kind: Any = importlib.import_module(module)
    for part in qualname.split("."):
        kind = getattr(kind, part)
    out = kind.__new__(kind)
    out.args = args
    return out


def serve(conn: Any) -> None:
    """The worker's loop: ``(kind, function or base id, arrays)`` in, the answer out
    (``kind`` ``"eager"``: :func:`.classify.eager`'s pair; ``"answers"``:
    :func:`.classify.eager_answers`' list)."""
    from . import classify

    table = _table()  # filled before "ready": not under any call's limit
    conn.send("ready")
    while True:
        try:
            kind, payload, arrays = conn.recv()  # a pickled function's module imported here
        except EOFError:
            return
        fn = table[payload] if isinstance(payload, str) else payload
        conn.send("started")  # the call's limit runs from here
        if kind == "eager":
            conn.send(_sendable(classify.eager(fn, arrays)))
        else:
            conn.send(classify.eager_answers(fn, arrays))


class EagerWorker:
    """One worker process, reused call after call, replaced when a call exceeds ``limit``
    seconds (killed) or the process dies."""

    def __init__(self, limit: float, bases: dict | None = None) -> None:
        self.limit = limit
        self._bases = bases  # id -> Base known to the worker (cases.bases())
        self._context = multiprocessing.get_context("spawn")
        self._process: Any = None
        self._conn: Any = None

    def __enter__(self) -> EagerWorker:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _start(self) -> None:
        parent, child = self._context.Pipe()
        process = self._context.Process(target=serve, args=(child,), daemon=True,
                                        name="capviz-differential-eager")
        process.start()
        child.close()
        self._process, self._conn = process, parent
        if parent.recv() != "ready":  # imports and the base table: not under the limit
            raise RuntimeError("the eager NumPy worker did not start")  # (filled before it)

    def close(self) -> None:
        """Stop the worker (its pipe closed: it returns; killed if it does not)."""
        if self._process is None:
            return
        self._conn.close()
        self._process.join(5)
        if self._process.is_alive():
            self._process.kill()
            self._process.join()
        self._process = self._conn = None

    def _kill(self) -> None:
        self._process.kill()
        self._process.join()
        self._conn.close()
        self._process = self._conn = None

    def call(self, kind: str, base: Any, arrays: Any) -> Any:
        """The worker's answer to ``kind`` for ``base``'s function on ``arrays``, or
        :data:`TIMEOUT` (past the limit: the worker is killed) or :data:`CRASH` (it died)."""
        if self._process is None:
            self._start()
        known = self._bases is not None and self._bases.get(base.id) is base
        try:
            self._conn.send((kind, base.id if known else base.fn, arrays))
            if self._conn.recv() != "started":  # the payload unpickled (its module imported)
                raise EOFError  # and looked up: the limit counts the call alone
            if not self._conn.poll(self.limit):
                self._kill()
                return TIMEOUT
            answer = self._conn.recv()
        except (EOFError, BrokenPipeError, ConnectionResetError):
            self._kill()
            return CRASH
        if kind == "eager":
            result, err = answer
            return result, _rebuilt(err)
        return answer
