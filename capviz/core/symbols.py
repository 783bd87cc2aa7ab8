"""Size symbols: the length of an axis that depends on the data (``n0`` in ``float64[n0,3]``).

A boolean-mask read ``x[mask]``, ``np.nonzero``, ``np.unique``... makes a result whose length
is known only when the graph runs. The recorder gives that axis a :class:`Symbol` instead of an
int. A symbol is defined by where it comes from (axis ``axis`` of node ``origin``'s result),
which is all a replay needs: NumPy computes the real length when it runs the op. The symbol
also keeps an upper bound (a mask of ``n`` elements selects at most ``n``), used by the memory
plan, and, during a capture with example values, its length on the examples.

Shape rules are written for ints. They keep running unchanged on symbolic shapes because the
recorder runs them on ints standing for the symbols (:func:`substitute`) and reads the result
back (``capviz.trace.sizes``). A :class:`Symbol` is deliberately not an ``int``: arithmetic on it
(``n0 * 3``), comparison and ``operator.index`` ask the capture that made it for the number,
which records a guard (:attr:`Symbol.resolver`); outside a capture they raise. The recorder
runs shape rules on ints only, so no rule asks by accident.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class Symbol:
    """One data-dependent size.

    Attributes:
        name: ``n0``, ``n1``... (unique in its graph).
        origin: index of the node whose result has this length.
        axis: the axis of that result.
        bound: an upper bound of the length (what the memory plan counts).
        example: the length on the capture's example values (``None``: unknown, e.g. loaded).
        resolver: called by :meth:`__index__` to get the number (set by the capture that made
            the symbol: it records a guard); ``None`` outside a capture.
    """

    __slots__ = ("axis", "bound", "example", "name", "origin", "resolver")

    def __init__(self, name: str, origin: int, axis: int, bound: int,
                 example: int | None = None) -> None:
        self.name = name
        self.origin = origin
        self.axis = axis
        self.bound = bound
        self.example = example
        self.resolver: Callable[[Symbol], int] | None = None

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"Symbol({self.name!r}, origin=%{self.origin}, axis={self.axis}, " \
               f"bound={self.bound})"

    def __index__(self) -> int:
        """The number, where a rule or the user's code needs one (``len(t)``,
        ``np.zeros(t.shape[0])``): inside the capture that made it, a guard is recorded."""
        if self.resolver is None:
            raise TypeError(f"the size {self.name} depends on the data (axis {self.axis} of "
                            f"%{self.origin}); it is known only when the graph is replayed")
        return self.resolver(self)

    __int__ = __index__

    def __eq__(self, other: object) -> bool:
        """Identity for two symbols outside a capture; inside the capture that made it, the
        user's code compares the number (a guard), as it compares an int eagerly."""
        if other is self:
            return True
        if self.resolver is None:
            return NotImplemented
        return self.__index__() == other

    def __ne__(self, other: object) -> bool:
        result = self.__eq__(other)
        return result if result is NotImplemented else not result

    def __hash__(self) -> int:
        return id(self)

    def __bool__(self) -> bool:
        return bool(self.__index__())


def _number(name: str) -> Any:
    """An arithmetic or ordering operator of :class:`Symbol`: the user's code computing with a
    size, as with an int eagerly (``n - 1``, ``n < 10``): the number, guarded."""
    def method(self: Symbol, other: Any) -> Any:
        return getattr(self.__index__(), name)(other)

    method.__name__ = name
    return method


for _name in ("__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__",
              "__floordiv__", "__rfloordiv__", "__truediv__", "__rtruediv__", "__mod__",
              "__rmod__", "__pow__", "__rpow__", "__lt__", "__le__", "__gt__", "__ge__"):
    setattr(Symbol, _name, _number(_name))


class Pending:
    """A data-dependent length an op's shape rule returns before the recorder names it: the
    recorder replaces each distinct :class:`Pending` of one op's results by one new
    :class:`Symbol` (``np.nonzero``'s arrays share one)."""

    __slots__ = ("bound", "example")

    def __init__(self, bound: int, example: int | None = None) -> None:
        self.bound = int(bound)
        self.example = example

    def __repr__(self) -> str:
        return f"Pending(bound={self.bound})"


def has_symbol(shape: Any) -> bool:
    """Whether ``shape`` holds a :class:`Symbol` (or a :class:`Pending`)."""
    if not shape:
        return False
    for s in shape:
        if type(s) is not int:
            if type(s) is Symbol or type(s) is Pending:
                return True
    return False


def symbols_in(shape: Any) -> list[Symbol]:
    """The symbols of ``shape``, in axis order."""
    return [s for s in shape or () if type(s) is Symbol]


def substitute(shape: tuple, values: dict[Symbol, int]) -> tuple:
    """``shape`` with each symbol replaced by its int in ``values``."""
    return tuple(values[s] if type(s) is Symbol else s for s in shape)


def bound_of(size: Any) -> int:
    """An int size, or a symbol's upper bound."""
    return size.bound if type(size) is Symbol else int(size)


def upper_shape(shape: tuple) -> tuple:
    """``shape`` with each symbol at its upper bound (what the memory plan counts)."""
    return tuple(bound_of(s) for s in shape)


def shape_text(shape: Any) -> str:
    """``3,n0``: a shape as the listing writes it."""
    return ",".join(map(str, shape))


def plain(shape: Any, stand_in: int = 2) -> tuple:
    """``shape`` with each symbol replaced by ``stand_in``: for a question whose answer does
    not depend on a length (is a result 0-d, an array or a scalar)."""
    return tuple(stand_in if type(s) is Symbol else s for s in shape)


PROBE = 1_000_003
"""The stand-in length of the first symbol in :func:`probe` (the k-th: ``PROBE + 1013 k``)."""


def probe(meta: Any, args: list, params: dict) -> tuple[Any, dict[int, int]]:
    """``meta(args, params)`` with each symbol of the operand nodes' shapes replaced by a
    distinct large stand-in length; returns the result and the stand-ins by ``id(symbol)``.
    Operands are objects with ``shape`` (nodes): they are copied with the stand-in shape."""
    import copy

    stand_ins: dict[int, int] = {}
    conv = []
    for a in args:
        shape = getattr(a, "shape", None)
        if shape and has_symbol(shape) and hasattr(a, "args"):
            for s in shape:
                if type(s) is Symbol and id(s) not in stand_ins:
                    stand_ins[id(s)] = PROBE + 1013 * len(stand_ins)
            a = copy.copy(a)
            a.shape = tuple(stand_ins[id(s)] if type(s) is Symbol else s for s in shape)
        conv.append(a)
    return meta(conv, params), stand_ins
