"""Census round 2 (issue #20, stop 36), part 2's fix loops: the programs of
tests/test_public_simulations.py with the fixes their refusals quote applied in turn, each
replaying as its three eager calls, and the two silent classes the fix loop found (a 0-d state
read before its write, W=20t 9a06b67; cv.constant held across a write, 224fdd8)."""

import numpy as np
import pytest

import capviz as cv
from tests.helpers.public_census import Program, run
from tests.test_public_simulations import (
    RULE30,
    Diffusion2D,
    Holt,
    Metropolis,
    NBody,
    _spd_calls,
    _x,
    conjugate_gradient,
    newton_sqrt,
)

# --- the quoted fixes applied (the fix loop, each step's fix as the message words it) --------

class FixedNBody(NBody):
    """Two steps: the reads of self.vel the first message names, then self.pos read by
    acceleration() (the second message names self.vel again: W=20t, 04:06)."""

    def acceleration(self):
        pos = cv.constant(self.pos)
        dx = pos[None, :, :] - pos[:, None, :]
        r2 = (dx ** 2).sum(-1) + self.softening ** 2
        inv_r3 = r2 ** -1.5
        np.fill_diagonal(inv_r3, 0.0)
        return self.G * (dx * (inv_r3 * self.mass[None, :])[..., None]).sum(axis=1)

    def step(self, dt):
        self.vel += 0.5 * dt * self.acceleration()
        self.pos += dt * cv.constant(self.vel)
        self.vel += 0.5 * dt * self.acceleration()
        return 0.5 * np.sum(self.mass * (cv.constant(self.vel) ** 2).sum(-1))


class FixedDiffusion2D(Diffusion2D):
    """Two steps: the boundary chain written with a tensor (every target kept), then the
    stencil's reads of self.u the next message names."""

    def run(self, source, steps=3):
        for _ in range(steps):
            u = cv.constant(self.u)
            lap = u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] - 4 * u[1:-1, 1:-1]
            self.u[1:-1, 1:-1] = cv.constant(self.u)[1:-1, 1:-1] + self.D * lap + source[1:-1, 1:-1]
            self.u[0, :] = self.u[-1, :] = self.u[:, 0] = self.u[:, -1] = cv.constant(
                np.float64(0.0))
        return cv.constant(self.u).sum()


def fixed_automaton(cells, steps=4):
    rows = [cells]
    for _ in range(steps):
        left, right = np.roll(cells, 1), np.roll(cells, -1)
        cells = cv.constant(RULE30)[4 * left + 2 * cells + right]
        rows.append(cells)
    return np.stack(rows)


class FixedHolt(Holt):
    """Three steps: level and trend made before the capture in ndarrays written in place, then
    each read of them as cv.constant. Shape (1,): a 0-d ndarray read before its write is the
    silent class below, and cv.constant of one is refused."""

    def __init__(self):
        super().__init__()
        self.level = np.zeros(1)
        self.trend = np.zeros(1)

    def update(self, ys):
        forecasts = []
        for y in ys:
            prev = cv.constant(self.level).copy()
            self.level[...] = self.alpha * y + (1 - self.alpha) * (cv.constant(self.level)
                                                                   + cv.constant(self.trend))
            self.trend[...] = (self.beta * (cv.constant(self.level) - prev)
                               + (1 - self.beta) * cv.constant(self.trend))
            forecasts.append(cv.constant(self.level) + cv.constant(self.trend))
        return np.array(forecasts)


class FixedMetropolis(Metropolis):
    """The accept branch as np.where (its fix), the counts in ndarrays written with tensors
    (the next refusal's fix: self.total += cv.constant(np.int64(1)))."""

    def __init__(self):
        super().__init__()
        self.accepted = np.zeros((), np.int64)
        self.total = np.zeros((), np.int64)

    def run(self, mu, n=6):
        for _ in range(n):
            proposal = self.x + self.step * np.random.randn(2)
            accept = np.log(np.random.rand()) < self.log_p(proposal, mu) - self.log_p(self.x, mu)
            self.x = np.where(accept, proposal, self.x)
            self.accepted += accept
            self.total += cv.constant(np.int64(1))
        return self.x.copy(), self.accepted / self.total


def _fixed_setups():
    def nbody():
        sim = FixedNBody()
        return Program(sim.step, [[np.array(0.01)]] * 3,
                       lambda: {"pos": sim.pos, "vel": sim.vel})

    def diffusion():
        sim = FixedDiffusion2D()
        return Program(sim.run, [[0.01 * np.abs(x)] for x in _x(6, 6)], lambda: {"u": sim.u})

    def automaton():
        rng = np.random.default_rng(15)
        return Program(fixed_automaton, [[rng.integers(0, 2, size=8)] for _ in range(3)])

    def holt():
        h = FixedHolt()
        return Program(h.update, [[np.arange(5.0) + 0.1 * x] for x in _x(5)],
                       lambda: {"level": h.level, "trend": h.trend})

    def metropolis():
        m = FixedMetropolis()
        return Program(m.run, [[np.array([1.0, 2.0])]] * 3,
                       lambda: {"x": m.x, "accepted": m.accepted, "total": m.total})

    def cg():
        return Program(conjugate_gradient, _spd_calls(), examples=True)

    def newton():
        return Program(newton_sqrt, [[np.abs(x) + 1.0] for x in _x(3)], examples=True)

    return {"nbody": nbody, "diffusion": diffusion, "automaton": automaton, "holt": holt,
            "metropolis": metropolis, "cg_with_examples": cg, "newton_with_examples": newton}


FIXED = _fixed_setups()


@pytest.mark.parametrize("name", FIXED)
def test_the_quoted_fixes_replay_as_eager(name):
    verdict = run(FIXED[name])
    assert verdict.kind == "exact", (verdict.detail, verdict.first_line)


# --- silent, found by this census (sent to W=20t and the lead, 04:07) -------------------------

class OffsetTracker:
    """A 0-d ndarray state read by a tensor op before the capture writes it."""

    def __init__(self):
        self.b = np.zeros(())

    def step(self, x):
        y = x - self.b
        self.b -= 0.1 * y.mean()
        return y


def test_a_zero_d_state_read_before_its_write_replays_as_eager_or_is_refused():
    def setup():
        m = OffsetTracker()
        return Program(m.step, [[x] for x in _x(3)], lambda: {"b": m.b})

    verdict = run(setup)
    assert verdict.kind in ("exact", "refused"), verdict.detail


class HeldConstantHolt(Holt):
    """FixedHolt with cv.constant(self.level) taken once per step into a name, read after the
    write: eagerly the name is self.level itself and sees the write."""

    def __init__(self):
        super().__init__()
        self.level = np.zeros(1)
        self.trend = np.zeros(1)

    def update(self, ys):
        forecasts = []
        for y in ys:
            level, trend = cv.constant(self.level), cv.constant(self.trend)
            prev = level.copy()
            self.level[...] = self.alpha * y + (1 - self.alpha) * (level + trend)
            self.trend[...] = self.beta * (level - prev) + (1 - self.beta) * trend
            forecasts.append(level + trend)
        return np.array(forecasts)


def test_a_constant_held_across_a_write_of_its_array_sees_the_write():
    """Silent before (the replay read the level from before the write, from call 1): see
    tests/test_public_held_constants.py."""
    def setup():
        h = HeldConstantHolt()
        return Program(h.update, [[np.arange(5.0) + 0.1 * x] for x in _x(5)],
                       lambda: {"level": h.level, "trend": h.trend})

    verdict = run(setup)
    assert verdict.kind == "exact", (verdict.detail, verdict.first_line)
