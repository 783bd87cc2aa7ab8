"""Tensors logged into containers that outlive the call, replayed after the graph.

``self.losses.append(loss)``, ``hist["last"] = x.mean()``, a scratch list each call empties
and fills (``self.acts.clear(); self.acts.append(h)``), frames in a ``deque(maxlen=4)``: an
eager call leaves the new values in the user's list, dict or deque; a capture cannot leave its
tensors there (:mod:`capviz.trace.rebound` gives the container the items it held back). As
Dynamo replays the side effects a traced function makes after its graph, each such value is
an **effect output** of the graph (an ``output`` node with ``params["effect"]``: ``"append"``,
``"refill"`` (the container emptied first) or ``"set"`` with ``params["key"]``), and a replay
applies it once every op has run, with the replayed value, as the eager call does: appended to
the list or deque the user's path leads to now (``Graph.effect_places``: ``(anchor, steps)``
from the object the user holds, followed again at each replay), or stored at its key; a value
NumPy gives as a scalar (``np.mean(err ** 2)``) is appended as that scalar.

Only what a replay can repeat exactly is replayed: capture tensors appended after the items the
container held (or to a container the call emptied first), and tensors stored at a ``str`` or
``int`` key. Anything else done with a capture tensor there (an insert, a pop, a tuple of
tensors, a key deleted) is refused at the line of the function that does it, never left out:
a replay that does not log what the call logs is a silent difference in the user's state
(lead ruling of stop 34, 23:15). A Python value the call logs (``self.log.append("step")``,
``self.seen.append(x.shape)``, ``hist["phase"] = "train"``: ``None``, a bool, number or str, a
tuple, list or dict of them) is logged by each replay as the value the capture's runs logged
(a :class:`capviz.core.ir.LoggedValue`), and refused at its line where two runs logged
different values (:func:`capviz.trace.logged_runs.differs`; lead ruling of stop 35, 03:00):
the capture itself leaves the container as it found it, as for a tensor.
"""

from __future__ import annotations

import collections
import linecache
import re
from typing import Any

import numpy as np

from capviz.core.ir import LoggedPart, LoggedValue, Node
from capviz.core.logged_reads import kept
from capviz.core.source import format_source
from capviz.core.user_code import UserCode, shorten
from capviz.core.violations import Failure, explain
from capviz.trace import state_fixes
from capviz.trace.fn_lines import reads_itself
from capviz.trace.mutation import current
from capviz.trace.recapture import line_code, same
from capviz.trace.tensor import Tensor

REBOUND = "a capture tensor bound outside the capture"
"""The ``call`` of a refused rebinding (the situation ``rebound_to_tensor``)."""
RUNNING = (
    "the capture put the number back, and a replay computes the new one but cannot store it "
    "there, so every replay would start from the same number; keep it in a 0-d ndarray made "
    "before the capture (in __init__: np.zeros(())) and update it in place from the "
    "capture's values (total += x.sum(); an average: ema[...] = 0.9 * cv.constant(ema) + "
    "0.1 * x.sum()), which the capture records as a state")
"""Why a running number kept in a name or an item is refused, and the fix."""
KEPT = "a capture tensor kept in a container"
"""The ``call`` of the refusal (the situation ``kept_in_container``)."""
LOGGED = "a Python value logged by the call"
"""The ``call`` of a refused log of Python values (the situation ``logged_python_value``)."""
MADE_AT_KEY = "a list or dict the call makes at a key it asks for"
"""The ``call`` of a refused ``m.setdefault(k, []).append(loss)`` on its first call (the
situation ``made_at_key``)."""
TWICE = "one list or dict the call logs twice"
"""The ``call`` of a refused ``rec = {"loss": l}; a.append(rec); b.append(rec)`` (the situation
``logged_twice``: each replay would build two)."""
READ_LOGGED = "a number read from a tensor logged by the call"
"""The ``call`` of a refused log of a Python float a read of the data gave (``l = loss.item();
losses.append(l)``: the situation ``logged_read_number``)."""

_SEQUENCES = (tuple, list, dict, collections.deque)


def _ours(value: Any, recorder: Any) -> bool:
    return type(value) is Tensor and value._trace is recorder


_PLAIN = (type(None), bool, int, float, complex, str)


def plain(value: Any, depth: int = 3) -> bool:
    """Whether ``value`` is a Python value a replay can log again as it is: ``None``, a bool,
    int, float, complex or str, or a tuple, list or dict (``str`` keys) of them, 256 items and
    three levels at most (``x.shape``, ``("fwd", 3)``, ``{"phase": "train"}``)."""
    kind = type(value)
    if kind in _PLAIN:
        return True
    if depth <= 0 or kind not in (tuple, list, dict) or len(value) > 256:
        return False
    if kind is dict:
        return all(type(k) is str and plain(v, depth - 1) for k, v in value.items())
    return all(plain(v, depth - 1) for v in value)


def _loggable(value: Any, recorder: Any) -> bool:
    return _ours(value, recorder) or plain(value) or structure(value, recorder)


def structure(value: Any, recorder: Any, depth: int = 3) -> bool:
    """Whether ``value`` is a tuple, list or dict (``str`` keys) holding tensors of
    ``recorder`` and :func:`plain` values only, at least one tensor, 256 items and three levels
    at most (``{"loss": loss}``, ``(step, loss)``, ``[loss, acc]``): each call builds a new one,
    and so does each replay, with the replayed values (a :class:`LoggedPart` for each tensor)."""
    return type(value) in (tuple, list, dict) and _built(value, recorder, depth) and \
        _holds(value, recorder, depth)


def _built(value: Any, recorder: Any, depth: int) -> bool:
    kind = type(value)
    if kind in _PLAIN or _ours(value, recorder):
        return True
    if depth <= 0 or kind not in (tuple, list, dict) or len(value) > 256:
        return False
    if kind is dict:
        return all(type(k) is str and _built(v, recorder, depth - 1) for k, v in value.items())
    return all(_built(v, recorder, depth - 1) for v in value)


def leaves(value: Any, recorder: Any) -> list[Tensor]:
    """The tensors of ``recorder`` in :func:`structure` ``value`` (or ``value`` itself)."""
    if _ours(value, recorder):
        return [value]
    if type(value) not in (tuple, list, dict):
        return []
    items = value.values() if type(value) is dict else value
    return [t for v in items for t in leaves(v, recorder)]


def _containers(value: Any) -> list[Any]:
    """The lists and dicts in tuple, list or dict ``value``, ``value`` itself included."""
    if type(value) not in (tuple, list, dict):
        return []
    items = value.values() if type(value) is dict else value
    return [value] * (type(value) is not tuple) + [c for v in items for c in _containers(v)]


def _described(value: Any, depth: int = 3) -> bool:
    """Whether ``value`` is or holds text capviz made for a tensor (``f"{loss}"`` in a
    capture: ``'<capture tensor %3 (sum, float64[]) of 'f'>'``)."""
    if type(value) is str:
        return "<capture tensor " in value or "<closed capture tensor " in value
    if depth <= 0 or type(value) not in (tuple, list, dict):
        return False
    items = value.values() if type(value) is dict else value
    return any(_described(v, depth - 1) for v in items)


def _arrays(value: Any) -> bool:
    """An ndarray or NumPy scalar (logged by NumPy with no tensor: refused by its own rule,
    capviz/trace/container_items.py's ``numpy_logged``)."""
    return type(value) is not Tensor and isinstance(value, (np.ndarray, np.generic))


def stand_in(value: Any) -> bool:
    """Whether ``value`` is capviz's stand-in for a generator object while a capture is open
    (capviz/randomness/generators.py: the real one is put back when the scope closes)."""
    return "_capviz_real" in getattr(type(value), "__slots__", ())


def _other_object(value: Any) -> str:
    """Why an object the call logs is refused (review 8, finding 6: silent, left by the
    capture's runs and never logged by a replay)."""
    kind = type(value).__name__
    inner = [v for v in (value.values() if type(value) is dict else value)
             if not plain(v)] if type(value) in (tuple, list, dict) else []
    held = "" if not inner else " holding an ndarray" if isinstance(inner[0], np.ndarray) \
        else f" holding a {type(inner[0]).__name__}"
    return (f"the call logs a {kind}{held}, which a replay cannot log again as the call does "
            "(a replay logs tensors, and None, bools, numbers, str and tuples, lists and dicts "
            "of them)")


def _holds(value: Any, recorder: Any, depth: int = 3) -> bool:
    if _ours(value, recorder):
        return True
    if depth <= 0 or type(value) not in _SEQUENCES:
        return False
    items = value.values() if isinstance(value, dict) else value
    return any(_holds(item, recorder, depth - 1) for item in list(items)[:256])


def logged(place: Any, left: Any, recorder: Any, of_data: Any, where: Any = None,
           outside: Any = frozenset()) -> list[tuple] | str | None:
    """What the call did with capture tensors to the walked container ``place.holder``
    (``place.value``: its items when noted; ``left``: a copy of them as the call left them),
    as effects a replay repeats: ``[(kind, key,
    value), ...]``, each value a tensor or a :func:`plain` Python value; a reason (``str``)
    where a replay cannot repeat it; ``None`` where it holds no new value, or only values of
    constants (``of_data(tensor)`` false: a memo, ``if not MASKS: MASKS.append(np.tril(...))``,
    given its items back as before). ``where``: a line of the function, for a log of Python
    values only (the lines read are its function's); ``outside``: the ids of the lists and
    dicts the walk found (one logged itself is refused)."""
    items = left.values() if isinstance(left, dict) else left
    ours = [t for v in items for t in leaves(v, recorder)]
    if ours and not any(of_data(t) for t in ours) and (
            place.path is None or tested(place.label, ours[0]._data.source)):
        return None  # a memo of constants (SLOTS[n] = np.tril(...) if SLOTS[n] is None)
    found = _logged(place, left, recorder, where)
    if not isinstance(found, list):
        return found
    shared = next((c for _, _, value in found for c in _containers(value)
                   if id(c) in outside), None)
    if shared is not None:  # (self.log.append(self.cfg): review 8, finding 11)
        return ("the call logs a list or dict it holds outside the call itself, the same object "
                "each call, which a replay would log as a copy of what it held at the capture; "
                "log a new one made from its values (dict(self.cfg)) or the values themselves")
    if any(_described(value) for _, _, value in found):
        return ("the call logs text made from a value of the capture (str, repr or an "
                "f-string of it: '<capture tensor ...>'), where each call logs its value's text; "
                "log the value itself (self.log.append(loss)) and format it after the replay")
    read = next((r for _, _, value in found if (r := _read_from(value, recorder.graph))), None)
    if read is not None:  # (l = loss.item(); losses.append(l): review 8, finding 18)
        return read
    tensors = [t for _, _, value in found for t in leaves(value, recorder)]
    if not tensors:
        return found  # Python values only: the same each call (or refused: differs)
    built = [id(c) for _, _, value in found for c in _containers(value)]
    if len(set(built)) < len(built):  # (rec = {"loss": l}; a.append(rec); a.append(rec))
        return _Twice("twice into it")
    data = [of_data(tensor) for tensor in tensors]
    if not any(data) and (place.path is None or
                          tested(place.label, tensors[0]._data.source)):
        return None  # a memo: filled when the function finds it empty or missing the key
    if any(data) and not all(data) and tested(place.label, tensors[0]._data.source):
        return ("the call logs values of the data and values of constants only (a memo) "
                "into it, which a replay cannot tell apart")
    return found


class _Read(str):
    """Why a Python float read from a tensor that the call logs is refused, and the fix."""


class _Twice(str):
    """Where one list or dict holding values of the capture is logged twice."""


class _Made(str):
    """Why a list or dict the call makes at a key it asks for is refused, and the fix."""


def _read_from(value: Any, graph: Any) -> _Read | None:
    """Why a Python float logged (``losses.append(l)``) is refused where a read of the data
    gave it (a guard of a capture with examples, ``l = loss.item()``, read that same value):
    every replay would log the capture's number, or refuse "another branch" on other data."""
    if type(value) is not float:
        return None
    for node in graph.nodes:
        if node.kind == "guard" and node.op in ("float()", ".item()") and \
                type(node.params.get("value")) is float and node.params["value"] == value:
            source = node.source
            text = line_code(linecache.getline(source[0], source[1])) if source else ""
            fixed = kept(text, node.op) if text else ""
            kept_text = f" ({fixed})" if fixed and fixed != text else ""
            return _Read(f"the number was read from a tensor ({node.op} at "
                         f"{format_source(source)}), and a replay would log the capture's "
                         f"number; keep it the tensor{kept_text} and log that: each replay logs "
                         "NumPy's scalar of its value (np.float64, which is a float)")
    return None


def _made_at_key(place: Any, key: Any, value: Any, recorder: Any, where: Any) -> str | None:
    """Why a tuple, list or dict holding values of the capture stored at ``key`` of walked dict
    ``place.holder`` is refused: a list or dict made where the dict held none on a call that
    asks for the key (``m.setdefault("loss", []).append(loss)``, a ``defaultdict(list)``, ``if
    k not in m: m[k] = []``), which later calls add to where each replay would make it again; or
    stored over the one there. ``None``: a new one each call, as each replay builds it."""
    label = f"{place.label}[{key!r}]"
    source = leaves(value, recorder)[0]._data.source or where
    readable = bool(source) and bool(linecache.getline(source[0], source[1]).strip())
    if key in place.value and readable:
        return None if type(value) is tuple else (
            "the call stores a new list or dict holding a value of the capture over the one "
            f"at {key!r}; log into the one there ({label}.append(...)), which each replay "
            "repeats")
    if readable and not tested(place.label, source) and (type(value) is tuple or not callable(
            getattr(place.holder, "default_factory", None))):
        return None  # (no source text: a test of the key not seen, review 9, finding 12)
    return _Made(f"the call asks for the key (setdefault, a defaultdict, a test of the key); "
                 f"create {label} before the capture (in __init__, or by one eager call), so "
                 "that the call logs into it, which each replay repeats")


NO_SOURCE = ("capviz cannot read the function's lines (no source text: python -c, exec, the "
             "plain python prompt, a .pyc-only install), so it cannot tell a value logged at a "
             "new key from a running value added to")


def accumulated(label: str, tensor: Tensor, where: Any) -> bool:
    """Whether ``tensor``, stored at ``label`` where nothing was (a ``defaultdict(float)``'s
    ``m["loss"] += x.sum()``, ``m["loss"] = m.get("loss", 0.0) + x.sum()``), is a running value
    the line that made it or a line of the function (``where``) adds to (review 8, finding
    13: silent, stored as 0.0 + loss by each replay)."""
    source = tensor._data.source
    if source and reads_itself(line_code(linecache.getline(source[0], source[1])), label):
        return True
    return bool(where) and any(reads_itself(text, label) for _, text in
                               state_fixes.function_lines(where[0], where[1], where[2]))


def tested(label: str, source: Any) -> bool:
    """Whether the function at ``source`` tests what ``label`` holds (``if not DEQ:``,
    ``n not in MEMO``, ``len(MEMO)``, ``MEMO.get(n)``): a memo it fills once."""
    if not source:
        return True
    name = _pattern(label)
    tested = re.compile(rf"\bnot\s+{name}\b(?!\s*[.\[])|\bif\s+{name}\s*:|\bin\s+{name}\b"
                        rf"|\blen\(\s*{name}\s*\)|(?<![\w.]){name}\.(?:get|setdefault)\("
                        rf"|\bexcept\b.*\b(?:KeyError|IndexError|LookupError)\b")
    return _any_line(tested, source)


def _logged(place: Any, holder: Any, recorder: Any, where: Any = None
            ) -> list[tuple] | str | None:
    before = place.value
    if isinstance(holder, dict):
        if any(key not in holder for key in before):
            return "the call deleted an item of it, which a replay does not repeat"
        found = []
        for key, value in holder.items():
            if key in before and before[key] is value:
                continue
            if not _loggable(value, recorder):
                if _holds(value, recorder):
                    return ("the call stored a tuple, list or dict holding a value of the "
                            f"capture at {key!r}, which a replay does not build")
                continue  # another object: a memo's more often than a log's (a cache of
                #           namespaces a helper fills, if n not in kept: kept[n] = ...), kept
            if key in before and plain(value) and type(before[key]) is type(value) and \
                    same(before[key], value):
                continue  # (the value it held: nothing a replay need log)
            if type(key) not in (str, int):
                return (f"its key {key!r} is no str or int, which a replay could store at")
            if structure(value, recorder):  # ({"loss": [loss]}, m.setdefault(k, []).append)
                made = _made_at_key(place, key, value, recorder, where)
                if made is not None:
                    return made
            if key not in before and _ours(value, recorder) and \
                    current(recorder, value).shape == () and \
                    accumulated(f"{place.label}[{key!r}]", value, where):
                return RUNNING  # (a defaultdict(float)'s m["loss"] += x.sum())
            source = value._data.source if _ours(value, recorder) else where
            if key not in before and not (source and linecache.getline(source[0], source[1])):
                return NO_SOURCE  # (a log, or m["loss"] += x: review 9, finding 13)
            found.append(("set", key, value))
        return found or None
    now = list(holder)
    k = len(now)
    while k and _loggable(now[k - 1], recorder):
        k -= 1
    kept = 0  # (a Python value is no object of its own: 1 is 1, "step" is "step")
    while kept < min(len(now), len(before)) and now[kept] is before[kept]:
        kept += 1
    if kept == len(before):
        k = max(k, kept)
        other = next((v for v in now[kept:] if not _loggable(v, recorder) and not _arrays(v)
                      and not _holds(v, recorder) and not stand_in(v)), None)
        if other is not None and not tested(place.label, where):
            return _other_object(other)  # (self.log.append(self), ("W", self.W))
    new, rest = now[k:], now[:k]
    if not any(_ours(v, recorder) for v in new) and kept == len(before) == len(now):
        new, rest = [], now  # (nothing added)
    if not new:
        return None if not any(_holds(v, recorder) for v in now) else (
            "the call put a value of the capture among its items (an insert, a tuple or "
            "list of them), which a replay does not repeat")
    if any(_holds(v, recorder) for v in rest):
        return ("the call put a value of the capture among its items (an insert, a tuple or "
                "list of them), which a replay does not repeat")
    maxlen = getattr(place.holder, "maxlen", None)
    tensor = next((t for v in new for t in leaves(v, recorder)), None)
    source = tensor._data.source if tensor is not None else where
    values = tensor is None or any(not _ours(v, recorder) for v in new)
    if _at_front(place.label, source):
        return ("the call puts values of the capture before its items (insert, appendleft, "
                "a slice stored), which a replay does not repeat")
    if not rest and _cleared(place.label, source):
        kind = "refill"  # emptied, then filled: self.acts.clear(); self.acts.append(h)
    elif len(rest) == len(before) and all(a is b for a, b in zip(rest, before)):
        kind = "append"
    elif maxlen is not None and len(now) == maxlen and not values and \
            all(a is b for a, b in zip(rest, before[len(before) - len(rest):])):
        kind = "append"  # (a deque(maxlen) drops its oldest items as eagerly)
    elif not rest and not values and type(place.holder) is collections.deque and \
            _slot_stored(place.label, source):  # (a list's slots are places: rebound.py)
        return ("the call stores values of the capture over items it held (a slot written: "
                f"{place.label}[0] = ...), which a replay cannot store; keep them in one ndarray "
                "written in place (buf[0] = ...), which the capture records as a state")
    elif not rest and not values:
        kind = "refill"  # emptied, then filled: self.acts.clear(); self.acts.append(h)
    else:
        return ("the call removed or moved items it held and added values of the capture, "
                "which a replay does not repeat") if tensor is not None else (
            "the call removed or moved items it held, which a replay does not repeat")
    return [(kind, None, value) for value in new]


def record(place: Any, left: Any, found: list[tuple] | str, recorder: Any,
           line: Any = None) -> None:
    """Add an effect output for each tensor of ``found`` (:func:`logged`) to ``recorder``'s
    graph, a :class:`LoggedValue` for each Python value, or queue the refusal at the line that
    logs into ``place``'s container (``left``: its items as the call left them; ``line``: a
    line of the function, where it logs Python values only)."""
    graph = recorder.graph
    if isinstance(found, list):  # (one dict logged into two lists: review 9, finding 11)
        built = {id(c) for _, _, value in found for c in _containers(value)}
        seen = recorder.__dict__.setdefault("_capviz_logged_structures", set())
        if built & seen:
            found = _Twice("into two containers")
        seen |= built
    tensor = next((t for _, _, t in found if _ours(t, recorder)), None) \
        if isinstance(found, list) else _first(left, recorder)
    source = tensor._data.source if tensor is not None else line
    where, text = logging_line(place.label, source)
    if isinstance(found, str) or place.path is None:
        reason = found if isinstance(found, str) else (
            "capviz does not know where the user holds it, so a replay could not log there")
        call = REBOUND if found is RUNNING else READ_LOGGED if type(found) is _Read else \
            MADE_AT_KEY if type(found) is _Made else TWICE if type(found) is _Twice else \
            KEPT if tensor is not None else LOGGED
        message = explain(Failure("unsupported_op", call, place.label, where,
                                  UserCode("other", shorten(text)), None, reason))
        recorder.pending.append(("unsupported_op", call, message, where))
        return
    for kind, key, value in found:
        if not _ours(value, recorder):
            if not plain(value):  # a tuple, list or dict holding tensors: one part each
                value = _parted(value, place, recorder, where)
            graph.logged_values.append(LoggedValue(len(graph.nodes), kind, key, value,
                                                   place.label, where, place.path))
            continue
        _effect_output(value, kind, key, place, recorder, where)


def _effect_output(value: Tensor, kind: str, key: Any, place: Any, recorder: Any,
                   where: Any) -> Node:
    graph = recorder.graph
    node = current(recorder, value)
    params: dict[str, Any] = {"effect": kind}
    if key is not None:
        params["key"] = key
    if node.shape == () and recorder.holds_scalar(value):
        params["scalar"] = True  # (np.mean(...) appends NumPy's scalar, not a 0-d array)
        python_number(node, params, recorder)
    out = Node(len(graph.nodes), "output", None, (node,), params, node.shape, node.dtype,
               where, "", place.label)
    graph.nodes.append(out)
    graph.effect_places[out.index] = place.path
    return out


def _parted(value: Any, place: Any, recorder: Any, where: Any) -> Any:
    """:func:`structure` ``value`` with each tensor an effect output of kind ``"part"`` and a
    :class:`LoggedPart` in its place (``{"loss": %7}``): a replay builds it anew with the
    replayed values (capviz/replay/state.py)."""
    if _ours(value, recorder):
        return LoggedPart(_effect_output(value, "part", None, place, recorder, where).index)
    if type(value) is dict:
        return {k: _parted(v, place, recorder, where) for k, v in value.items()}
    if type(value) in (list, tuple):
        return type(value)(_parted(v, place, recorder, where) for v in value)
    return value


def set_items(holder: Any, items: Any) -> None:
    """Give list, deque or dict ``holder`` the items ``items`` (a list, or a dict)."""
    holder.clear()
    if isinstance(holder, dict):
        holder.update(items)
    else:
        holder.extend(items)


def record_attribute(place: Any, key: str, value: Tensor, recorder: Any) -> bool:
    """An effect output setting attribute ``key`` of the walked object ``place.holder`` to
    ``value`` after each replay (``self.x = x``, ``self.dW = ...``: a layer keeping what its
    backward reads; the caller checks that no code asks whether it exists yet)."""
    source = value._data.source
    graph = recorder.graph
    node = current(recorder, value)
    params: dict[str, Any] = {"effect": "attr", "key": key}
    if node.shape == () and recorder.holds_scalar(value):
        params["scalar"] = True
        python_number(node, params, recorder)
    out = Node(len(graph.nodes), "output", None, (node,), params, node.shape, node.dtype,
               source, "", place.label)
    graph.nodes.append(out)
    graph.effect_places[out.index] = place.path
    return True


PYTHON_TYPES = {"b": "bool", "i": "int", "u": "int", "f": "float", "c": "complex"}
"""The Python type of a value eager code holds as a Python number, by its dtype's kind."""


def python_number(node: Node, params: dict, recorder: Any) -> None:
    """Mark effect output ``params`` ``python``: the type eager code holds where ``node`` is a
    Python number there (a draw of one, ``random.random()``, and Python arithmetic on such
    draws only: :func:`capviz.trace.state.python_operands`), which a replay writes back as that
    type, not as NumPy's scalar (review 10, finding 2: ``self.r = random.random()`` came back
    np.float64, which NumPy 2 promotes strongly: ``x32 * self.r`` became float64)."""
    if node.index in recorder.python_nodes and node.dtype is not None:
        kind = PYTHON_TYPES.get(np.dtype(node.dtype).kind)
        if kind is not None:
            params["python"] = kind


def _first(holder: Any, recorder: Any) -> Tensor | None:
    items = holder.values() if isinstance(holder, dict) else holder
    for item in list(items)[:256]:
        if _ours(item, recorder):
            return item
        if type(item) in _SEQUENCES:
            inner = _first(item if type(item) is not tuple else list(item), recorder)
            if inner is not None:
                return inner
    return None


def _any_line(pattern: re.Pattern, source: Any) -> bool:
    """Whether a line of the function at ``source`` matches ``pattern``."""
    lines = state_fixes.function_lines(source[0], source[1], source[2])
    own = line_code(linecache.getline(source[0], source[1]))  # (a one-line def's own body)
    return any(pattern.search(text) for text in [own, *(text for _, text in lines)])


def logging_pattern(label: str) -> str:
    """A regular expression of a line logging into ``label`` (``label.append(``, ``label[k]
    = ``...)."""
    name = _pattern(label)
    return (rf"(?<![\w.]){name}\s*(?:\.\s*(?:append|extend|insert|appendleft|extendleft|"
            rf"setdefault|update)\s*\(|\[[^\]]*\]\s*=(?!=))")


def _pattern(label: str) -> str:
    return re.escape(label).replace("'", "['\"]")  # (either quote in the user's code)


_CLEARED = (r"(?<![\w.]){name}\.clear\(\s*\)|^{name}\s*\[\s*:\s*\]\s*=(?!=)"
            r"|^del\s+{name}\s*\[\s*:\s*\]")
"""A line emptying the container ``name`` (``label.clear()``, ``label[:] = []``, ``del
label[:]``): one the function empties and fills each call."""
_AT_FRONT = (r"(?<![\w.]){name}\.(?:insert|appendleft|extendleft)\("
             r"|(?<![\w.]){name}\s*\[(?!\s*:\s*\])[^\]]*:[^\]]*\]\s*=(?!=)")
"""A line putting items anywhere but at the end of ``name`` (``insert``, ``appendleft``,
``extendleft``, a slice stored but ``label[:] = ``)."""


def _slot_stored(label: str, source: Any) -> bool:
    """Whether a line of the function at ``source`` stores into an item of ``label``
    (``self.h[0] = 0.9 * self.h[0] + x`` on a deque: review 8, finding 22, taken for a
    container emptied and filled)."""
    name = _pattern(label)
    return not source or _any_line(re.compile(
        rf"(?:^|[:;]\s*){name}\s*\[(?!\s*:\s*\])[^\]]*\]\s*(?:\*\*|//|>>|<<|[-+*/%@&|^])?=(?!=)"),
        source)


def _cleared(label: str, source: Any) -> bool:
    return bool(source) and _any_line(re.compile(_CLEARED.format(name=_pattern(label))),
                                      source)


def _at_front(label: str, source: Any) -> bool:
    return not source or _any_line(re.compile(_AT_FRONT.format(name=_pattern(label))), source)


def logging_line(label: str, source: Any) -> tuple[Any, str]:
    """The line of the function at ``source`` that logs into ``label`` (``label.append(``,
    ``label[k] = ``, ``label.clear()``...), else ``source``'s; with its code."""
    if not source:
        return source, ""
    logging = re.compile(logging_pattern(label))
    for line, text in state_fixes.function_lines(source[0], source[1], source[2]):
        if logging.search(text):
            return (source[0], line, source[2]), line_code(text)
    return source, line_code(linecache.getline(source[0], source[1]))
