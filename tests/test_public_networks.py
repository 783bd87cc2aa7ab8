"""Census round 2 of public-code-style NumPy programs (issue #20, stop 36), part 3: network
code (an LSTM cell, a transformer block with a KV cache at a passed position and temperature
sampling, im2col convolution, masked attention, DQN with a target network and a replay buffer,
gradient accumulation, weight decay, streaming statistics, a module-level Generator). Written
as public NumPy code is, not for capviz; run and pinned as in tests/test_public_learning.py."""

import numpy as np
import pytest

import capviz as cv
from tests.helpers.public_census import Program, line_of, refusal, run
from tests.helpers.two_passes import two_passes  # noqa: F401 (the fixture)


def _x(*shape):
    """Three calls' arrays, the same for a shape whichever tests ran before."""
    rng = np.random.default_rng(3600)
    return [rng.standard_normal(shape) for _ in range(3)]


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


# --- 1. An LSTM cell over a sequence, gates split from one product, state carried ------------

class LSTM:
    def __init__(self, n_in=3, n_hidden=4):
        rng = np.random.default_rng(21)
        self.W = rng.standard_normal((n_in + n_hidden, 4 * n_hidden)) * 0.1
        self.b = np.zeros(4 * n_hidden)
        self.h = np.zeros(n_hidden)
        self.c = np.zeros(n_hidden)

    def forward(self, xs):
        outputs = []
        h, c = self.h, self.c
        for x in xs:
            z = np.concatenate([x, h]) @ self.W + self.b
            i, f, o, g = np.split(z, 4)
            c = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
            h = sigmoid(o) * np.tanh(c)
            outputs.append(h)
        self.h, self.c = h, c
        return np.stack(outputs)


def lstm_setup():
    m = LSTM()
    return Program(m.forward, [[x] for x in _x(4, 3)], lambda: {"h": m.h, "c": m.c})


# --- 2. A transformer decoder block: layernorm, GELU, a KV cache written at a passed position -

def layernorm(x, g, b, eps=1e-5):
    mean = x.mean(-1, keepdims=True)
    var = x.var(-1, keepdims=True)
    return g * (x - mean) / np.sqrt(var + eps) + b


def gelu(x):
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))


class DecoderBlock:
    def __init__(self, d=4, max_len=8):
        rng = np.random.default_rng(22)
        self.wq, self.wk, self.wv, self.wo = (rng.standard_normal((d, d)) * 0.3 for _ in range(4))
        self.w1 = rng.standard_normal((d, 2 * d)) * 0.3
        self.w2 = rng.standard_normal((2 * d, d)) * 0.3
        self.g, self.bn = np.ones(d), np.zeros(d)
        self.k_cache = np.zeros((max_len, d))
        self.v_cache = np.zeros((max_len, d))

    def __call__(self, x, pos):
        h = layernorm(x, self.g, self.bn)
        q, k, v = h @ self.wq, h @ self.wk, h @ self.wv
        self.k_cache[pos] = k
        self.v_cache[pos] = v
        scores = self.k_cache[:pos + 1] @ q / np.sqrt(len(q))
        att = np.exp(scores - scores.max())
        att /= att.sum()
        x = x + (att @ self.v_cache[:pos + 1]) @ self.wo
        return x + gelu(layernorm(x, self.g, self.bn) @ self.w1) @ self.w2


class Generator:
    def __init__(self):
        self.block = DecoderBlock()
        self.pos = 0

    def step(self, x):
        out = self.block(x, self.pos)
        self.pos += 1
        return out


def decoder_setup():
    m = Generator()
    return Program(m.step, [[x] for x in _x(4)],
                   lambda: {"k_cache": m.block.k_cache, "v_cache": m.block.v_cache})


# --- 3. Temperature sampling of the next token, the generator held by the module -------------

RNG = np.random.default_rng(7)


def sample_next(logits, temperature=0.8):
    z = logits / temperature
    p = np.exp(z - z.max())
    p /= p.sum()
    u = RNG.random()
    return np.searchsorted(np.cumsum(p), u), p


def sampling_setup():
    global RNG
    RNG = np.random.default_rng(7)  # (the same start for the eager and the captured runs)
    return Program(sample_next, [[x] for x in _x(6)], lambda: {"RNG": RNG})


# --- 4. Convolution by im2col with sliding_window_view ---------------------------------------

class Conv2D:
    def __init__(self, k=2, c_out=2):
        self.W = np.random.default_rng(23).standard_normal((c_out, k, k)) * 0.5
        self.b = np.zeros(c_out)
        self.k = k

    def forward(self, img):
        patches = np.lib.stride_tricks.sliding_window_view(img, (self.k, self.k))
        cols = patches.reshape(-1, self.k * self.k)
        out = cols @ self.W.reshape(len(self.W), -1).T + self.b
        side = img.shape[0] - self.k + 1
        return np.maximum(out.reshape(side, side, -1), 0)


def conv_setup():
    m = Conv2D()
    return Program(m.forward, [[x] for x in _x(4, 4)])


# --- 5. Causal self-attention masked with np.where and -inf -----------------------------------

def masked_attention(q, k, v):
    T = q.shape[0]
    scores = q @ k.T / np.sqrt(q.shape[1])
    mask = np.tril(np.ones((T, T), dtype=bool))
    scores = np.where(mask, scores, -np.inf)
    weights = np.exp(scores - scores.max(axis=1, keepdims=True))
    weights /= weights.sum(axis=1, keepdims=True)
    return weights @ v


def attention_setup():
    return Program(masked_attention, [[a, b, c] for a, b, c in zip(_x(3, 2), _x(3, 2), _x(3, 2))])


# --- 6. DQN: a replay buffer sampled with np.random.randint, a Polyak-averaged target --------

class DQN:
    def __init__(self, n_obs=3, n_actions=2, capacity=8, tau=0.1, lr=0.05, gamma=0.9):
        rng = np.random.default_rng(24)
        self.online = [rng.standard_normal((n_obs, n_actions)) * 0.1, np.zeros(n_actions)]
        self.target = [p.copy() for p in self.online]
        self.obs = rng.standard_normal((capacity, n_obs))
        self.next_obs = rng.standard_normal((capacity, n_obs))
        self.actions = rng.integers(0, n_actions, capacity)
        self.rewards = rng.standard_normal(capacity)
        self.tau, self.lr, self.gamma = tau, lr, gamma

    def train_step(self, noise):
        idx = np.random.randint(0, len(self.obs), size=4)
        o, a, r, o2 = self.obs[idx], self.actions[idx], self.rewards[idx], self.next_obs[idx]
        W, b = self.online
        q = o @ W + b
        q_next = (o2 @ self.target[0] + self.target[1]).max(axis=1)
        td = q[np.arange(len(idx)), a] - (r + self.gamma * q_next) + 0 * noise.sum()
        dq = np.zeros_like(q)
        dq[np.arange(len(idx)), a] = td / len(idx)
        W -= self.lr * o.T @ dq
        b -= self.lr * dq.sum(axis=0)
        for t, s in zip(self.target, self.online):
            t *= 1 - self.tau
            t += self.tau * s
        return 0.5 * np.mean(td ** 2)


def dqn_setup():
    m = DQN()
    return Program(m.train_step, [[x] for x in _x(2)],
                   lambda: {"W": m.online[0], "b": m.online[1], "tW": m.target[0],
                            "tb": m.target[1]})


# --- 7. Gradient accumulation: apply every k-th call ----------------------------------------

class Accumulating:
    def __init__(self, every=2, lr=0.1):
        self.w = np.zeros(3)
        self.grad_acc = np.zeros(3)
        self.step_count = 0
        self.every, self.lr = every, lr

    def step(self, x, y):
        err = x @ self.w - y
        self.grad_acc += x.T @ err / len(y)
        self.step_count += 1
        if self.step_count % self.every == 0:
            self.w -= self.lr * self.grad_acc
            self.grad_acc[:] = 0.0
        return np.mean(err ** 2)


def accumulating_setup():
    m = Accumulating()
    return Program(m.step, [[X, X @ np.array([1.0, -1.0, 2.0])] for X in _x(4, 3)],
                   lambda: {"w": m.w, "grad_acc": m.grad_acc})


# --- 8. SGD with decoupled weight decay written in place --------------------------------------

class DecayedSGD:
    def __init__(self, lr=0.1, weight_decay=0.01):
        self.params = [np.ones(3), np.ones((3, 2))]
        self.lr, self.weight_decay = lr, weight_decay

    def step(self, g0, g1):
        for p, g in zip(self.params, [g0, g1]):
            p *= 1 - self.lr * self.weight_decay
            p -= self.lr * g
        return sum(np.sum(p ** 2) for p in self.params)


def decay_setup():
    m = DecayedSGD()
    return Program(m.step, [[a, b] for a, b in zip(_x(3), _x(3, 2))],
                   lambda: {"p0": m.params[0], "p1": m.params[1]})


# --- 9. Streaming statistics with np.add(out=) and a Python count -----------------------------

class RunningStats:
    def __init__(self, dim=3):
        self.total = np.zeros(dim)
        self.total_sq = np.zeros(dim)
        self.count = 0

    def update(self, batch):
        np.add(self.total, batch.sum(axis=0), out=self.total)
        np.add(self.total_sq, (batch ** 2).sum(axis=0), out=self.total_sq)
        self.count += len(batch)
        mean = self.total / self.count
        return mean, self.total_sq / self.count - mean ** 2


def stats_setup():
    m = RunningStats()
    return Program(m.update, [[x] for x in _x(4, 3)],
                   lambda: {"total": m.total, "total_sq": m.total_sq})


# --- 10. Inverted dropout with a Generator held by the module ------------------------------------

DROP_RNG = np.random.default_rng(8)


def dropout_forward(x, W, p=0.5):
    h = np.maximum(0, x @ W)
    mask = (DROP_RNG.random(h.shape) < p) / p
    return h * mask


def dropout_setup():
    global DROP_RNG
    DROP_RNG = np.random.default_rng(8)
    W = np.random.default_rng(25).standard_normal((3, 4))
    return Program(lambda x: dropout_forward(x, W), [[x] for x in _x(2, 3)],
                   lambda: {"DROP_RNG": DROP_RNG})


NETWORKS = {
    "lstm_cell": (lstm_setup, "np.split gates; h, c locals carried; self.h, self.c = h, c"),
    "decoder_kv_cache_pos": (decoder_setup, "layernorm, GELU; self.k_cache[pos] = k; "
                                            "self.pos += 1"),
    "temperature_sampling": (sampling_setup, "module Generator RNG.random(); np.searchsorted("
                                             "np.cumsum(p), u)"),
    "conv_im2col": (conv_setup, "sliding_window_view; reshape(-1, k*k); W.reshape(...).T"),
    "masked_attention": (attention_setup, "np.tril(np.ones(bool)); np.where(mask, s, -np.inf)"),
    "dqn_target_polyak": (dqn_setup, "np.random.randint sample; dq[arange, a] = ...; t *= 1 - "
                                     "tau; t += tau * s"),
    "gradient_accumulation": (accumulating_setup, "self.step_count += 1; if count % k == 0: "
                                                  "apply"),
    "weight_decay_inplace": (decay_setup, "p *= 1 - lr * wd; p -= lr * g over a list"),
    "running_stats_out": (stats_setup, "np.add(self.total, ..., out=self.total); "
                                       "self.count += len(batch)"),
    "dropout_module_rng": (dropout_setup, "DROP_RNG.random(h.shape) < p (module Generator)"),
}


# --- what the census finds -------------------------------------------------------------------

EXACT = ["lstm_cell", "temperature_sampling", "conv_im2col", "masked_attention",
         "dropout_module_rng"]
# (refused by the two passes, whose second run found NumPy reading or writing a state; a
# first capture lifts the arrays its statements write and runs once: every read is the
# tensor's, recorded)
EXACT += ["weight_decay_inplace"]


@pytest.mark.parametrize("name", EXACT)
def test_the_program_replays_as_three_eager_calls_bit_for_bit(name):
    verdict = run(NETWORKS[name][0])
    assert verdict.kind == "exact", (verdict.detail, verdict.first_line)


def test_a_module_generator_is_a_state_drawn_anew_by_each_replay():
    names = [n.name for n in run(NETWORKS["dropout_module_rng"][0]).graph.state_nodes]
    assert names == ["DROP_RNG"]


COUNTER_FIX = ("Fix: pass it as an input (an argument of the captured function), or keep the "
               "counter in an ndarray written with a tensor (self.t += "
               "cv.constant(np.float64(1))).")

REFUSED = [
    ("decoder_kv_cache_pos", cv.UnsupportedOperationError, "self.pos += 1", "self.pos += 1",
     "step", "self.pos is a Python number that changes from call to call.", COUNTER_FIX),
    ("dqn_target_polyak", cv.DataReadError,
     "o, a, r, o2 = self.obs[idx], self.actions[idx], self.rewards[idx], self.next_obs[idx]",
     "self.obs[idx]", "train_step", "an ndarray indexed by the tensor `idx` (np.asarray() of ",
     "Fix: record the array first: cv.constant(self.obs)[idx] (outside a capture cv.constant "
     "returns the array itself)."),
    ("gradient_accumulation", cv.UnsupportedOperationError, "self.step_count += 1",
     "self.step_count += 1", "step",
     "self.step_count is a Python number that changes from call to call.", COUNTER_FIX),
    ("weight_decay_inplace", cv.UnsupportedOperationError,
     "p *= 1 - self.lr * self.weight_decay", "p *= 1 - self.lr * self.weight_decay", "step",
     "NumPy's own operators wrote the outside ndarray self.params[0], a write no state of the "
     "graph records.",
     "Fix: write line {line} (`p *= 1 - self.lr * self.weight_decay`) with a tensor, which the "
     "capture records as a state: `p *= cv.constant(np.float64(1 - self.lr * "
     "self.weight_decay))` (outside a capture cv.constant returns the value itself)."),
    ("running_stats_out", cv.UnsupportedOperationError, "self.count += len(batch)",
     "self.count += len(batch)", "update",
     "self.count is a Python number that changes from call to call.", COUNTER_FIX),
]


@pytest.mark.parametrize("name, error, line, code, func, what, fix", REFUSED,
                         ids=[row[0] for row in REFUSED])
@pytest.mark.usefixtures("two_passes")  # (its message: a first capture
#   whose guess does not stand; this program, guessed, replays as eager: EXACT)
def test_the_program_is_refused_at_its_line_with_the_fix(name, error, line, code, func, what,
                                                         fix):
    kind, lines = refusal(NETWORKS[name][0])
    number = line_of(__file__, line)
    assert kind is error
    assert lines[0].startswith(f"`{code}` at {__file__}:{number} in {func}: {what}"), lines[0]
    assert len(lines) <= 3 and lines[-1] == fix.format(line=number)


# --- the quoted fixes applied (the fix loop, each step's fix as the message words it) --------

class FixedDQN(DQN):
    """Three steps: cv.constant(buffer)[idx]; the reads of W and b (the second message); the
    target's NumPy writes, which the third message names with its generic template (`+= 1`,
    W=20t 04:41): `t *= cv.constant(...)`, `t += self.tau * cv.constant(s)`."""

    def train_step(self, noise):
        idx = np.random.randint(0, len(self.obs), size=4)
        o, a = cv.constant(self.obs)[idx], cv.constant(self.actions)[idx]
        r, o2 = cv.constant(self.rewards)[idx], cv.constant(self.next_obs)[idx]
        W, b = self.online
        q = o @ cv.constant(W) + cv.constant(b)
        q_next = (o2 @ self.target[0] + self.target[1]).max(axis=1)
        td = q[np.arange(len(idx)), a] - (r + self.gamma * q_next) + 0 * noise.sum()
        dq = np.zeros_like(q)
        dq[np.arange(len(idx)), a] = td / len(idx)
        W -= self.lr * o.T @ dq
        b -= self.lr * dq.sum(axis=0)
        for t, s in zip(self.target, self.online):
            t *= cv.constant(np.float64(1 - self.tau))
            t += self.tau * cv.constant(s)
        return 0.5 * np.mean(td ** 2)


class FixedDecayedSGD(DecayedSGD):
    def step(self, g0, g1):
        for p, g in zip(self.params, [g0, g1]):
            p *= cv.constant(np.float64(1 - self.lr * self.weight_decay))
            p -= self.lr * g
        return sum(np.sum(cv.constant(p) ** 2) for p in self.params)


class FixedRunningStats(RunningStats):
    """The count in an ndarray written with a tensor, then the reads the next message names."""

    def __init__(self):
        super().__init__()
        self.count = np.zeros(())

    def update(self, batch):
        np.add(cv.constant(self.total), batch.sum(axis=0), out=self.total)
        np.add(cv.constant(self.total_sq), (batch ** 2).sum(axis=0), out=self.total_sq)
        self.count += cv.constant(np.float64(len(batch)))
        mean = cv.constant(self.total) / cv.constant(self.count)
        return mean, cv.constant(self.total_sq) / cv.constant(self.count) - mean ** 2


def _fixed():
    def dqn():
        m = FixedDQN()
        return Program(m.train_step, [[x] for x in _x(2)],
                       lambda: {"W": m.online[0], "b": m.online[1], "tW": m.target[0],
                                "tb": m.target[1]})

    def decay():
        m = FixedDecayedSGD()
        return Program(m.step, [[a, b] for a, b in zip(_x(3), _x(3, 2))],
                       lambda: {"p0": m.params[0], "p1": m.params[1]})

    def stats():
        m = FixedRunningStats()
        return Program(m.update, [[x] for x in _x(4, 3)],
                       lambda: {"total": m.total, "total_sq": m.total_sq, "count": m.count})

    return {"dqn": dqn, "weight_decay": decay, "running_stats": stats}


FIXED = _fixed()


@pytest.mark.parametrize("name", FIXED)
def test_the_quoted_fixes_replay_as_eager(name):
    verdict = run(FIXED[name])
    assert verdict.kind == "exact", (verdict.detail, verdict.first_line)


class PassedPositionBlock(DecoderBlock):
    """The counter's fix (pos an input), then the cache's (cv.constant(self.k_cache)[pos] = k):
    the attention reads `[:pos + 1]`, a length of the data, which a capture with an example
    records as a guard; the next position is refused by it at the replay, never silent."""

    def __call__(self, x, pos):
        h = layernorm(x, self.g, self.bn)
        q, k, v = h @ self.wq, h @ self.wk, h @ self.wv
        k_cache, v_cache = cv.constant(self.k_cache), cv.constant(self.v_cache)
        k_cache[pos] = k
        v_cache[pos] = v
        scores = k_cache[:pos + 1] @ q / np.sqrt(len(q))
        att = np.exp(scores - scores.max())
        att /= att.sum()
        x = x + (att @ v_cache[:pos + 1]) @ self.wo
        return x + gelu(layernorm(x, self.g, self.bn) @ self.w1) @ self.w2


def test_a_cache_read_up_to_a_passed_position_is_a_guard_at_the_next_position():
    def setup():
        block = PassedPositionBlock()
        return Program(block, [[x, np.array(k)] for k, x in enumerate(_x(4))],
                       lambda: {"k_cache": block.k_cache, "v_cache": block.v_cache},
                       examples=True)

    verdict = run(setup)
    assert verdict.kind == "refused" and type(verdict.error) is cv.GuardError
    line = line_of(__file__, "scores = k_cache[:pos + 1] @ q / np.sqrt(len(q))")
    assert f"recorded at {__file__}:{line} in __call__, read 1 when captured and 2 now" in \
        str(verdict.error)
