"""Python values a function logs, compared between the capture's two runs: the containers a first
run logged into are given the items it left there for the second (:class:`Regrown`, as a second
call finds them), and a value the runs logged differently (``self.log.append(time.perf_counter())``,
a counter ``d["n"] = d.get("n", 0) + 1``) is refused (:func:`differs`): every replay would log
the first. Split from :mod:`capviz.trace.effects`, which records what is logged."""

from __future__ import annotations

from typing import Any

from capviz.core.user_code import shorten
from capviz.trace.effects import LOGGED, logging_line, set_items
from capviz.trace.recapture import CHANGES, refuse, same


class Regrown:
    """The containers a first run logged Python values into, given the items it left there for
    the second run (as an eager call leaves them: a helper reading ``len(HIST)`` takes the
    path a second call takes, and the runs differ), and their items back after it
    (:meth:`undo`)."""

    def __init__(self, places: list) -> None:
        self.places = [p for p in places if p.kind == "items" and p.left is not None]
        for place in self.places:
            set_items(place.holder, place.left)

    def undo(self) -> None:
        for place in self.places:
            set_items(place.holder, place.value)
            place.left = None


def differs(graph: Any, second: Any) -> Any:
    """Refuse on ``graph`` (the first capture's) a Python value a second run of the capture
    (``second``, its graph), which saw the containers as the first run left them (as a second
    call would: :class:`Regrown`), logged differently: ``self.log.append(time.perf_counter())``,
    a counter ``d["n"] = d.get("n", 0) + 1`` (review 8, finding 4): every replay would log the
    first one (lead rulings of stops 35, 03:00, and 36, 04:30). A value the first run set at a
    key and the second did not set again (it found it there: ``if "k" not in cfg: cfg["k"] =
    2.0``) is the same. Its error, or ``None`` where both runs logged the same values."""
    one, two = graph.logged_values, second.logged_values if second is not None else []
    sets = {(v.name, v.key): v for v in two if v.kind == "set"}
    first_sets = {(v.name, v.key) for v in one if v.kind == "set"}
    logs = [v for v in two if v.kind != "set"]
    k = 0
    for logged in one:
        if logged.kind == "set":
            other = sets.get((logged.name, logged.key))
            if other is None or same(logged.value, other.value):
                continue  # (found there by the second run: the value it holds)
        else:
            other = logs[k] if k < len(logs) else None
            k += 1
            if other is not None and (logged.kind, logged.name) == (other.kind, other.name) \
                    and same(logged.value, other.value):
                continue
        return _refuse_differing(graph, logged, other)
    extra = next((v for v in two if v.kind == "set" and (v.name, v.key) not in first_sets),
                 logs[k] if k < len(logs) else None)
    if extra is not None:  # (logged by the second run only)
        return _refuse_differing(graph, extra, None, second=True)
    return None


def _refuse_differing(graph: Any, logged: Any, other: Any, second: bool = False) -> Any:
    where, _text = logging_line(logged.name, logged.source)
    label = f"{logged.name}[{logged.key!r}]" if logged.kind == "set" else logged.name
    if other is not None and logged.kind == "set" and type(logged.value) in (int, float) and \
            type(other.value) in (int, float):  # (a counter: d["n"] = d.get("n", 0) + 1)
        return refuse(graph, graph.nodes[-1], CHANGES, label, (
            f"the call sets it to {_shown(logged.value)}, then to {_shown(other.value)} when "
            "it runs again, and a replay would set the first every time"), source=where)
    reason = (f"two runs of the capture logged {_shown(logged.value)}, then "
              f"{_shown(other.value)}" if other is not None else
              "only the second run of the capture logged it" if second else
              "a second run of the capture did not log it")
    return refuse(graph, graph.nodes[-1], LOGGED, logged.name, reason, source=where)


def _shown(value: Any) -> str:
    return shorten(repr(value), 40)
