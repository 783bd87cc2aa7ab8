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
from collections.abc import Sequence
from typing import Any

import numpy as np

from capviz.backends import registry
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


def _parse_input(text: str) -> tuple[str, Any]:
    """``x=2,3:float32`` -> ``("x", Spec((2, 3), float32))``."""
    import capviz as cv

    name, eq, rest = text.partition("=")
    if not eq or not name.isidentifier():
        raise UsageError(f"bad --input {text!r}: expected NAME=SHAPE:DTYPE, e.g. x=2,3:float32")
    shape_text, _, dtype = rest.partition(":")
    try:
        shape = tuple(int(s) for s in shape_text.replace("x", ",").split(",") if s.strip()) \
            if shape_text.strip() not in ("", "()") else ()
        return name, cv.spec(shape, dtype or "float32")
    except (ValueError, TypeError) as err:
        raise UsageError(f"bad --input {text!r}: {err}") from None


def _import_function(target: str) -> Any:
    module_name, colon, attr = target.partition(":")
    if not colon or not module_name or not attr:
        raise UsageError(f"bad target {target!r}: expected MODULE:FUNCTION")
    if module_name.startswith("."):
        raise UsageError(f"bad target {target!r}: a relative module name has no package to be "
                         "relative to here; give the full dotted name (package.module:function) "
                         "and run from the folder that holds the package")
    sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
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
    for v in graph.violations:
        _say(f"{v.level}: {v.kind} at {v.location}: {v.message.splitlines()[0]}", error=True)


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


def _format(args: argparse.Namespace) -> str:
    """``--format``, else the output file's suffix, else SVG (``-o g.html`` writes the view)."""
    if args.format is not None:
        return args.format
    suffix = os.path.splitext(args.output or "")[1].lower()
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


def cmd_render(args: argparse.Namespace) -> int:
    import capviz as cv

    fmt = _format(args)
    fn = _import_function(args.target)
    specs = [_parse_input(text) for text in args.input or []]
    names = [n for n, _ in specs]
    _check_inputs_bind(fn, args.target, names)
    try:
        graph = cv.capture(lambda *xs: fn(**dict(zip(names, xs))), *[s for _, s in specs],
                           on_violation="record")
    except Exception as err:  # the user's function failed: say where, keep the partial graph
        graph = getattr(err, "graph", None)
        where = "" if isinstance(err, cv.CaptureError) else _user_location(err)
        _say(f"capture failed: {type(err).__name__}: {_first_line(err)}{where}", error=True)
        if graph is not None:
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


def _load(path: str) -> Any:
    import capviz as cv

    try:
        return cv.load(path)
    except cv.GraphFormatError as err:
        raise UsageError(str(err)) from None


def cmd_show(args: argparse.Namespace) -> int:
    graph = _load(args.graph)
    out = args.output or os.path.splitext(args.graph)[0] + ".svg"
    path = _write(graph, out, "svg", args.collapse)
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
    open without a word)."""
    if not isinstance(collapse, list):
        return
    scopes = {n.scope for n in graph.nodes if n.scope}
    for path in collapse:
        if not any(s == path or s.startswith(path + "/") for s in scopes):
            top = sorted({s.split("/")[0] for s in scopes})
            raise UsageError(f"--collapse names scope {path!r}, which the graph does not have; "
                             f"its top-level scopes: {', '.join(top) or '(none)'}")


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
    render.add_argument("--format", default=None, choices=["svg", "dot", "json", "html"],
                        help="output format (default: from the -o suffix, else svg)")
    render.add_argument("--collapse", type=_collapse, default=DEFAULT_BUDGET,
                        help="node budget (an int) or comma-separated scope paths")
    render.add_argument("--allow-violations", action="store_true",
                        help="exit 0 even if the capture recorded violations")
    render.set_defaults(run=cmd_render)
    show = sub.add_parser("show", help="render a saved graph (JSON) to SVG")
    show.add_argument("graph")
    show.add_argument("-o", "--output")
    show.add_argument("--collapse", type=_collapse, default=DEFAULT_BUDGET)
    show.set_defaults(run=cmd_show)
    check = sub.add_parser("check", help="verify a saved graph; exit 1 on violations")
    check.add_argument("graph")
    check.set_defaults(run=cmd_check)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command; return its exit code."""
    from capviz.core.errors import CapvizError

    for stream in (sys.stdout, sys.stderr):  # a name the terminal cannot encode is escaped
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    parser = build_parser()
    args = parser.parse_args(argv)
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
        _say(f"capviz {args.command}: {type(err).__name__}: {_first_line(err)}", error=True)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
