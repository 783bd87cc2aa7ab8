"""benchmarks/_common.py: the helpers the benchmarks share instead of copies of their own."""

from __future__ import annotations

import ast
import importlib
import os
import sys
import types

import pytest

BENCHMARKS = os.path.join(os.path.dirname(os.path.dirname(__file__)), "benchmarks")


@pytest.fixture(scope="module")
def common():
    sys.path.insert(0, BENCHMARKS)
    try:
        yield importlib.import_module("_common")
    finally:
        sys.path.remove(BENCHMARKS)


class _Graph:
    """A graph whose compiled program records the switch it was traced with."""

    def __init__(self, module, fails=False):
        self.module, self.fails, self.seen = module, fails, []

    def compile(self, backend):
        assert backend == "jax"

        def fn(probe):
            self.seen.append((self.module.SWITCH, probe))
            if self.fails:
                raise ValueError("trace failed")
            return probe
        return fn


def test_traced_with_traces_once_with_the_switch_then_puts_it_back(common):
    module = types.SimpleNamespace(SWITCH="kept")
    graph = _Graph(module)
    fn = common.traced_with(graph, 2.0, module, "SWITCH", "off")
    assert graph.seen == [("off", 2.0)]
    assert module.SWITCH == "kept"
    fn(3.0)  # later calls run with the module as it is
    assert graph.seen[-1] == ("kept", 3.0)


def test_traced_with_puts_the_switch_back_where_the_trace_fails(common):
    module = types.SimpleNamespace(SWITCH=frozenset({"add"}))
    with pytest.raises(ValueError, match="trace failed"):
        common.traced_with(_Graph(module, fails=True), 1.0, module, "SWITCH", frozenset())
    assert module.SWITCH == frozenset({"add"})


@pytest.mark.parametrize("name", ["jax_complex_products.py", "jax_contraction_overflow.py",
                                  "jax_literals.py"])
def test_the_jax_benchmarks_trace_through_the_one_helper(name):
    """Each of them compiled its before/after programs with a copy of the same ten lines
    (compile, patch a module, trace, put back): now ``_common.traced_with``."""
    with open(os.path.join(BENCHMARKS, name)) as f:
        tree = ast.parse(f.read())
    compiles = [node.lineno for node in ast.walk(tree)
                if isinstance(node, ast.Attribute) and node.attr == "compile"]
    assert compiles == []
    called = {node.func.id for node in ast.walk(tree)
              if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)}
    assert "traced_with" in called
