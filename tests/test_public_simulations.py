"""Census round 2 of public-code-style NumPy programs (issue #20, stop 36), part 2: filters,
samplers, solvers with a `break`, clustering and simulations (a Kalman filter, a Gibbs sampler,
conjugate gradients, power iteration, k-means, SIR, N-body, Lotka-Volterra by RK4, diffusion,
Metropolis-Hastings, annealing, the bootstrap, Newton's method, Monte Carlo paths, an OU
process, a cellular automaton, Holt's smoothing). Written as public NumPy code is, not for
capviz; run and pinned as in tests/test_public_learning.py."""

import random

import numpy as np
import pytest

import capviz as cv
from tests.helpers.public_census import Program, line_of, refused_at, run
from tests.helpers.two_passes import two_passes  # noqa: F401 (the fixture)


def _x(*shape):
    """Three calls' arrays, the same for a shape whichever tests ran before."""
    rng = np.random.default_rng(360)
    return [rng.standard_normal(shape) for _ in range(3)]


# --- 1. A Kalman filter (constant velocity), its state rebound by predict and update ---------

class KalmanFilter:
    def __init__(self, dt=1.0):
        self.F = np.array([[1.0, dt], [0.0, 1.0]])
        self.H = np.array([[1.0, 0.0]])
        self.Q = np.eye(2) * 1e-3
        self.R = np.array([[0.1]])
        self.x = np.zeros((2, 1))
        self.P = np.eye(2)

    def predict(self):
        self.x = self.F @ self.x
        self.P = self.F @ self.P @ self.F.T + self.Q

    def update(self, z):
        y = z - self.H @ self.x
        S = self.H @ self.P @ self.H.T + self.R
        K = self.P @ self.H.T @ np.linalg.inv(S)
        self.x = self.x + K @ y
        self.P = (np.eye(2) - K @ self.H) @ self.P

    def filter(self, zs):
        estimates = np.zeros(len(zs))
        for i, z in enumerate(zs):
            self.predict()
            self.update(z.reshape(1, 1))
            estimates[i] = self.x[0, 0]
        return estimates


def kalman_setup():
    kf = KalmanFilter()
    return Program(kf.filter, [[np.arange(4.0) + 0.1 * x] for x in _x(4)],
                   lambda: {"x": kf.x, "P": kf.P})


# --- 2. A Gibbs sampler for a bivariate normal, the chain kept on the object ------------------

class Gibbs:
    def __init__(self, rho=0.8):
        self.rho = rho
        self.x, self.y = 0.0, 0.0

    def sample(self, mu, n=8):
        samples = np.empty((n, 2))
        sd = np.sqrt(1 - self.rho ** 2)
        for i in range(n):
            self.x = np.random.normal(mu[0] + self.rho * (self.y - mu[1]), sd)
            self.y = np.random.normal(mu[1] + self.rho * (self.x - mu[0]), sd)
            samples[i] = [self.x, self.y]
        return samples.mean(axis=0)


def gibbs_setup():
    g = Gibbs()
    return Program(g.sample, [[np.array([1.0, -1.0])]] * 3, lambda: {"x": g.x, "y": g.y})


# --- 3. Conjugate gradients, stopped by a `break` on the residual ----------------------------

def conjugate_gradient(A, b, tol=1e-10, max_iter=20):
    x = np.zeros_like(b)
    r = b - A @ x
    p = r.copy()
    rs_old = r @ r
    for i in range(max_iter):
        Ap = A @ p
        alpha = rs_old / (p @ Ap)
        x += alpha * p
        r -= alpha * Ap
        rs_new = r @ r
        if np.sqrt(rs_new) < tol:
            break
        p = r + (rs_new / rs_old) * p
        rs_old = rs_new
    return x


def _spd_calls():
    out = []
    for M in _x(4, 4):
        out.append([M @ M.T + 4 * np.eye(4), M[0]])
    return out


def cg_setup():
    return Program(conjugate_gradient, _spd_calls())


# --- 4. Power iteration, stopped by a `break` when the eigenvalue settles --------------------

def power_iteration(A, num_iters=50, tol=1e-9):
    b = np.ones(A.shape[1]) / np.sqrt(A.shape[1])
    lam = 0.0
    for _ in range(num_iters):
        Ab = A @ b
        b_new = Ab / np.linalg.norm(Ab)
        lam_new = b_new @ A @ b_new
        if abs(lam_new - lam) < tol:
            break
        b, lam = b_new, lam_new
    return lam_new, b_new


def power_setup():
    return Program(power_iteration, [[A] for A, _ in _spd_calls()])


# --- 5. Lloyd's k-means: random init, assignment, masked means, convergence `break` ----------

def kmeans(X, k=3, iters=10):
    centroids = X[np.random.choice(len(X), k, replace=False)]
    for _ in range(iters):
        d = ((X[:, None, :] - centroids[None, :, :]) ** 2).sum(axis=2)
        labels = d.argmin(axis=1)
        new = np.array([X[labels == j].mean(axis=0) if np.any(labels == j) else centroids[j]
                        for j in range(k)])
        if np.allclose(new, centroids):
            break
        centroids = new
    return centroids, labels


def kmeans_setup():
    return Program(kmeans, [[x] for x in _x(9, 2)])


# --- 6. An SIR epidemic by Euler steps, the trajectory appended to lists ---------------------

def sir(params, days=10, dt=0.5):
    beta, gamma = params[0], params[1]
    S, I, R = 0.99, 0.01, 0.0  # noqa: E741 (the model's own names)
    history = []
    for _ in range(int(days / dt)):
        new_inf = beta * S * I * dt
        new_rec = gamma * I * dt
        S, I, R = S - new_inf, I + new_inf - new_rec, R + new_rec  # noqa: E741
        history.append([S, I, R])
    return np.array(history)


def sir_setup():
    return Program(sir, [[np.array([0.3 + 0.1 * k, 0.1])] for k in range(3)])


# --- 7. N-body gravity by leapfrog, positions and velocities updated in place ----------------

class NBody:
    def __init__(self, n=4, G=1.0, softening=0.1):
        rng = np.random.default_rng(14)
        self.pos = rng.standard_normal((n, 2))
        self.vel = np.zeros((n, 2))
        self.mass = rng.random(n) + 0.5
        self.G, self.softening = G, softening

    def acceleration(self):
        dx = self.pos[None, :, :] - self.pos[:, None, :]
        r2 = (dx ** 2).sum(-1) + self.softening ** 2
        inv_r3 = r2 ** -1.5
        np.fill_diagonal(inv_r3, 0.0)
        return self.G * (dx * (inv_r3 * self.mass[None, :])[..., None]).sum(axis=1)

    def step(self, dt):
        self.vel += 0.5 * dt * self.acceleration()  # (first)
        self.pos += dt * self.vel
        self.vel += 0.5 * dt * self.acceleration()
        return 0.5 * np.sum(self.mass * (self.vel ** 2).sum(-1))


def nbody_setup():
    sim = NBody()
    return Program(sim.step, [[np.array(0.01)]] * 3, lambda: {"pos": sim.pos, "vel": sim.vel})


# --- 8. Lotka-Volterra by classic RK4, the derivative an np.array of its parts ---------------

def lotka_volterra(state, a=1.0, b=0.1, c=1.5, d=0.075):
    x, y = state
    return np.array([a * x - b * x * y, d * x * y - c * y])


def rk4(state0, dt=0.1, n=10):
    traj = np.zeros((n + 1, 2))
    traj[0] = state0
    s = state0
    for i in range(n):
        k1 = lotka_volterra(s)
        k2 = lotka_volterra(s + dt / 2 * k1)
        k3 = lotka_volterra(s + dt / 2 * k2)
        k4 = lotka_volterra(s + dt * k3)
        s = s + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        traj[i + 1] = s
    return traj


def rk4_setup():
    return Program(rk4, [[np.array([10.0 + k, 5.0])] for k in range(3)])


# --- 9. 2-D diffusion: an explicit stencil on slices, fixed boundaries, kept on the object ---

class Diffusion2D:
    def __init__(self, n=6, D=0.1):
        self.u = np.zeros((n, n))
        self.u[n // 2, n // 2] = 1.0
        self.D = D

    def run(self, source, steps=3):
        for _ in range(steps):
            lap = (self.u[:-2, 1:-1] + self.u[2:, 1:-1] + self.u[1:-1, :-2] + self.u[1:-1, 2:]
                   - 4 * self.u[1:-1, 1:-1])
            self.u[1:-1, 1:-1] = self.u[1:-1, 1:-1] + self.D * lap + source[1:-1, 1:-1]
            self.u[0, :] = self.u[-1, :] = self.u[:, 0] = self.u[:, -1] = 0.0
        return self.u.sum()


def diffusion_setup():
    sim = Diffusion2D()
    return Program(sim.run, [[0.01 * np.abs(x)] for x in _x(6, 6)], lambda: {"u": sim.u})


# --- 10. Random-walk Metropolis-Hastings with an acceptance count ----------------------------

class Metropolis:
    def __init__(self, step=0.5):
        self.x = np.zeros(2)
        self.step = step
        self.accepted = 0
        self.total = 0

    def log_p(self, x, mu):
        return -0.5 * np.sum((x - mu) ** 2)

    def run(self, mu, n=6):
        for _ in range(n):
            proposal = self.x + self.step * np.random.randn(2)
            if np.log(np.random.rand()) < self.log_p(proposal, mu) - self.log_p(self.x, mu):
                self.x = proposal
                self.accepted += 1
            self.total += 1
        return self.x.copy(), self.accepted / self.total


def metropolis_setup():
    m = Metropolis()
    return Program(m.run, [[np.array([1.0, 2.0])]] * 3,
                   lambda: {"x": m.x, "accepted": m.accepted, "total": m.total})


# --- 11. Simulated annealing on a 1-D function, Python's random for acceptance ---------------

def anneal(x0, T0=1.0, cooling=0.9, n=8):
    x = x0.copy()
    f = np.sum(x ** 2 + 2 * np.sin(3 * x))
    T = T0
    for _ in range(n):
        candidate = x + np.random.normal(0, 0.3, size=x.shape)
        f_new = np.sum(candidate ** 2 + 2 * np.sin(3 * candidate))
        if f_new < f or random.random() < np.exp((f - f_new) / T):
            x, f = candidate, f_new
        T *= cooling
    return x, f


def anneal_setup():
    return Program(anneal, [[x] for x in _x(2)])


# --- 12. A bootstrap confidence interval of the mean -----------------------------------------

def bootstrap_ci(data, n_boot=200, alpha=0.05):
    n = len(data)
    idx = np.random.randint(0, n, size=(n_boot, n))
    means = data[idx].mean(axis=1)
    lo, hi = np.percentile(means, [100 * alpha / 2, 100 * (1 - alpha / 2)])
    return data.mean(), lo, hi


def bootstrap_setup():
    return Program(bootstrap_ci, [[x] for x in _x(10)])


# --- 13. Newton's method for a root, a `while` on the tolerance ------------------------------

def newton_sqrt(a, tol=1e-12, max_iter=50):
    x = a / 2 + 1.0
    it = 0
    while np.max(np.abs(x * x - a)) > tol and it < max_iter:
        x = x - (x * x - a) / (2 * x)
        it += 1
    return x


def newton_setup():
    return Program(newton_sqrt, [[np.abs(x) + 1.0] for x in _x(3)])


# --- 14. Monte Carlo pricing of a European call on geometric Brownian paths ------------------

def mc_call_price(S0, K=1.0, r=0.01, sigma=0.2, T=1.0, n_paths=64, n_steps=8):
    dt = T / n_steps
    Z = np.random.standard_normal((n_paths, n_steps))
    log_paths = np.cumsum((r - 0.5 * sigma ** 2) * dt + sigma * np.sqrt(dt) * Z, axis=1)
    S_T = S0 * np.exp(log_paths[:, -1])
    payoff = np.maximum(S_T - K, 0.0)
    return np.exp(-r * T) * payoff.mean(), payoff.std() / np.sqrt(n_paths)


def mc_setup():
    return Program(mc_call_price, [[np.array(1.0 + 0.1 * k)] for k in range(3)])


# --- 15. An Ornstein-Uhlenbeck path, preallocated and filled one draw at a time --------------

def ou_path(x0, theta=0.7, mu=1.0, sigma=0.3, dt=0.1, n=10):
    x = np.empty(n)
    x[0] = x0
    for i in range(1, n):
        x[i] = x[i - 1] + theta * (mu - x[i - 1]) * dt + sigma * np.sqrt(dt) * np.random.randn()
    return x


def ou_setup():
    return Program(ou_path, [[np.array(0.5 * k)] for k in range(3)])


# --- 16. A 1-D cellular automaton (rule 30) by np.roll and a lookup table --------------------

RULE30 = np.array([(30 >> i) & 1 for i in range(8)], dtype=np.int64)


def automaton(cells, steps=4):
    rows = [cells]
    for _ in range(steps):
        left, right = np.roll(cells, 1), np.roll(cells, -1)
        cells = RULE30[4 * left + 2 * cells + right]
        rows.append(cells)
    return np.stack(rows)


def automaton_setup():
    rng = np.random.default_rng(15)
    return Program(automaton, [[rng.integers(0, 2, size=8)] for _ in range(3)])


# --- 17. Holt's linear exponential smoothing, level and trend kept as floats -----------------

class Holt:
    def __init__(self, alpha=0.5, beta=0.3):
        self.alpha, self.beta = alpha, beta
        self.level = None
        self.trend = 0.0

    def update(self, ys):
        forecasts = []
        for y in ys:
            if self.level is None:
                self.level = y
                continue
            prev = self.level
            self.level = self.alpha * y + (1 - self.alpha) * (self.level + self.trend)
            self.trend = self.beta * (self.level - prev) + (1 - self.beta) * self.trend
            forecasts.append(self.level + self.trend)
        return np.array(forecasts)


def holt_setup():
    h = Holt()
    return Program(h.update, [[np.arange(5.0) + 0.1 * x] for x in _x(5)],
                   lambda: {"level": h.level, "trend": h.trend})


SIMULATIONS = {
    "kalman_filter": (kalman_setup, "self.x = F @ self.x; np.linalg.inv(S); estimates[i] = "
                                    "self.x[0, 0]"),
    "gibbs_bivariate": (gibbs_setup, "self.x = np.random.normal(loc tensor, sd); samples[i] = "
                                     "[self.x, self.y]"),
    "conjugate_gradient_break": (cg_setup, "x += alpha * p; if np.sqrt(rs_new) < tol: break"),
    "power_iteration_break": (power_setup, "if abs(lam_new - lam) < tol: break"),
    "kmeans_lloyd": (kmeans_setup, "np.random.choice init; X[labels == j].mean(0); "
                                   "np.allclose break"),
    "sir_euler_lists": (sir_setup, "S, I, R floats from params; history.append([S, I, R])"),
    "nbody_leapfrog": (nbody_setup, "np.fill_diagonal(inv_r3, 0); self.vel += ...; "
                                    "self.pos += ..."),
    "lotka_volterra_rk4": (rk4_setup, "x, y = state; np.array([...]); traj[i + 1] = s"),
    "diffusion_2d": (diffusion_setup, "self.u[1:-1, 1:-1] = stencil; chained boundary "
                                      "assignment"),
    "metropolis_counter": (metropolis_setup, "if np.log(np.random.rand()) < ...; "
                                             "self.accepted += 1"),
    "simulated_annealing": (anneal_setup, "np.random.normal; `f_new < f or random.random() < "
                                          "...`; T *= cooling"),
    "bootstrap_ci": (bootstrap_setup, "np.random.randint (B, n); data[idx]; np.percentile"),
    "newton_while": (newton_setup, "while np.max(np.abs(x * x - a)) > tol"),
    "mc_option_gbm": (mc_setup, "np.random.standard_normal paths; np.cumsum; np.maximum"),
    "ou_path_fill": (ou_setup, "x = np.empty(n); x[i] = x[i-1] + ... * np.random.randn()"),
    "rule30_automaton": (automaton_setup, "np.roll; RULE30[4 * left + 2 * cells + right]"),
    "holt_smoothing": (holt_setup, "self.level = None then a value; self.trend float"),
}


# --- what the census finds -------------------------------------------------------------------

EXACT = ["kalman_filter", "sir_euler_lists", "lotka_volterra_rk4", "bootstrap_ci",
         "mc_option_gbm", "ou_path_fill"]
# (refused by the two passes, whose second run found NumPy reading or writing a state; a
# first capture lifts the arrays its statements write and runs once: every read is the
# tensor's, recorded)
EXACT += ["nbody_leapfrog", "diffusion_2d"]


@pytest.mark.parametrize("name", EXACT)
def test_the_program_replays_as_three_eager_calls_bit_for_bit(name):
    verdict = run(SIMULATIONS[name][0])
    assert verdict.kind == "exact", (verdict.detail, verdict.first_line)


BRANCH = ("Fix: select with np.where({cond}, a, b), or capture with an example array instead "
          "of a spec (cv.capture(f, x)): the branch taken is then recorded as a guard.")
DRAWN = ("Fix: select with np.where(<condition>, a, b), or draw before the capture and pass "
         "the value in as an input.")
READ_WRITTEN = ("NumPy's own operators computed a value from an array the capture writes, "
                "outside the capture's sight.")

# (name, error, the line, the code the message quotes, function, what (its start), fix (its
# start), or None where the fix is another engineer's to correct: the head is pinned)
REFUSED = [
    ("gibbs_bivariate", cv.UnsupportedOperationError,
     "self.x = np.random.normal(mu[0] + self.rho * (self.y - mu[1]), sd)",
     "np.random.normal(mu[0] + self.rho * (self.y - mu[1]), sd)", "sample",
     "np.random.normal(<Tensor float64[]>, <float64 float64[]>) is not supported by capviz.",
     "Fix: use standard values transformed with the tensors: mu + sigma * "
     "np.random.standard_normal(shape)."),
    ("conjugate_gradient_break", cv.DataReadError, "if np.sqrt(rs_new) < tol:",
     "np.sqrt(rs_new) < tol", "conjugate_gradient",
     "branches on the value of `np.sqrt(rs_new) < tol` (bool() of ",
     BRANCH.format(cond="np.sqrt(rs_new) < tol")),
    ("power_iteration_break", cv.DataReadError, "if abs(lam_new - lam) < tol:",
     "abs(lam_new - lam) < tol", "power_iteration",
     "branches on the value of `abs(lam_new - lam) < tol` (bool() of ",
     BRANCH.format(cond="abs(lam_new - lam) < tol")),
    ("kmeans_lloyd", cv.DataReadError,
     "new = np.array([X[labels == j].mean(axis=0) if np.any(labels == j) else centroids[j]",
     "X[labels == j].mean(axis=0) if np.any(labels == j) else centroids[j]", "<listcomp>",
     "bool() is not supported by capviz.", DRAWN),
    ("nbody_leapfrog", cv.UnsupportedOperationError,
     "self.vel += 0.5 * dt * self.acceleration()  # (first)",
     "self.vel += 0.5 * dt * self.acceleration()", "step", READ_WRITTEN,
     "Fix: write line {pos} as `self.pos += dt * cv.constant(self.vel)`, and line {energy} "
     "as `return 0.5 * np.sum(self.mass * (cv.constant(self.vel) ** 2).sum(-1))`"),
    # the fix quoted names the chain's first target only, which would drop the other three
    # boundary writes: W=20t, 04:10
    ("diffusion_2d", cv.UnsupportedOperationError,
     "self.u[0, :] = self.u[-1, :] = self.u[:, 0] = self.u[:, -1] = 0.0",
     "self.u[0, :] = self.u[-1, :] = self.u[:, 0] = self.u[:, -1] = 0.0", "run",
     "NumPy's own operators wrote self.u after the capture's write into it.", None),
    ("metropolis_counter", cv.DataReadError,
     "if np.log(np.random.rand()) < self.log_p(proposal, mu) - self.log_p(self.x, mu):",
     "np.log(np.random.rand()) < self.log_p(proposal, mu) - self.log_p(self...", "run",
     "bool() is not supported by capviz.", DRAWN),
    ("simulated_annealing", cv.DataReadError,
     "if f_new < f or random.random() < np.exp((f - f_new) / T):", "f_new < f", "anneal",
     "bool() is not supported by capviz.", DRAWN),
    ("newton_while", cv.DataReadError, "while np.max(np.abs(x * x - a)) > tol and it < max_iter:",
     "np.max(np.abs(x * x - a)) > tol", "newton_sqrt",
     "branches on the value of `np.max(np.abs(x * x - a)) > tol` (bool() of ",
     BRANCH.format(cond="np.max(np.abs(x * x - a)) > tol")),
    ("rule30_automaton", cv.DataReadError, "cells = RULE30[4 * left + 2 * cells + right]",
     "RULE30[4 * left + 2 * cells + right]", "automaton",
     "an ndarray indexed by the tensor `4 * left + 2 * cells + right` (np.asarray() of ",
     "Fix: record the array first: cv.constant(RULE30)[4 * left + 2 * cells + right] "
     "(outside a capture cv.constant returns the array itself)."),
    ("holt_smoothing", cv.UnsupportedOperationError,
     "self.level = self.alpha * y + (1 - self.alpha) * (self.level + self.trend)",
     "self.level = self.alpha * y + (1 - self.alpha) * (self.level + self.t...", "update",
     "self.level is rebound to a value of the capture.",
     "Fix: create self.level before the capture (in __init__, or by one eager call), so that "
     "the call writes it in place, which the capture records as a state."),
]


@pytest.mark.parametrize("name, error, line, code, func, what, fix", REFUSED,
                         ids=[row[0] for row in REFUSED])
@pytest.mark.usefixtures("two_passes")  # (its message: a first capture
#   whose guess does not stand; this program, guessed, replays as eager: EXACT)
def test_the_program_is_refused_at_its_line_with_the_fix(name, error, line, code, func, what,
                                                         fix):
    lines = refused_at(SIMULATIONS[name][0], error, __file__, line, code, func, what)
    if fix is not None:
        fix = fix.format(pos=line_of(__file__, "self.pos += dt * self.vel"),
                         energy=line_of(__file__, "return 0.5 * np.sum(self.mass * (self.vel "
                                                  "** 2).sum(-1))"))
        assert lines[-1].startswith(fix), lines[-1]


def test_a_break_captured_with_an_example_is_a_guard_that_refuses_another_iteration_count():
    """Power iteration captured with its first matrix (the branch's fix): another matrix needs
    another number of iterations, and the replay refuses it at the guard, never silent."""
    verdict = run(lambda: Program(power_iteration, [[A] for A, _ in _spd_calls()],
                                  examples=True))
    assert verdict.kind == "refused"
    assert type(verdict.error) is cv.GuardError
    line = line_of(__file__, "if abs(lam_new - lam) < tol:")
    assert str(verdict.error).startswith("these inputs take another branch than the capture's "
                                         "examples: guard ")
    assert f"recorded at {__file__}:{line} in power_iteration, read " in str(verdict.error)
