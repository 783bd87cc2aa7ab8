"""Capture state: released under any exception at scope entry or exit, and per context (each
thread and each asyncio task has its own captures). Interrupts at random points:
tests/test_interrupts.py."""

import asyncio
import subprocess
import sys
import textwrap
import threading
import warnings

import numpy as np
import pytest
from helpers.capture_state import leaks

import capviz as cv
from capviz.render import live


@pytest.fixture
def devices():
    cap = cv.CaptureDevice("state")
    rng = cv.Device("numpy")
    rng.seed(5)
    return cap, rng


def small(cap, rng, **options):
    with cap.capture_scope(rng=rng, **options) as scope:
        x = scope.input("x", (2,))
        with cv.name_scope("block"):
            y = np.tanh(x) + cv.random.uniform((2,))
        scope.output(y, "y")
    return scope.graph


# --- exceptions at entry and exit -------------------------------------------------------------


def test_a_warning_made_an_error_in_live_mode_releases_the_scope(devices, monkeypatch):
    cap, rng = devices
    monkeypatch.setattr(live, "_warned", False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(RuntimeWarning, match="live view disabled: not running in a Jupyter"):
            with cap.capture_scope(live=True, rng=rng):
                pass  # pragma: no cover - entering raised
    assert leaks([cap], [rng]) == {}
    assert small(cap, rng).complete  # the device is free


def test_python_dash_w_error_live_capture_leaves_nothing_behind():
    script = textwrap.dedent("""
        import capviz as cv
        from capviz.randomness import hooks
        cap = cv.CaptureDevice("w")
        try:
            with cap.capture_scope(live=True):
                pass
        except RuntimeWarning as err:
            print("refused:", err)
        print("capturing:", cv.is_capturing(), "hooks:", hooks.installed(),
              "device busy:", cap._active is not None)
        with cap.capture_scope() as scope:
            scope.output(scope.input("x", (1,)) + 1.0)
        print("reusable:", scope.graph.complete)
    """)
    done = subprocess.run([sys.executable, "-W", "error", "-c", script], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "refused: capviz live view disabled" in done.stdout
    assert "capturing: False hooks: False device busy: False" in done.stdout
    assert "reusable: True" in done.stdout


def test_a_busy_device_refuses_without_disturbing_the_open_scope(devices):
    cap, rng = devices
    with cap.capture_scope(rng=rng) as outer:
        x = outer.input("x", (2,))
        with pytest.raises(cv.ScopeAlreadyActiveError, match="already has an active capture"):
            with cap.capture_scope(rng=rng):
                pass  # pragma: no cover
        assert cv.is_capturing()
        outer.output(x * 2.0, "y")
    assert outer.graph.complete and [n.op for n in outer.graph.ops] == ["multiply"]
    assert leaks([cap], [rng]) == {}


def test_a_recursion_error_at_any_depth_of_entry_or_exit_leaves_nothing(devices):
    cap, rng = devices
    small(cap, rng)  # first-use paths out of the way

    def at_depth(n):
        if n:
            return at_depth(n - 1)
        return small(cap, rng)

    depth = 0
    frame = sys._getframe()
    while frame is not None:
        depth, frame = depth + 1, frame.f_back
    limit = sys.getrecursionlimit()
    outcomes = []
    sys.setrecursionlimit(depth + 150)
    try:
        for n in range(150, 30, -1):  # the capture gets from 0 to 120 frames of headroom
            try:
                outcomes.append(at_depth(n).complete)
            except RecursionError:
                outcomes.append("RecursionError")
            left = leaks([cap], [rng])
            assert left == {}, f"RecursionError {n} frames deep left {left}"
    finally:
        sys.setrecursionlimit(limit)
    assert "RecursionError" in outcomes and True in outcomes  # failed at some depths, not all
    assert small(cap, rng).complete


def test_an_error_in_the_body_releases_everything_and_keeps_the_graph(devices):
    cap, rng = devices
    with pytest.raises(ZeroDivisionError):
        with cap.capture_scope(rng=rng) as scope:
            with cv.name_scope("block"):
                scope.input("x", (2,)) * 2.0
                1 / 0
    assert leaks([cap], [rng]) == {}
    assert isinstance(scope.graph.error, ZeroDivisionError) and not scope.graph.complete
    assert [n.scope for n in scope.graph.ops] == ["block"]


# --- one capture per context: threads and asyncio tasks ----------------------------------------


def test_a_seed_in_one_asyncio_task_is_not_a_violation_of_another_tasks_capture():
    async def capture(started, seeded):
        with cv.CaptureDevice("task").capture_scope() as scope:  # raise mode
            x = scope.input("x", (2,))
            started.set()
            await seeded.wait()  # the other task seeds NumPy while this scope is open
            scope.output(x * 2.0, "y")
        return scope.graph

    async def seed(started, seeded):
        await started.wait()
        try:
            capturing = cv.is_capturing()
            np.random.seed(3)  # not inside any capture of this task
        finally:
            seeded.set()
        return capturing

    async def main():
        started, seeded = asyncio.Event(), asyncio.Event()
        return await asyncio.gather(capture(started, seeded), seed(started, seeded))

    graph, capturing = asyncio.run(main())
    assert capturing is False
    assert graph.complete and graph.violations == []


def test_two_asyncio_tasks_capture_at_once_without_mixing_their_graphs():
    async def capture(name, factor, turn):
        with cv.CaptureDevice(name).capture_scope() as scope:
            x = scope.input("x", (3,))
            for _ in range(5):
                x = np.tanh(x) * factor
                await asyncio.sleep(0)  # the other task records in between
            with cv.name_scope(name):
                await turn()
                x = x + 1.0
            scope.output(x, "y")
        return scope.graph

    async def main():
        return await asyncio.gather(capture("a", 2.0, lambda: asyncio.sleep(0)),
                                    capture("b", 3.0, lambda: asyncio.sleep(0)))

    a, b = asyncio.run(main())
    x = np.linspace(-1, 1, 3, dtype=np.float32)
    for graph, factor, name in ((a, 2.0, "a"), (b, 3.0, "b")):
        assert len(graph.ops) == 11 and graph.ops[-1].scope == name
        want = x
        for _ in range(5):
            want = np.tanh(want) * factor
        np.testing.assert_array_equal(graph.replay({"x": x})["y"], want + 1.0)


def test_a_capture_tensor_used_from_another_asyncio_task_is_refused():
    async def main():
        box, ready, done = {}, asyncio.Event(), asyncio.Event()

        async def other():  # created before the scope: its context has no capture
            await ready.wait()
            try:
                box["x"] * 2.0
            except cv.CaptureError as err:
                box["error"] = err
            done.set()

        task = asyncio.create_task(other())
        with cv.CaptureDevice("owner").capture_scope() as scope:
            box["x"] = scope.input("x", (2,))
            ready.set()
            await done.wait()
            scope.output(box["x"] + 1.0, "y")
        await task
        return box["error"], scope.graph

    error, graph = asyncio.run(main())
    assert "a capture tensor of 'owner' was used from another asyncio task" in str(error)
    assert "records only the asyncio task that opened its scope" in str(error)
    assert graph.complete and [n.op for n in graph.ops] == ["add"]


def test_a_task_started_inside_a_scope_records_into_it_like_a_call():
    async def main():
        with cv.CaptureDevice("parent").capture_scope() as scope:
            x = scope.input("x", (2,))
            y = await asyncio.create_task(half(x))  # the task copies the scope's context
            scope.output(y, "y")
        return scope.graph

    async def half(x):
        return x * 0.5

    graph = asyncio.run(main())
    assert graph.complete and [n.op for n in graph.ops] == ["multiply"]


def test_a_capture_tensor_used_from_another_thread_is_refused():
    errors = []
    with cv.CaptureDevice("owner").capture_scope() as scope:
        x = scope.input("x", (2,))

        def use():
            try:
                x + 1.0
            except cv.CaptureError as err:
                errors.append(err)

        thread = threading.Thread(target=use)
        thread.start()
        thread.join(30)
        scope.output(x * 2.0, "y")
    assert len(errors) == 1
    with pytest.raises(cv.CaptureError, match="used from another thread; a capture records "
                                              "only the thread that opened its scope"):
        raise errors[0]
    assert scope.graph.complete and [n.op for n in scope.graph.ops] == ["multiply"]


def test_a_task_that_outlives_its_scope_is_no_longer_capturing():
    async def main():
        release = asyncio.Event()

        async def child():
            await release.wait()
            capturing = cv.is_capturing()
            np.random.seed(4)  # the scope has ended: NumPy's own seed, nothing reported
            return capturing

        with cv.CaptureDevice().capture_scope() as scope:
            task = asyncio.create_task(child())  # copies the scope's context
            scope.output(scope.input("x", (1,)) + 1.0, "y")
        release.set()
        return await task, scope.graph

    capturing, graph = asyncio.run(main())
    assert capturing is False
    assert graph.complete and graph.violations == []


def test_a_caught_violation_leaves_the_scope_capturing_until_it_exits():
    with pytest.raises(cv.SeedViolationError, match="seeding is not supported"):
        with cv.CaptureDevice().capture_scope():
            try:
                np.random.seed(1)
            except cv.SeedViolationError:
                pass
            assert cv.is_capturing()  # closed by the violation, but its scope is still open
    assert not cv.is_capturing()
