"""Census round 2 (issue #20, stop 36), part 1's fix loops: the programs of
tests/test_public_learning.py with the fixes their refusals quote applied in turn, each
replaying as its three eager calls (or refused at a line, never silent)."""

import numpy as np
import pytest

import capviz as cv
from tests.helpers.public_census import Program, run
from tests.test_public_learning import (
    MLP,
    Hopfield,
    Oja,
    ToyGAN,
    Word2Vec,
    _mlp_calls,
    _mlp_states,
    _x,
    sigmoid,
)

# --- the quoted fixes applied (the fix loop, each step's fix as the message words it) --------

class FixedGAN(ToyGAN):
    def step(self, real):
        z = np.random.randn(len(real))
        fake = cv.constant(self.g)[0] * z + cv.constant(self.g)[1]
        d_real = sigmoid(cv.constant(self.d)[0] * real + cv.constant(self.d)[1])
        d_fake = sigmoid(cv.constant(self.d)[0] * fake + cv.constant(self.d)[1])
        grad_d = np.array([np.mean((1 - d_real) * real - d_fake * fake),
                           np.mean((1 - d_real) - d_fake)])
        self.d += self.lr * grad_d
        d_fake = sigmoid(cv.constant(self.d)[0] * fake + cv.constant(self.d)[1])
        dx = (1 - d_fake) * cv.constant(self.d)[0]
        grad_g = np.array([np.mean(dx * z), np.mean(dx)])
        self.g += self.lr * grad_g
        d_loss = -np.mean(np.log(d_real) + np.log(1 - d_fake))
        return d_loss, fake.mean()


class FixedHopfield(Hopfield):
    """cv.constant(self.W)[i], then the branch as np.where (the next refusal's fix)."""

    def recall(self, state):
        s = state.copy()
        for _ in range(2):
            for i in np.random.permutation(len(s)):
                s[i] = np.where(cv.constant(self.W)[i] @ s >= 0, 1.0, -1.0)
        return s


class FixedOja(Oja):
    """Two steps: the normalisation, then the reads of self.w the next message names."""

    def fit(self, X):
        for x in X:
            y = cv.constant(self.w) @ x
            self.w += self.lr * y * (x - y * cv.constant(self.w))
        self.w /= np.linalg.norm(cv.constant(self.w))
        return cv.constant(self.w).copy()


class FixedWord2Vec(Word2Vec):
    """np.random.choice(p=) as NumPy's legacy choice computes it (the message's fix does not
    apply to choice: W=20t, 04:06), then cv.constant(W)[index] (the next message's fix); the
    `[context]` list joined by np.concatenate is NumPy's array of it since stop 36."""

    def train_pairs(self, centers, contexts):
        loss = 0.0
        for center, context in zip(centers, contexts):
            cdf = self.noise.cumsum()
            cdf /= cdf[-1]
            negatives = np.searchsorted(cv.constant(cdf),
                                        np.random.random_sample(self.negative), side="right")
            v = cv.constant(self.W_in)[center]
            targets = np.concatenate([[context], negatives])
            labels = np.array([1.0] + [0.0] * self.negative)
            u = cv.constant(self.W_out)[targets]
            score = sigmoid(u @ v)
            g = (labels - score) * self.lr
            loss -= np.log(score[0] + 1e-10) + np.sum(np.log(1 - score[1:] + 1e-10))
            cv.constant(self.W_out)[targets] += np.outer(g, v)
            cv.constant(self.W_in)[center] += g @ u
        return loss


def _fixed_setups():
    def word2vec():
        m = FixedWord2Vec()
        pairs = np.random.default_rng(6).integers(0, 12, size=(3, 2, 4))
        return Program(m.train_pairs, [[p[0], p[1]] for p in pairs],
                       lambda: {"W_in": m.W_in, "W_out": m.W_out})

    def gan():
        m = FixedGAN()
        return Program(m.step, [[3.0 + 0.5 * x] for x in _x(8)], lambda: {"g": m.g, "d": m.d})

    def hopfield():
        net = FixedHopfield(np.sign(np.random.default_rng(12).standard_normal((2, 6))))
        return Program(net.recall, [[np.sign(x + 0.1)] for x in _x(6)], lambda: {"W": net.W})

    def oja():
        m = FixedOja()
        return Program(m.fit, [[x * np.array([3.0, 1.0, 0.5])] for x in _x(5, 3)],
                       lambda: {"w": m.w})

    return [word2vec, gan, hopfield, oja]


@pytest.mark.parametrize("setup", _fixed_setups(), ids=["word2vec", "gan", "hopfield", "oja"])
def test_the_quoted_fixes_replay_as_eager(setup):
    verdict = run(setup)
    assert verdict.kind == "exact", (verdict.detail, verdict.first_line)


class CountedMLP(MLP):
    """The counter's fix applied (an ndarray written with a tensor), the loop as written."""

    def __init__(self):
        super().__init__()
        self.t = np.zeros(())

    def train(self, X, y, epochs=4):
        for epoch in range(epochs):
            h, out = self.forward(X)
            err = out - y
            loss = np.mean(err ** 2)
            W2 = self.params[2]
            d_out = 2 * err / len(X)
            dW2 = h.T @ d_out
            db2 = d_out.sum(axis=0)
            dh = d_out @ W2.T
            dh[h <= 0] = 0
            dW1 = X.T @ dh
            db1 = dh.sum(axis=0)
            self.t += cv.constant(np.float64(1))
            lr = self.lr0 * 0.95 ** epoch
            for p, g, m, v in zip(self.params, [dW1, db1, dW2, db2], self.m, self.v):
                m[:] = 0.9 * m + 0.1 * g
                v[:] = 0.999 * v + 0.001 * g ** 2
                m_hat = m / (1 - 0.9 ** self.t)
                v_hat = v / (1 - 0.999 ** self.t)
                p -= lr * m_hat / (np.sqrt(v_hat) + 1e-8)
            self.history["loss"].append(loss)
            self.history["lr"].append(lr)
            if loss < self.best - 1e-4:
                self.best = loss
                self.bad_epochs = 0
            else:
                self.bad_epochs += 1
                if self.bad_epochs >= self.patience:
                    break
        return loss


def test_early_stopping_captured_with_examples_is_refused_at_a_line_never_silent():
    """The branch's fix (capture with an example) with the counter in an ndarray: the loop's
    `if loss < self.best` becomes a guard, and the Python float self.best it rebinds is
    refused (keep it a result)."""

    def setup():
        net = CountedMLP()
        return Program(net.train, _mlp_calls(), _mlp_states(net), examples=True)

    verdict = run(setup)
    assert verdict.kind == "refused", (verdict.kind, verdict.detail)
    assert type(verdict.error) is cv.UnsupportedOperationError
    assert f" at {__file__}:" in verdict.first_line
    assert "self.best is rebound to a value of the capture" in verdict.first_line
