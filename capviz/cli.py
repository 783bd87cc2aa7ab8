"""The ``capviz`` command: ``demo``, ``render``, ``show``, ``check``.

Exit codes: 0 success, 1 violations or failed checks, 2 usage errors (bad arguments, a module
that does not import, a malformed input spec, an unreadable graph, an output that cannot be
written). User mistakes print one line on stderr, no traceback. Text that comes from a graph or
from the user's code is printed through :func:`terminal_text`, so a name in a graph file cannot
drive the terminal (colours, titles, hyperlinks, cursor moves).
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import os
import re
import sys
import time
import types
from collections.abc import Sequence
from typing import Any

import numpy as np

from capviz.backends import registry
from capviz.render.model import check_listed
from capviz.render.svg import DEFAULT_BUDGET


class UsageError(Exception):
    """A mistake in the command line (exit code 2)."""


# ESC-introduced sequences: CSI (colours, cursor), OSC (titles, hyperlinks; ended by BEL or ST),
# DCS/SOS/PM/APC strings, and two-character escapes; also their 8-bit C1 forms.
_TERMINAL_SEQUENCE = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]|\x9b[0-?]*[ -/]*[@-~]"
    r"|(?:\x1b[]PX^_]|[\x90\x98\x9d-\x9f])[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"
    r"|\x1b[ -/]*[0-~]?")
# What is left that a terminal would act on or that cannot be encoded: control characters (a
# newline too: each message is one line), lone surrogates, line separators, bidi overrides.
_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff\u2028\u2029\u202a-\u202e"
                          "\u2066-\u2069]")


def terminal_text(text: Any) -> str:
    """``text`` made safe to print: escape sequences removed, other control characters, lone
    surrogates and bidi controls written as visible Python escapes (``\\x07``, ``\\udcff``)."""
    text = _TERMINAL_SEQUENCE.sub("", str(text))
    return _UNPRINTABLE.sub(
        lambda m: m.group().encode("unicode_escape", "backslashreplace").decode("ascii"), text)


def _say(text: str, error: bool = False) -> None:
    """Print one line made safe by :func:`terminal_text` (to stderr when ``error``)."""
    print(terminal_text(text), file=sys.stderr if error else sys.stdout)


_INPUT_SYNTAX = ("write NAME=SHAPE:DTYPE, e.g. x=2,8:float32 or x=(2,8):float32 (x=():int64: "
                 "a scalar)")


def _parse_input(text: str) -> tuple[str, Any]:
    """``x=2,3:float32``, ``x=(2,3):float32``, ``x=[2,3]``, ``x=2x3`` -> ``("x", Spec((2, 3),
    float32))`` (the dtype defaults to float32)."""
    import capviz as cv

    name, eq, rest = text.partition("=")
    if not eq or not name.isidentifier():
        raise UsageError(f"bad --input {text!r}: expected NAME=SHAPE:DTYPE; {_INPUT_SYNTAX}")
    shape_text, _, dtype_text = rest.partition(":")
    sizes = shape_text.strip().strip("()[]").replace("x", ",").split(",")
    try:
        shape = tuple(int(size) for size in sizes if size.strip())
    except ValueError:
        raise UsageError(f"bad --input {text!r}: the shape {shape_text!r} is not a list of "
                         f"integers; {_INPUT_SYNTAX}") from None
    if any(size < 0 for size in shape):
        raise UsageError(f"bad --input {text!r}: the shape {shape_text!r} has a negative size; "
                         f"{_INPUT_SYNTAX}")
    try:
        dtype = np.dtype(dtype_text.strip() or "float32")
    except TypeError:
        raise UsageError(f"bad --input {text!r}: {dtype_text!r} is not a NumPy dtype (float32, "
                         f"int64, bool...); {_INPUT_SYNTAX}") from None
    try:
        return name, cv.spec(shape, dtype)
    except (ValueError, TypeError) as err:
        raise UsageError(f"bad --input {text!r}: {err}") from None


def _import_function(target: str) -> Any:
    module_name, colon, attr = target.rpartition(":")
    if not colon or not module_name or not attr:
        raise UsageError(f"bad target {target!r}: expected MODULE:FUNCTION (model:mlp) or "
                         "FILE.py:FUNCTION (src/model.py:mlp)")
    if module_name.startswith(".") and not module_name.endswith(".py"):
        raise UsageError(f"bad target {target!r}: a relative module name has no package to be "
                         "relative to here; give the full dotted name (package.module:function) "
                         "and run from the folder that holds the package")
    sys.path.insert(0, os.getcwd())
    try:
        if module_name.endswith(".py"):
            module = _import_file(module_name, target)
        else:
            module = importlib.import_module(module_name)
    except UsageError:
        raise
    except ImportError as err:
        raise UsageError(f"cannot import module {module_name!r}: {err}") from None
    except Exception as err:  # the module itself is broken: say where, not a traceback
        raise UsageError(f"cannot import module {module_name!r}: it raised "
                         f"{type(err).__name__}: {err}") from None
    fn = module
    for part in attr.split("."):
        fn = getattr(fn, part, None)
        if fn is None:
            raise UsageError(f"module {module_name!r} has no attribute {attr!r}")
    if not callable(fn):
        raise UsageError(f"{target} is not callable")
    return fn


def _import_file(path: str, target: str) -> Any:
    """The module of Python file ``path`` (``model.py``, ``src/model.py``), imported under its
    file name (``model``) with its folder first on ``sys.path``, as ``python path`` would."""
    import importlib.util

    if not os.path.isfile(path):
        dotted = path[:-3].replace(os.sep, ".").replace("/", ".").strip(".")
        raise UsageError(f"bad target {target!r}: there is no file {path}; give an existing "
                         f"FILE.py:FUNCTION, or the module's dotted name: {dotted}:"
                         f"{target.rpartition(':')[2]}")
    folder = os.path.dirname(os.path.abspath(path))
    name = os.path.splitext(os.path.basename(path))[0]
    sys.path.insert(0, folder)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # as an import would: the module's globals are named after it
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


def _write(graph: Any, out: str | None, fmt: str, collapse: Any) -> str:
    path = out or f"graph.{fmt}"
    folder = os.path.dirname(path) or "."
    if not os.path.isdir(folder):
        raise UsageError(f"cannot write {path}: the folder {folder} does not exist")
    _check_collapse(graph, collapse)
    text = None
    if fmt == "dot":
        text = graph.to_dot(collapse=collapse).source
    elif fmt == "html":  # the interactive view, a standalone page
        text = graph.to_html()
    elif fmt == "svg":
        text = graph.to_svg(collapse=collapse)
    try:
        if text is None:
            graph.save(path)
        else:
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
    except OSError as err:  # a directory, no permission, a constants file capviz did not write
        raise UsageError(f"cannot write {path}: {err.strerror or err}") from None
    return path


def _print_violations(graph: Any) -> None:
    """Each violation with its whole message (the fixes too), one printed line per line."""
    for v in graph.violations:
        _say(f"{v.level}: {v.kind} at {v.location}:", error=True)
        for line in v.message.splitlines():
            _say(f"  {line}", error=True)


def _error_violations(graph: Any) -> list:
    return [v for v in graph.violations if v.level == "error"]


def _say_incomplete(graph: Any) -> None:
    """Say that a graph with error-level violations is not complete (replay refuses it)."""
    errors = _error_violations(graph)
    if errors:
        _say(f"not complete: {len(errors)} error-level violation(s), so a replay would not "
             "compute what the code did (replay refuses it unless allow_violations=True)")


def cmd_demo(args: argparse.Namespace) -> int:
    import capviz as cv
    from capviz.models import capture_mlp, mlp, mlp_weights

    weights = mlp_weights()
    device = cv.default_device() if args.backend == "auto" else None
    t0 = time.perf_counter()
    graph = capture_mlp(weights)
    t1 = time.perf_counter()
    x = np.random.default_rng(1).standard_normal((4, 8)).astype(np.float32)
    result = graph.replay({"x": x}, backend=args.backend, to_numpy=True)
    t2 = time.perf_counter()
    eager = mlp(x, weights)
    engine = registry.get(result.backend)
    if engine.exact:
        same, agree = bool(np.array_equal(result["out"], eager)), "identical to"
    else:  # a backend that may round otherwise (XLA): its documented tolerance
        rtol, atol = engine.tolerance
        same = bool(np.allclose(result["out"], eager, rtol=rtol, atol=atol))
        agree = f"within the {engine.name} backend's tolerance (rtol {rtol:g}) of"
    path = _write(graph, args.out, "svg", None)
    path = terminal_text(path)
    print("capviz demo: a 3-layer MLP written in plain NumPy")
    print(f"  captured   {len(graph.ops)} ops, {len(graph.constants)} constants, "
          f"{len(graph.violations)} violations in {1e3 * (t1 - t0):.1f} ms")
    chosen = f" (the default device: {device.kind})" if device else ""
    print(f"  replayed   on {result.backend}{chosen} in {1e3 * (t2 - t1):.1f} ms")
    print(f"  output     {result['out'].dtype}{list(result['out'].shape)}, "
          f"{agree if same else 'DIFFERS from'} eager NumPy")
    print(f"  wrote      {path}")
    print()
    print(graph)
    return 0 if same else 1


FORMATS = {".svg": "svg", ".dot": "dot", ".gv": "dot", ".json": "json", ".html": "html",
           ".htm": "html"}
FORMAT_NAMES = ["svg", "html", "json", "dot"]
_A_FILE = {"svg": "an SVG file", "html": "an HTML file", "json": "a JSON graph file",
           "dot": "a DOT file"}


def _format(args: argparse.Namespace) -> str:
    """``--format``, else the output file's suffix, else SVG (``-o g.html`` writes the view);
    a suffix of another format than ``--format`` is refused (``-o g.html --format svg``)."""
    suffix = os.path.splitext(args.output or "")[1].lower()
    if args.format is not None:
        implied = FORMATS.get(suffix)
        if implied is not None and implied != args.format:
            stem = os.path.splitext(args.output)[0]
            raise UsageError(f"-o {args.output} names {_A_FILE[implied]} but --format is "
                             f"{args.format}; write -o {stem}.{args.format}, or drop --format")
        return args.format
    if args.output and suffix not in FORMATS:
        raise UsageError(f"cannot tell the format of {args.output!r} from its suffix; name one "
                         f"of {', '.join(sorted(FORMATS))}, or pass --format")
    return FORMATS.get(suffix, "svg")


def _check_inputs_bind(fn: Any, target: str, names: list[str]) -> None:
    """The declared inputs must be ``fn``'s parameters: a usage error, not a traceback."""
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return  # a builtin or C function: let the call say
    try:
        signature.bind(**dict.fromkeys(names))
    except TypeError as err:
        given = ", ".join(names) or "none"
        raise UsageError(f"{target}{signature} cannot take the inputs given with -i "
                         f"({given}): {err}") from None


def _user_location(err: BaseException) -> str:
    """``file:line in function`` of the innermost frame of the traceback outside capviz."""
    import traceback

    package = os.path.dirname(os.path.abspath(__file__)) + os.sep
    frames = [f for f in traceback.extract_tb(err.__traceback__)
              if not os.path.abspath(f.filename).startswith(package)]
    if not frames:
        return ""
    f = frames[-1]
    return f" (at {f.filename}:{f.lineno} in {f.name})"


def _ordered_specs(fn: Any, target: str, given: list[tuple[str, Any]]) -> list[Any]:
    """The specs of ``given`` (``(name, spec)`` from ``-i``) in the order of ``fn``'s
    parameters, which ``cv.capture`` passes them by (so the graph's inputs keep their names)."""
    names = [name for name, _ in given]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise UsageError(f"input {twice[0]!r} is given twice with -i; give each parameter once")
    _check_inputs_bind(fn, target, names)
    try:
        parameters = list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return [spec for _, spec in given]  # a builtin: in the order given
    specs = dict(given)
    leading = parameters[:len(specs)]
    if set(leading) != set(specs):
        raise UsageError(f"{target} gets its inputs by position: give -i for its first "
                         f"{len(specs)} parameter(s) ({', '.join(leading)}), not "
                         f"{', '.join(names)}")
    return [specs[name] for name in leading]


def _sources_from(graph: Any, fn: Any) -> None:
    """Inputs and outputs recorded by the command (the CLI declared them) get the source of
    the function they belong to, its ``def`` line, as the library gives them the caller's."""
    from capviz.core.source import display_file

    code = getattr(fn, "__code__", None)
    if code is None:
        return
    here = (display_file(code.co_filename), code.co_firstlineno, code.co_name)
    for node in graph.nodes:
        if node.kind in ("input", "output"):
            node.source = here


# The command opens the capture as a user's script would, from code of its own: the captured
# function's module is then another module, whose arrays are named by module path (model.W),
# as the library names them when a script captures mymodel.layer; the same with `capviz` and
# `python -m capviz`.
_OPENER = compile("def open_capture(capture, fn, specs):\n"
                  "    return capture(fn, *specs, on_violation='record')\n",
                  "<capviz render>", "exec")
_open_capture = types.FunctionType(
    next(c for c in _OPENER.co_consts if isinstance(c, types.CodeType)), {})


def cmd_render(args: argparse.Namespace) -> int:
    import capviz as cv

    fmt = _format(args)
    fn = _import_function(args.target)
    specs = _ordered_specs(fn, args.target, [_parse_input(text) for text in args.input or []])
    try:
        graph = _open_capture(cv.capture, fn, specs)
        _sources_from(graph, fn)
    except Exception as err:  # the user's function failed: say where, keep the partial graph
        graph = getattr(err, "graph", None)
        where = "" if isinstance(err, cv.CaptureError) else _user_location(err)
        lines = str(err).splitlines() or [""]
        _say(f"capture failed: {type(err).__name__}: {lines[0]}{where}", error=True)
        for line in lines[1:]:  # a capture error's why and fix
            _say(f"  {line}", error=True)
        if graph is not None:
            _sources_from(graph, fn)
            path = _write(graph, args.output, fmt, args.collapse)
            _say(f"wrote partial graph to {path}", error=True)
        return 1
    path = _write(graph, args.output, fmt, args.collapse)
    _say(f"wrote {path} ({len(graph.ops)} ops, {len(graph.violations)} violations)")
    _say_incomplete(graph)
    if graph.violations:
        _print_violations(graph)
    return 1 if _error_violations(graph) and not args.allow_violations else 0


def _first_line(err: BaseException) -> str:
    lines = str(err).splitlines()
    return lines[0] if lines else ""


# What a file that is not a saved graph is, from its first bytes: (test, what it is)
_OTHER_FILES = (
    (lambda head: head[:4] in (b"PK\x03\x04", b"PK\x05\x06"), "a zip archive (npz)"),
    (lambda head: head.lstrip().lower().startswith((b"<!doctype html", b"<html")),
     "an HTML page (capviz's interactive view?)"),
    (lambda head: b"<svg" in head.lower(), "an SVG picture"),
    (lambda head: head.lstrip().startswith((b"digraph", b"strict digraph")), "a DOT graph"),
    (lambda head: head.startswith(b"\x89PNG"), "a PNG image"),
)


def _not_a_graph(path: str) -> str | None:
    """Why ``path`` is another kind of file than a saved graph, with the file to pass."""
    try:
        with open(path, "rb") as f:
            head = f.read(1024)
    except OSError:
        return None  # missing, a directory: cv.load says so
    for test, kind in _OTHER_FILES:
        if test(head):
            if path.endswith(".json.npz"):
                return (f"{path} is the constants file (a zip archive) that graph.save writes "
                        f"beside the graph; pass the graph file itself: {path[:-4]}")
            return (f"{path} is {kind}, not a saved graph; pass the .json file that "
                    "graph.save(path) or capviz render --format json wrote")
    return None


def _load(path: str) -> Any:
    import capviz as cv

    other = _not_a_graph(path)
    if other is not None:
        raise UsageError(other)
    try:
        return cv.load(path)
    except cv.GraphFormatError as err:
        raise UsageError(str(err)) from None


def cmd_show(args: argparse.Namespace) -> int:
    fmt = _format(args)
    graph = _load(args.graph)
    out = args.output or os.path.splitext(args.graph)[0] + "." + fmt
    path = _write(graph, out, fmt, args.collapse)
    _say(f"wrote {path}")
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    import capviz as cv

    graph = _load(args.graph)
    try:
        graph.verify()
    except cv.GraphVerifyError as err:
        _say(f"invalid graph: {_first_line(err)}", error=True)
        return 1
    _print_violations(graph)
    errors = _error_violations(graph)
    state = ("partial graph (its capture failed)" if not graph.complete else
             f"graph not complete ({len(errors)} error-level violations)" if errors else
             "complete graph")
    _say(f"{args.graph}: {state}, {len(graph.inputs)} inputs, {len(graph.ops)} ops, "
         f"{len(graph.outputs)} outputs, {len(graph.violations)} violations")
    return 1 if errors or not graph.complete else 0


def _collapse(text: str) -> Any:
    """``--collapse``: a node budget (a positive int) or comma-separated scope paths."""
    if text.strip().lstrip("+-").isdigit():
        budget = int(text)
        if budget < 1:
            raise argparse.ArgumentTypeError(f"a node budget must be at least 1, got {text!r}")
        return budget
    paths = [s.strip().strip("/") for s in text.split(",") if s.strip().strip("/")]
    if not paths:
        raise argparse.ArgumentTypeError(f"expected a node budget or scope paths, got {text!r}")
    return paths


def _check_collapse(graph: Any, collapse: Any) -> None:
    """Scope paths in ``--collapse`` must be scopes of the graph (a typo would draw everything
    open without a word): the renderer's own check, as a usage error."""
    if not isinstance(collapse, list):
        return
    try:
        check_listed(graph, [str(s) for s in collapse])
    except ValueError as err:
        raise UsageError(f"--{err}") from None


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="capviz", description="Capture, draw and check tensor "
                                     "graphs.")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="capture a built-in MLP, replay it, write an SVG")
    demo.add_argument("--out", default="capviz-demo.svg", help="SVG path (capviz-demo.svg)")
    demo.add_argument("--backend", default="auto", choices=registry.names())
    demo.set_defaults(run=cmd_demo)
    render = sub.add_parser("render", help="capture MODULE:FUNCTION and write its graph")
    render.add_argument("target", help="MODULE:FUNCTION")
    render.add_argument("--input", "-i", action="append", metavar="NAME=SHAPE:DTYPE",
                        help="one per parameter, e.g. x=2,3:float32")
    render.add_argument("-o", "--output",
                        help="output file (graph.FORMAT); its suffix picks the format")
    render.add_argument("--format", default=None, choices=FORMAT_NAMES,
                        help="output format (default: from the -o suffix, else svg)")
    render.add_argument("--collapse", type=_collapse, default=DEFAULT_BUDGET,
                        help="node budget (an int) or comma-separated scope paths")
    render.add_argument("--allow-violations", action="store_true",
                        help="exit 0 even if the capture recorded violations")
    render.set_defaults(run=cmd_render)
    show = sub.add_parser("show", help="render a saved graph (JSON) to SVG, HTML or DOT")
    show.add_argument("graph")
    show.add_argument("-o", "--output",
                      help="output file (GRAPH.FORMAT beside the graph); its suffix picks the "
                           "format")
    show.add_argument("--format", default=None, choices=FORMAT_NAMES,
                      help="output format (default: from the -o suffix, else svg)")
    show.add_argument("--collapse", type=_collapse, default=DEFAULT_BUDGET)
    show.set_defaults(run=cmd_show)
    check = sub.add_parser("check", help="verify a saved graph; exit 1 on violations")
    check.add_argument("graph")
    check.set_defaults(run=cmd_check)
    parser.commands = {"demo": demo, "render": render, "show": show, "check": check}
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command; return its exit code."""
    from capviz.core.errors import CapvizError

    for stream in (sys.stdout, sys.stderr):  # a name the terminal cannot encode is escaped
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:  # a bad flag of a command: that command's usage, not the top level's
        parser.commands[args.command].error(f"unrecognized arguments: {' '.join(extra)}")
    try:
        return args.run(args)
    except BrokenPipeError:  # `capviz demo | head`: the reader left; say nothing more
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # Python's documented recipe for SIGPIPE
        return 1
    except UsageError as err:
        _say(f"capviz {args.command}: error: {err}", error=True)
        return 2
    except CapvizError as err:
        lines = str(err).splitlines() or [""]
        _say(f"capviz {args.command}: {type(err).__name__}: {lines[0]}", error=True)
        for line in lines[1:]:
            _say(f"  {line}", error=True)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
