"""``np.asarray`` / ``np.array`` of capture tensors, recorded as NumPy's own result.

``x = np.asarray(x)`` opens most library-style NumPy functions, and ``np.array([f(r) for r in
x])`` builds an array of per-row results. Both convert tensors, which have no values while a
capture runs. Each has an exact rewrite that the capture records instead of refusing:

- ``np.asarray(t)`` / ``np.asanyarray(t)`` is ``t`` itself (NumPy returns its argument when it
  is already an array); with a ``dtype`` it is ``t.astype(dtype, copy=False)``;
- of a tensor standing for a NumPy scalar (``x.sum()``, ``x[1]``), each of them is a new 0-d
  ndarray, as NumPy makes one (``np.copy``, cast first where a ``dtype`` is given): logged or
  kept, it is NumPy's 0-d array, never its scalar (review 7, finding 23);
- ``np.array(t)`` is ``t.copy()`` (``copy=None``: as ``np.asarray``); with a ``dtype`` it is
  ``t.astype(dtype)``;
- ``copy=False`` is NumPy 2's "never copy": ``t`` itself where no cast is asked for, and
  NumPy's own ``ValueError`` ("Unable to avoid copy ...") where one is, and for every list
  (a list always needs a copy; NumPy 1 code wrote ``copy=False`` for "copy if needed", which
  NumPy 2 refuses: review 4, finding 5);
- a ragged list (``np.array([[x[0]], x[1]])``) raises NumPy's own ``ValueError``, which
  NumPy computes from the stand-ins' shapes (it used to be refused with a fix that made no
  array);
- ``np.array(seq)`` / ``np.asarray(seq)`` of a (nested) list or tuple holding tensors, numbers
  and ndarrays is a stack of its items, each cast to the dtype NumPy would choose. That dtype and
  the shape are NumPy's own: :func:`convert` asks NumPy for them on stand-ins of each tensor's
  shape and dtype, so ragged lists, object arrays and NumPy's errors stay NumPy's (``None``: the
  call goes to NumPy, which then refuses at the user's line as before).

:func:`convert` is called by the creation hooks (:mod:`capviz.randomness.creation`) only for a
call the user's line makes while a capture is open; a call with no tensor in its argument goes to
NumPy as it did.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from capviz.trace.tensor import Tensor

CONVERTS = ("asarray", "asanyarray", "array")
"""The NumPy functions whose tensor arguments :func:`convert` records."""

_AS_IS = (None, "K", "A", "C")  # orders the values do not depend on (a tensor has no layout;
# "F" stays NumPy's, refused with the row's fix)


def convert(name: str, args: tuple, kwargs: dict) -> Tensor | None:
    """What ``np.<name>(*args, **kwargs)`` makes when its first argument is a tensor or a
    sequence holding one, as a recorded tensor; ``None`` when it is NumPy's to run."""
    call = _bind(name, args, kwargs)
    if call is None:
        return None
    obj, dtype, copy = call
    if type(obj) is Tensor and not obj.ndim and obj._trace.holds_scalar(obj):
        if copy is False:  # NumPy 2: a scalar always needs a copy (NumPy's own ValueError)
            np.array(np.zeros((), obj.dtype)[()], copy=False)
        cast = obj if dtype is None or np.dtype(dtype) == obj.dtype else obj.astype(dtype)
        return np.copy(cast)  # a NumPy scalar made an array: a 0-d ndarray of its own
    if type(obj) is Tensor:
        if dtype is not None and np.dtype(dtype) != obj.dtype:
            if copy is False:  # NumPy 2: a cast is a copy, refused with NumPy's own error
                np.array(_stand_in(obj), dtype=dtype, copy=False)
            return obj.astype(dtype)
        return obj.copy() if copy else obj
    if isinstance(obj, (list, tuple)) and _holds_tensor(obj):
        if copy is False:  # NumPy 2: a list always needs a copy (NumPy's own ValueError)
            np.array(_stand_in(obj), dtype=dtype, copy=False)
        return _sequence(obj, dtype)
    return None


def _bind(name: str, args: tuple, kwargs: dict) -> tuple[Any, Any, bool | None] | None:
    """``(obj, dtype, copy)`` of a call :func:`convert` handles, else ``None`` (``copy``: True,
    False, or None for "if needed")."""
    names = ("a", "dtype", "order") if name != "array" else ("object", "dtype")
    if not args or len(args) > len(names):
        return None
    given = dict(zip(names[1:], args[1:]))
    if given.keys() & kwargs.keys() or not kwargs.keys() <= {"dtype", "order", "copy"}:
        return None
    given |= kwargs
    if given.get("order") not in _AS_IS:
        return None
    copy = given.get("copy", True if name == "array" else None)
    if copy is not True and copy is not False and copy is not None:
        return None
    return args[0], given.get("dtype"), copy


def _holds_tensor(obj: Any) -> bool:
    if type(obj) is Tensor:
        return True
    return isinstance(obj, (list, tuple)) and any(_holds_tensor(item) for item in obj)


def _stand_in(obj: Any) -> Any:
    """``obj`` with each tensor replaced by a read-only zero view of its shape and dtype (no
    memory per element), for NumPy to choose the result's shape and dtype."""
    if type(obj) is Tensor:
        return np.broadcast_to(np.zeros((), obj.dtype), obj.shape)
    if isinstance(obj, (list, tuple)):
        return [_stand_in(item) for item in obj]
    return obj


def _sequence(obj: list | tuple, dtype: Any) -> Tensor | None:
    try:
        made = np.array(_stand_in(obj), dtype=dtype)
    except ValueError:  # ragged: NumPy's own error, from the shapes alone (as eager raises)
        raise
    except TypeError:
        return None  # values NumPy refuses: NumPy's to raise
    if made.dtype.kind in "OSUV" or made.size == 0:
        return None
    return _stack(obj, made.dtype)


def _stack(obj: Any, dtype: np.dtype) -> Any:
    """``obj`` as NumPy's ``np.array(obj, dtype)`` makes it: each leaf cast to ``dtype`` as NumPy
    casts it, the lists stacked along a new first axis."""
    if type(obj) is Tensor:
        return obj if obj.dtype == dtype else obj.astype(dtype)
    if isinstance(obj, (list, tuple)):
        return np.stack([_stack(item, dtype) for item in obj])
    return np.array(obj, dtype=dtype)
