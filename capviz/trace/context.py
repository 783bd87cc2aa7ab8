"""The captures and name scopes open in the current execution context.

Two context variables (:mod:`contextvars`) hold them, so a capture records nothing from another
thread or asyncio task; each change is one ``ContextVar.set`` of an immutable tuple, so an
interrupt can never leave half a change behind. What the hooks and the tensor ask
(:func:`is_capturing`, :func:`active_recorders`) reads them.
"""

from __future__ import annotations

import contextvars
from typing import Protocol

from capviz.trace.scopes import ExplicitScope


class Recorder(Protocol):
    """What this module knows of a capture's recorder (:class:`capviz.trace.recorder.Recorder`,
    which imports this module): whether its scope has ended."""

    ended: bool


RECORDERS: contextvars.ContextVar[tuple[Recorder, ...]] = contextvars.ContextVar(
    "capviz_recorders", default=())
NAME_SCOPE: contextvars.ContextVar[tuple[ExplicitScope, ...]] = contextvars.ContextVar(
    "capviz_name_scope", default=())


def active_recorders() -> tuple[Recorder, ...]:
    """The recorders of the capture scopes open in the current context, outermost first.

    A call made here happens inside each of these captures (the seed hooks report to them). A
    recorder closed by a violation in ``raise`` mode stays listed until its scope exits.
    """
    return tuple(r for r in RECORDERS.get() if not r.ended)


def active() -> Recorder | None:
    """The recorder of the innermost capture scope open in the current context, or ``None``."""
    for recorder in reversed(RECORDERS.get()):
        if not recorder.ended:
            return recorder
    return None


def is_capturing() -> bool:
    """True inside an open capture scope of the current context (thread or asyncio task)."""
    return active() is not None


def registered_recorders() -> tuple[Recorder, ...]:
    """Every recorder registered in the current context, open or not (leak checks read it)."""
    return RECORDERS.get()


def register(recorder: Recorder) -> None:
    """Make ``recorder`` the innermost capture of the current context (one atomic step)."""
    RECORDERS.set((*RECORDERS.get(), recorder))


def unregister(recorder: Recorder) -> None:
    """Remove ``recorder`` from the current context; idempotent, so a cleanup can repeat it."""
    current = RECORDERS.get()
    if recorder in current:
        i = current.index(recorder)
        RECORDERS.set(current[:i] + current[i + 1:])


def name_scope_path() -> str:
    """The "/"-joined explicit name-scope path of the current context ("" outside any)."""
    return "/".join(e.name for e in NAME_SCOPE.get())


def name_scope_entries() -> tuple[ExplicitScope, ...]:
    """The explicit name scopes open in the current context, outermost first."""
    return NAME_SCOPE.get()


def set_name_scope_entries(entries: tuple[ExplicitScope, ...]) -> None:
    """Set the current context's open name scopes (one atomic step)."""
    NAME_SCOPE.set(entries)
