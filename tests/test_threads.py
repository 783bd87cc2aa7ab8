"""Concurrency: eight captures at once, a ninth thread seeding NumPy, a shared device."""

import threading

import numpy as np
import pytest

import capviz as cv
from capviz.testing import assert_graph_equal

N = 8


def program(i, barrier=None):
    dev = cv.Device("numpy")
    dev.seed(100 + i)
    cap = cv.CaptureDevice(f"cap{i}")
    with cap.capture_scope(on_violation="record", rng=dev) as scope:
        x = scope.input("x", (4, i + 1))
        if barrier is not None:
            barrier.wait(timeout=30)  # all eight scopes are open at once
        for k in range(50):
            with cv.name_scope(f"t{i}/step{k % 3}"):
                x = np.tanh(x * (i + 1.0)) + cv.random.uniform((4, i + 1))
                if i == 3 and k == 25:
                    np.random.seed(k)  # the only seed made inside a capture
        if barrier is not None:
            barrier.wait(timeout=30)
        scope.output(x.sum(axis=0), "y")
    return scope.graph


def test_eight_threads_capture_while_a_ninth_seeds():
    barrier = threading.Barrier(N)
    graphs, errors = [None] * N, []
    stop = threading.Event()
    seeds = [0]

    def capture(i):
        try:
            graphs[i] = program(i, barrier)
        except BaseException as err:  # pragma: no cover - reported below
            errors.append(err)

    def seeder():
        while not stop.is_set():
            np.random.seed(seeds[0] % 1000)
            seeds[0] += 1

    threads = [threading.Thread(target=capture, args=(i,)) for i in range(N)]
    noisy = threading.Thread(target=seeder)
    noisy.start()
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    stop.set()
    noisy.join(10)
    assert errors == [] and seeds[0] > 0
    for i, graph in enumerate(graphs):
        assert_graph_equal(graph, program(i))
        expected = 1 if i == 3 else 0
        assert len(graph.violations) == expected, i
    assert graphs[3].violations[0].call == "np.random.seed(25)"


def test_a_shared_device_refuses_the_second_thread():
    cap = cv.CaptureDevice("shared")
    inside, release = threading.Event(), threading.Event()
    result = {}

    def first():
        with cap.capture_scope() as scope:
            x = scope.input("x", (2,))
            inside.set()
            release.wait(30)
            scope.output(x + 1)
        result["graph"] = scope.graph

    def second():
        try:
            with cap.capture_scope() as scope:
                scope.output(scope.input("x", (2,)) * 5)
        except cv.ScopeAlreadyActiveError as err:
            result["error"] = err

    t1 = threading.Thread(target=first)
    t1.start()
    inside.wait(30)
    t2 = threading.Thread(target=second)
    t2.start()
    t2.join(30)
    release.set()
    t1.join(30)
    assert "already has an active capture scope" in str(result["error"])
    assert [n.op for n in result["graph"].ops] == ["add"]  # never a mixed graph


def test_hooks_are_removed_after_concurrent_captures():
    from capviz.randomness import hooks

    original = np.random.seed
    threads = [threading.Thread(target=program, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not hooks.installed() and np.random.seed is original


@pytest.mark.parametrize("i", [0, 5])
def test_program_is_deterministic(i):
    assert_graph_equal(program(i), program(i))
