"""Graphs saved and loaded as JSON plus an ``.npz`` of constants.

Nothing here unpickles or evaluates: the JSON holds only numbers, strings, lists and objects
(static values that JSON lacks are tagged, :mod:`capviz.io.json`), and constants
are numeric ``.npy`` members of an uncompressed zip, each header checked against the JSON before
a byte of the array is allocated; a strided constant's node carries its ``strides``
(:mod:`capviz.core.layout`). A file that does not describe a valid graph raises
:class:`capviz.GraphFormatError` saying what is wrong. Saving is atomic, and never replaces a
constants file capviz did not write for that graph file (see :func:`save`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import secrets
import warnings
import zipfile
from typing import Any, BinaryIO

import numpy as np

from capviz import ops
from capviz.core.errors import GraphFormatError, GraphVerifyError, UncheckedGuardWarning
from capviz.core.guards import READS, SIZE
from capviz.core.ir import (
    KINDS,
    VIOLATION_LEVELS,
    Graph,
    LoggedValue,
    Node,
    Violation,
    dtype_name,
)
from capviz.core.layout import file_strides, with_strides
from capviz.core.python_guards import PythonGuard, Shown, shown
from capviz.core.references import check_unchanged
from capviz.core.symbols import Symbol
from capviz.io.json import decode, encode
from capviz.io.verify import verify_graph

FORMAT = "capviz-graph"
VERSION = 1


# --- save -------------------------------------------------------------------------------------


def _node_json(node: Node) -> dict[str, Any]:
    source = None
    if node.source is not None:
        file, line, func = node.source
        source = {"file": file, "line": line, "function": func}
    return {
        "index": node.index,
        "kind": node.kind,
        "op": node.op,
        "args": [{"ref": a.index} if isinstance(a, Node) else {"lit": encode(a)}
                 for a in node.args],
        "params": {k: encode(v) for k, v in node.params.items()},
        "shape": None if node.shape is None else [
            s.name if type(s) is Symbol else s for s in node.shape],  # a size symbol by name
        "dtype": dtype_name(node.dtype),
        "source": source,
        "scope": node.scope,
        "name": node.name,
    }


def constants_path(path: str) -> str:
    """The constants file of a graph file: the whole file name plus ``.npz``.

    ``run.json`` -> ``run.json.npz``; ``run.txt`` -> ``run.txt.npz``. Two graph files never share
    a constants file, whatever their extensions.
    """
    return os.fspath(path) + ".npz"


def _marker(path: str) -> bytes:
    """The zip comment that marks a constants file as written by capviz for graph file ``path``."""
    return json.dumps({"capviz": "constants", "graph": os.path.basename(path)}).encode("ascii")


def _written_for(npz: str, path: str) -> bool:
    """Whether ``npz`` is a constants file capviz wrote for the graph file ``path``."""
    try:
        with zipfile.ZipFile(npz) as zf:
            return zf.comment == _marker(path)
    except (OSError, zipfile.BadZipFile, EOFError, ValueError):
        return False


def _write_constants(f: BinaryIO, graph: Graph, marker: bytes) -> None:
    """Constants as an uncompressed ``.npz`` (what ``np.load`` reads), byte for byte the same
    for the same graph (fixed timestamps), marked with ``marker`` as its zip comment."""
    with zipfile.ZipFile(f, "w", zipfile.ZIP_STORED) as zf:
        for index, value in graph.constant_values.items():
            info = zipfile.ZipInfo(f"c{index}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            with zf.open(info, "w", force_zip64=True) as member:
                np.lib.format.write_array(member, np.asarray(value), allow_pickle=False)
        zf.comment = marker


def _with_strides(nodes: list[dict], graph: Graph) -> list[dict]:
    """The node documents, each strided constant's with its ``strides`` (see capviz.core.layout)."""
    for index, value in graph.constant_values.items():
        strides = file_strides(np.asarray(value))
        if strides is not None:
            nodes[index]["strides"] = strides
    return nodes


def _sha256(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def _temp_beside(target: str) -> tuple[str, BinaryIO]:
    """A new temporary file in ``target``'s directory (so ``os.replace`` is atomic), created
    with the usual permissions (``0o666`` less the umask, as ``open`` gives)."""
    directory, name = os.path.split(os.path.abspath(target))
    while True:
        temp = os.path.join(directory, f".{name}.{secrets.token_hex(6)}.tmp")
        try:
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except FileExistsError:
            continue
        return temp, os.fdopen(fd, "wb")


def save(graph: Graph, path: str) -> None:
    """Write the graph to ``path`` (JSON) and its constants to :func:`constants_path`.

    Both files are written to temporary files beside them and renamed into place, the
    constants first; the JSON records the constants' SHA-256, so a pair torn by a crash between
    the two renames is refused by :func:`load`, never read wrong. An existing constants file is
    replaced only when capviz wrote it for a graph file of this name (its zip comment says so).

    Raises:
        FileExistsError: the constants file exists and was not written by capviz for ``path``.
        FileNotFoundError: the folder of ``path`` does not exist.
        IsADirectoryError: ``path`` is a directory.
    """
    check_unchanged(graph)  # a changed array kept by reference is not what was recorded
    path = os.fspath(path)
    npz = constants_path(path)
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise FileNotFoundError(f"cannot save {path}: the folder {folder} does not exist")
    if os.path.isdir(path):
        raise IsADirectoryError(f"cannot save {path}: it is a directory")
    if os.path.lexists(npz) and not _written_for(npz, path):
        raise FileExistsError(f"refusing to overwrite {npz}: it was not written by capviz for "
                              f"the graph file {os.path.basename(path)}; move it away or save "
                              "the graph under another name")
    temps = []
    try:
        npz_temp, f = _temp_beside(npz)
        temps.append(npz_temp)
        with f:
            _write_constants(f, graph, _marker(path))
            f.flush()
            os.fsync(f.fileno())
        doc = {
            "format": FORMAT,
            "version": VERSION,
            "complete": graph.complete,
            "rng_seed": graph.rng_seed,
            "symbols": {s.name: {"origin": s.origin, "axis": s.axis, "bound": s.bound}
                        for s in graph.symbols.values()},
            "constants": os.path.basename(npz),
            "constants_sha256": _sha256(npz_temp),
            "nodes": _with_strides([_node_json(n) for n in graph.nodes], graph),
        }
        if graph.logged_values:  # (Python values a replay logs; where: not saved)
            doc["logged"] = [{"order": v.order, "kind": v.kind, "key": encode(v.key),
                              "value": encode(v.value), "name": v.name}
                             for v in graph.logged_values]
        if graph.python_guards:  # (names and values, as data: no live object is saved)
            doc["python_guards"] = [_guard_json(g) for g in graph.python_guards]
        json_temp, f = _temp_beside(path)
        temps.append(json_temp)
        with f:
            f.write(json.dumps(doc, indent=1, allow_nan=False).encode("utf-8"))
            f.flush()
            os.fsync(f.fileno())
        os.replace(npz_temp, npz)
        os.replace(json_temp, path)
    finally:
        for temp in temps:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temp)


# --- load ------------------------------------------------------------------------------------


def _need(cond: bool, where: str, what: str) -> None:
    if not cond:
        raise GraphFormatError(f"{where}: {what}")


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _dtype(value: Any, where: str) -> np.dtype | None:
    if value is None:
        return None
    _need(isinstance(value, str), where, f"dtype must be a string, got {value!r}")
    try:
        dt = np.dtype(value)
    except TypeError:
        raise GraphFormatError(f"{where}: unknown dtype {value!r}") from None
    _need(dt.kind in "biufc" and dt.name == value, where,
          f"dtype {value!r} is not a numeric dtype name")
    return dt


def _shape(value: Any, where: str, symbols: dict[str, Symbol]) -> tuple | None:
    if value is None:
        return None
    _need(isinstance(value, list) and all((_is_int(s) and 0 <= s < 2**63)
                                          or (isinstance(s, str) and s in symbols)
                                          for s in value), where,
          "shape must be a list of integers in [0, 2**63) and names of the graph's size "
          f"symbols, got {json.dumps(value)[:60]}")
    return tuple(symbols[s] if isinstance(s, str) else s for s in value)


def _symbols(raw: Any) -> dict[str, Symbol]:
    """The graph's size symbols (their origins are checked once the nodes are built)."""
    if raw is None:
        return {}
    _need(isinstance(raw, dict), "graph file", "'symbols' must be an object")
    symbols = {}
    for name, spec in raw.items():
        where = f"size symbol {name!r}"
        _need(isinstance(name, str) and name.startswith("n") and name[1:].isdigit(), where,
              "a size symbol is named n<number>")
        _need(isinstance(spec, dict) and all(_is_int(spec.get(k)) and spec.get(k) >= 0
                                             for k in ("origin", "axis", "bound")), where,
              "needs integer origin, axis and bound >= 0")
        symbols[name] = Symbol(name, spec["origin"], spec["axis"], spec["bound"])
    return symbols


def _check_symbols(graph: Graph) -> None:
    """Each symbol is the length of an axis of its origin node, which holds it there."""
    for s in graph.symbols.values():
        where = f"size symbol {s.name!r}"
        _need(s.origin < len(graph.nodes), where, f"its origin %{s.origin} is not a node")
        shape = graph.nodes[s.origin].shape or ()
        _need(s.axis < len(shape) and shape[s.axis] is s, where,
              f"node %{s.origin} does not have it as axis {s.axis}")


def _source(value: Any, where: str) -> tuple | None:
    if value is None:
        return None
    _need(isinstance(value, dict) and isinstance(value.get("file"), str)
          and _is_int(value.get("line")) and isinstance(value.get("function"), str), where,
          "source must be {file: str, line: int, function: str}")
    return (value["file"], value["line"], value["function"])


def _build_node(i: int, raw: Any, nodes: list[Node], symbols: dict[str, Symbol]) -> Node:
    where = f"node {i}"
    _need(isinstance(raw, dict), where, "must be an object")
    _need(raw.get("index") == i, where, f"has index {raw.get('index')!r}, expected {i} "
                                        "(nodes must be listed in program order)")
    kind = raw.get("kind")
    _need(kind in KINDS, where, f"unknown kind {kind!r}; expected one of {', '.join(KINDS)}")
    op = raw.get("op")
    where = f"node %{i} ({op or kind})"
    if kind == "op":
        _need(isinstance(op, str) and op in ops.OPS, where, f"unknown op {op!r}")
    elif kind == "violation":
        _need(op in VIOLATION_LEVELS, where, f"unknown violation kind {op!r}")
    elif kind == "guard":
        _need(op in READS or op == SIZE, where, f"unknown guard read {op!r}")
    else:
        _need(op is None, where, f"a {kind} node has no op")
    args_raw = raw.get("args", [])
    _need(isinstance(args_raw, list), where, "args must be a list")
    args: list[Any] = []
    for pos, a in enumerate(args_raw):
        _need(isinstance(a, dict) and len(a) == 1 and ("ref" in a or "lit" in a), where,
              f"argument {pos} must be {{'ref': index}} or {{'lit': value}}")
        if "ref" in a:
            ref = a["ref"]
            _need(_is_int(ref) and 0 <= ref, where, f"argument {pos} refers to {ref!r}")
            _need(ref < i, where, f"argument {pos} refers to %{ref}, which is not earlier in "
                                  "program order (a cycle, a missing node or reordered nodes)")
            args.append(nodes[ref])
        else:
            args.append(decode(a["lit"], f"{where} argument {pos}"))
    params_raw = raw.get("params", {})
    _need(isinstance(params_raw, dict), where, "params must be an object")
    params = {k: decode(v, f"{where} param {k!r}") for k, v in params_raw.items()}
    name = raw.get("name")
    _need(name is None or isinstance(name, str), where, "name must be a string or null")
    scope = raw.get("scope", "")
    _need(isinstance(scope, str), where, "scope must be a string")
    if kind == "guard":
        _need(len(args) == 1 and isinstance(args[0], Node) and "value" in params
              and (op != SIZE or _is_int(params.get("axis"))), where,
              "a guard reads one node and holds the value it read (and the axis of a length)")
    return Node(i, kind, op, tuple(args), params, _shape(raw.get("shape"), where, symbols),
                _dtype(raw.get("dtype"), where), _source(raw.get("source"), where), scope, name)


def _read_header(f: BinaryIO) -> tuple[tuple, bool, np.dtype]:
    """``(shape, fortran_order, dtype)`` from the ``.npy`` header at the start of ``f``."""
    version = np.lib.format.read_magic(f)
    if version == (1, 0):
        return np.lib.format.read_array_header_1_0(f)
    if version == (2, 0):
        return np.lib.format.read_array_header_2_0(f)
    raise ValueError(f".npy format version {version} is not one capviz writes")


def _read_constant(zf: zipfile.ZipFile, node: Node, name: str, file_size: int) -> np.ndarray:
    """One constant's array, checked against its node before a byte of it is allocated.

    The member must be stored uncompressed (as capviz writes it) and lie inside the file, and
    its ``.npy`` header must give the node's shape and dtype and account for the member's exact
    size, so what loading allocates is bounded by the size of the file on disk.
    """
    where = f"constant %{node.index}"
    key = f"c{node.index}"
    try:
        info = zf.getinfo(key + ".npy")
    except KeyError:
        raise GraphFormatError(f"{where}: its array {key!r} is absent from {name}") from None
    _need(info.compress_type == zipfile.ZIP_STORED, where,
          f"{name}[{key!r}] is compressed; capviz writes constants uncompressed, so that the "
          "size of the file bounds what loading it allocates")
    _need(info.compress_size == info.file_size
          and info.header_offset + info.compress_size <= file_size, where,
          f"{name}[{key!r}] claims {info.file_size} bytes, more than the file holds")
    with zf.open(info) as f:
        try:
            shape, fortran, dtype = _read_header(f)
        except ValueError as err:
            raise GraphFormatError(f"{where}: {name}[{key!r}] has no valid .npy header: "
                                   f"{err}") from None
        _need(not dtype.hasobject and dtype.kind in "biufc", where,
              f"{name}[{key!r}] holds dtype {dtype}, which cannot be loaded safely (capviz "
              "reads only numeric arrays)")
        _need(shape == node.shape and dtype == node.dtype, where,
              f"array is {dtype}{list(shape)} but the node says "
              f"{node.dtype}{list(node.shape or ())}")
        nbytes = math.prod(shape) * dtype.itemsize
        data_size = info.file_size - f.tell()
        _need(data_size == nbytes, where, f"{name}[{key!r}] holds {data_size} bytes of data; "
                                          f"{dtype}{list(shape)} takes {nbytes}")
        buffer = bytearray(nbytes)
        view, filled = memoryview(buffer), 0
        while filled < nbytes:
            got = f.readinto(view[filled:])
            _need(got > 0, where, f"{name}[{key!r}] is truncated")
            filled += got
    return np.ndarray(shape, dtype, buffer=buffer, order="F" if fortran else "C")


def _load_constants(path: str, doc: dict, graph: Graph) -> None:
    wanted = [n for n in graph.nodes if n.kind == "constant"]
    if not wanted:
        return
    name = doc.get("constants")
    _need(isinstance(name, str) and name and os.path.basename(name) == name
          and name not in (".", ".."), "graph file",
          f"'constants' must be a plain file name next to the graph, got {name!r}")
    digest = doc.get("constants_sha256")
    _need(digest is None or isinstance(digest, str), "graph file",
          "'constants_sha256' must be a string")
    npz = os.path.join(os.path.dirname(os.path.abspath(path)), name)
    try:
        _need(digest is None or _sha256(npz) == digest, "graph file",
              f"the constants file {name} is not the one saved with this graph (its SHA-256 "
              "differs): a save was interrupted, or one of the two files was replaced")
        file_size = os.path.getsize(npz)
        with zipfile.ZipFile(npz) as zf:
            for node in wanted:
                value = _read_constant(zf, node, name, file_size)
                strides = doc["nodes"][node.index].get("strides")
                if strides is not None:
                    try:
                        value = with_strides(value, strides)
                    except ValueError as err:
                        raise GraphFormatError(f"constant %{node.index}: {err}") from None
                graph.constant_values[node.index] = value
    except GraphFormatError:
        raise
    except FileNotFoundError:
        raise GraphFormatError(f"constants file {npz} is missing") from None
    except Exception as err:  # zipfile, zlib and format errors come in many types
        raise GraphFormatError(f"constants file {npz} is corrupt or truncated: "
                               f"{type(err).__name__}: {err}") from None


def load(path: str, graph_class: type[Graph] = Graph) -> Graph:
    """Load a graph written by ``graph.save(path)`` into a new ``graph_class()``.

    Raises:
        GraphFormatError: the file is not a valid capviz graph (the message says why).
    """
    path = os.fspath(path)
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except FileNotFoundError:
        raise GraphFormatError(f"no graph file at {path}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise GraphFormatError(f"{path} is not valid JSON (truncated or corrupt?): {err}") \
            from None
    except RecursionError:
        raise GraphFormatError(f"{path} nests too deeply to be a capviz graph") from None
    except ValueError as err:  # Python's limit on the digits of an integer, 4,300 by default
        raise GraphFormatError(f"{path} holds a number capviz will not read: {err}") from None
    except OSError as err:
        raise GraphFormatError(f"cannot read graph file {path}: {err.strerror or err}") \
            from None
    try:
        graph = _from_doc(path, doc, graph_class)
    except GraphFormatError:
        raise
    except GraphVerifyError as err:
        raise GraphFormatError(f"{path} describes an inconsistent graph: {err}") from None
    except Exception as err:  # untrusted input: whatever broke, the file is what is wrong
        raise GraphFormatError(f"{path} is not a valid capviz graph: "
                               f"{type(err).__name__}: {err}") from None
    guards = graph.python_guards
    if guards:  # (a loaded graph has no live object to read them from: it says so)
        listed = ", ".join(f"{g.label} == {shown(g.value)}" for g in guards[:3])
        more = ", ..." if len(guards) > 3 else ""
        warnings.warn(
            f"{os.path.basename(path)} was captured reading {len(guards)} Python value"
            f"{'s' if len(guards) > 1 else ''} from live objects ({listed}{more}); a loaded "
            "graph cannot read them, so it replays as captured whatever they hold now: "
            "capture again if one changed", UncheckedGuardWarning, stacklevel=3)
    return graph


def _from_doc(path: str, doc: Any, graph_class: type[Graph]) -> Graph:
    _need(isinstance(doc, dict) and doc.get("format") == FORMAT, "graph file",
          f"not a capviz graph (expected \"format\": \"{FORMAT}\")")
    _need(doc.get("version") == VERSION, "graph file",
          f"version {doc.get('version')!r} is not supported (this capviz reads {VERSION})")
    raw_nodes = doc.get("nodes")
    _need(isinstance(raw_nodes, list), "graph file", "'nodes' must be a list")
    seed = doc.get("rng_seed")
    _need(seed is None or (_is_int(seed) and 0 <= seed < 2**64), "graph file",
          f"rng_seed must be null or an integer in [0, 2**64), got {seed!r}")
    graph = graph_class()
    graph.rng_seed = seed
    graph.complete = bool(doc.get("complete", True))
    symbols = _symbols(doc.get("symbols"))
    graph.symbols = symbols
    for i, raw in enumerate(raw_nodes):
        graph.nodes.append(_build_node(i, raw, graph.nodes, symbols))
    _check_symbols(graph)
    for n in graph.nodes:
        if n.kind == "violation":
            level = n.params.get("level")
            message, call = n.params.get("message"), n.params.get("call")
            _need(level == VIOLATION_LEVELS[n.op] and isinstance(message, str)
                  and isinstance(call, str), f"violation %{n.index}",
                  "needs params level, message and call")
            graph.violation_records.append(Violation(n.op, level, message, call, n.source,
                                                     n.index))
    logged = doc.get("logged", [])
    _need(isinstance(logged, list) and all(
        isinstance(v, dict) and _is_int(v.get("order")) and isinstance(v.get("name"), str)
        and v.get("kind") in ("append", "refill", "set") for v in logged), "graph file",
          "'logged' must be a list of logged values (order, kind, key, value, name)")
    graph.logged_values = [LoggedValue(v["order"], v["kind"], decode(v.get("key")),
                                       decode(v.get("value")), v["name"], None)
                           for v in logged]  # (no container: a write replay is refused)
    guards = doc.get("python_guards", [])
    _need(isinstance(guards, list) and all(
        isinstance(g, dict) and isinstance(g.get("place"), str) and isinstance(
            g.get("shown"), str) and isinstance(g.get("fn"), str) for g in guards),
          "graph file", "'python_guards' must be a list of guards (place, shown, fn)")
    graph.python_guards = [_guard_from(g) for g in guards]
    _load_constants(path, doc, graph)
    verify_graph(graph)
    return graph


def _guard_json(guard: PythonGuard) -> dict[str, Any]:
    """A Python value's guard as data: its place, value (where JSON holds it; ``shown``, its
    text, always), the captured function's name and the line that read it."""
    doc = {"place": guard.label, "shown": shown(guard.value), "fn": guard.fn,
           "source": None if guard.source is None else dict(zip(
               ("file", "line", "function"), guard.source))}
    try:
        doc["value"] = encode(guard.value)
    except TypeError:  # (an enum member, bytes: its text only)
        pass
    return doc


def _guard_from(raw: dict) -> PythonGuard:
    """A loaded guard: data only, no live object to read (never checked)."""
    value = decode(raw["value"], "python_guards") if "value" in raw else Shown(raw["shown"])
    source = _source(raw.get("source"), f"python guard {raw['place']}")
    return PythonGuard(raw["place"], value, None, (), source, raw["fn"])
