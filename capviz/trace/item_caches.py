"""A dict item the call sets to a value of the data over the array it held (``self.cache["x"]
= x`` in a layer's forward, captured after an eager call): set again by each replay as the call
sets it (an effect output of kind ``"set"``, :mod:`capviz.replay.state`), as an attribute cache
is (:mod:`capviz.trace.attribute_caches`). Refused as before (a value stored over an array,
which a replay cannot store) where the old array may be read: the capture read it, the value
is computed from an array no walk found, or a line of the code the call runs names the dict
other than to store that item (``bn["mean"] = 0.9 * bn["mean"] + ...``, ``for k, v in
self.cache.items()``). Called by :func:`capviz.trace.rebound.put_back`."""

from __future__ import annotations

import re
import types
from collections.abc import Callable
from typing import Any

import numpy as np

from capviz.core.ir import Node
from capviz.trace import effects, recapture
from capviz.trace.attribute_caches import unexplained
from capviz.trace.fn_lines import body, source_lines, writing_line
from capviz.trace.mutation import current
from capviz.trace.places import Place, function_of
from capviz.trace.provenance import of_data, read_by_capture
from capviz.trace.tensor import Tensor


def item_cache_set(place: Place, tensor: Tensor, recorder: Any, fn: Callable | None,
                   read: set[int], known: set[int]) -> bool:
    """Whether the call sets the dict item ``place`` (a string key, which held an ndarray) to
    ``tensor``, a value of the data, and nothing the call runs may read the array it held (see
    the module docstring): a cache each call sets anew, which each replay can set."""
    if place.kind != "dict" or type(place.value) is not np.ndarray or place.path is None or \
            type(place.key) is not str or fn is None or not of_data(tensor, recorder) or \
            read_by_capture(place.value, read) or unexplained(recorder, tensor, known):
        return False
    found = source_lines(fn)
    if found is None:
        return False
    texts = [text for _, text in body(found[1])]
    owner = type(function_of(fn)[0]) if function_of(fn)[0] is not None else None
    space = getattr(function_of(fn)[1], "__globals__", {})
    for name in found[0].co_names:  # (a method or a function of its module reading it)
        helper = space.get(name) if name in space else getattr(owner, name, None)
        if isinstance(helper, (types.FunctionType, types.MethodType)):
            try:
                texts += [text for _, text in body(recapture.source_lines(helper)[0])]
            except (OSError, TypeError):
                return False
    container = place.label.rsplit("[", 1)[0]
    name = re.escape(re.split(r"[.\]]", container)[-1] or container)
    key = re.escape(place.key)
    store = re.compile(rf"(?<![\w])(?:\w+\.)*{name}\s*\[\s*(?:'{key}'|\"{key}\")\s*\]\s*"
                       r"=(?!=)")
    mention = re.compile(rf"(?<![\w]){name}(?!\w)")
    return not any(mention.search(store.sub("", part)) for text in texts
                   for part in text.split(";"))


def set_by_replays(place: Place, tensor: Tensor, recorder: Any, fn: Callable | None) -> None:
    """An effect output storing ``tensor``'s value at dict item ``place`` after each replay,
    at the line of ``fn`` that stores it."""
    anchor, steps = place.path
    where = writing_line(fn, place.label)[0] if fn is not None else None
    graph = recorder.graph
    node = current(recorder, tensor)
    params: dict[str, Any] = {"effect": "set", "key": place.key}
    if node.shape == () and recorder.holds_scalar(tensor):
        params["scalar"] = True
        effects.python_number(node, params, recorder)
    out = Node(len(graph.nodes), "output", None, (node,), params, node.shape, node.dtype,
               where or tensor._data.source, "", place.label.rsplit("[", 1)[0])
    graph.nodes.append(out)
    graph.effect_places[out.index] = (anchor, steps[:-1])
