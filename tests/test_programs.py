"""Whole NumPy programs, written the way public NumPy code is written (not for capviz), captured
unchanged and replayed: the result equals eager NumPy bit for bit, with the same dtype.

Each program uses the idioms found in teaching code and small model ports: dict-of-arrays
parameters, ``np.split``/``np.hstack`` heads, in-place gradient updates, ``out=``, ``np.linalg``,
``np.fft``, cumulative sums with ``searchsorted``. A failure here is the first thing a new user
would meet.
"""

import numpy as np
import pytest
from conftest import assert_bitwise

import capviz as cv

# --- a GPT-2 style forward, with a KV cache written in place ------------------------------------


def gelu(x):
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))


def softmax(x):
    exp_x = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return exp_x / np.sum(exp_x, axis=-1, keepdims=True)


def layer_norm(x, g, b, eps: float = 1e-5):
    mean = np.mean(x, axis=-1, keepdims=True)
    variance = np.var(x, axis=-1, keepdims=True)
    x = (x - mean) / np.sqrt(variance + eps)
    return g * x + b


def linear(x, w, b):
    return x @ w + b


def ffn(x, c_fc, c_proj):
    return linear(gelu(linear(x, **c_fc)), **c_proj)


def attention(q, k, v, mask):
    return softmax(q @ k.T / np.sqrt(q.shape[-1]) + mask) @ v


def mha(x, c_attn, c_proj, n_head):
    x = linear(x, **c_attn)
    qkv = np.split(x, 3, axis=-1)
    qkv_heads = list(map(lambda x: np.split(x, n_head, axis=-1), qkv))
    causal_mask = (1 - np.tri(x.shape[0], dtype=x.dtype)) * -1e10
    out_heads = [attention(q, k, v, causal_mask) for q, k, v in zip(*qkv_heads)]
    x = np.hstack(out_heads)
    return linear(x, **c_proj)


def transformer_block(x, mlp, attn, ln_1, ln_2, n_head):
    x = x + mha(layer_norm(x, **ln_1), **attn, n_head=n_head)
    x = x + ffn(layer_norm(x, **ln_2), **mlp)
    return x


def gpt2(inputs, wte, wpe, blocks, ln_f, n_head):
    x = wte[inputs] + wpe[range(len(inputs))]
    for block in blocks:
        x = transformer_block(x, **block, n_head=n_head)
    x = layer_norm(x, **ln_f)
    return x @ wte.T


def gpt_params(rng, n_vocab=50, n_ctx=16, d=16, n_layer=2):
    def w(*shape):
        return (rng.standard_normal(shape) * 0.1).astype(np.float32)

    def lin(i, o):
        return {"w": w(i, o), "b": w(o)}

    def ln():
        return {"g": np.ones(d, np.float32), "b": np.zeros(d, np.float32)}

    blocks = [{"mlp": {"c_fc": lin(d, 4 * d), "c_proj": lin(4 * d, d)},
               "attn": {"c_attn": lin(d, 3 * d), "c_proj": lin(d, d)},
               "ln_1": ln(), "ln_2": ln()} for _ in range(n_layer)]
    return {"wte": w(n_vocab, d), "wpe": w(n_ctx, d), "blocks": blocks, "ln_f": ln()}


def test_gpt2_forward_replays_bit_for_bit():
    params = gpt_params(np.random.default_rng(0))
    tokens = np.array([3, 14, 15, 9, 26, 5], dtype=np.int64)

    wte = params.pop("wte")

    def forward(inputs, wte):  # the embedding is an input: ndarray[tensor] has no NumPy hook
        return gpt2(inputs, wte, **params, n_head=2)

    graph = cv.capture(forward, cv.spec(tokens.shape, tokens.dtype), cv.spec(wte.shape, wte.dtype))
    replayed = graph.replay({"inputs": tokens, "wte": wte})["out"]
    assert_bitwise(replayed, forward(tokens, wte))


def test_ndarray_indexed_by_a_captured_tensor_is_refused_with_the_fix():
    table = np.arange(12.0).reshape(4, 3)

    with pytest.raises(cv.CaptureViolation) as caught:
        cv.capture(lambda idx: table[idx], cv.spec((2,), "int64"))
    message = str(caught.value)
    assert "`table[idx]`" in message and "an ndarray indexed by the tensor `idx`" in message
    fix = message.splitlines()[-1]
    assert fix.startswith("Fix: record the array first: cv.constant(table)[idx]")
    assert len(message.splitlines()) <= 3
    graph = cv.capture(lambda idx: cv.constant(table)[idx], cv.spec((2,), "int64"))  # the fix
    idx = np.array([3, 1])
    assert_bitwise(graph.replay({"idx": idx})["out"], table[idx])


def decode_with_kv_cache(x, wq, wk, wv, cache_k, cache_v):
    """Attention over a growing cache, written into preallocated buffers position by position."""
    outs = []
    for pos in range(x.shape[0]):
        q = x[pos] @ wq
        cache_k[pos] = x[pos] @ wk
        cache_v[pos] = x[pos] @ wv
        scores = cache_k[: pos + 1] @ q / np.sqrt(q.shape[-1])
        outs.append(softmax(scores) @ cache_v[: pos + 1])
    return np.stack(outs)


def test_kv_cache_written_in_place_replays_bit_for_bit():
    rng = np.random.default_rng(1)
    wq, wk, wv = (rng.standard_normal((8, 8)).astype(np.float32) for _ in range(3))
    x = rng.standard_normal((5, 8)).astype(np.float32)

    def forward(x):
        with cv.name_scope("cache"):
            cache_k = np.zeros_like(x)
            cache_v = np.zeros_like(x)
        return decode_with_kv_cache(x, wq, wk, wv, cache_k, cache_v)

    graph = cv.capture(forward, cv.spec(x.shape, x.dtype))
    eager = decode_with_kv_cache(x, wq, wk, wv, np.zeros_like(x), np.zeros_like(x))
    assert_bitwise(graph.replay({"x": x})["out"], eager)


# --- a char-RNN training step: forward, backward, AdaGrad with in-place updates ----------------


def rnn_step(inputs, targets, hprev, Wxh, Whh, Why, bh, by, mem, learning_rate=1e-1):
    xs, hs, ys, ps = {}, {}, {}, {}
    hs[-1] = np.copy(hprev)
    loss = 0
    vocab = Wxh.shape[1]
    for t in range(len(inputs)):
        xs[t] = np.zeros((vocab, 1), dtype=Wxh.dtype)
        xs[t][inputs[t]] = 1
        hs[t] = np.tanh(np.dot(Wxh, xs[t]) + np.dot(Whh, hs[t - 1]) + bh)
        ys[t] = np.dot(Why, hs[t]) + by
        ps[t] = np.exp(ys[t]) / np.sum(np.exp(ys[t]))
        loss += -np.log(ps[t][targets[t], 0])
    dWxh, dWhh, dWhy = np.zeros_like(Wxh), np.zeros_like(Whh), np.zeros_like(Why)
    dbh, dby = np.zeros_like(bh), np.zeros_like(by)
    dhnext = np.zeros_like(hs[0])
    for t in reversed(range(len(inputs))):
        dy = np.copy(ps[t])
        dy[targets[t]] -= 1
        dWhy += np.dot(dy, hs[t].T)
        dby += dy
        dh = np.dot(Why.T, dy) + dhnext
        dhraw = (1 - hs[t] * hs[t]) * dh
        dbh += dhraw
        dWxh += np.dot(dhraw, xs[t].T)
        dWhh += np.dot(dhraw, hs[t - 1].T)
        dhnext = np.dot(Whh.T, dhraw)
    for dparam in [dWxh, dWhh, dWhy, dbh, dby]:
        np.clip(dparam, -5, 5, out=dparam)
    params = [Wxh, Whh, Why, bh, by]
    grads = [dWxh, dWhh, dWhy, dbh, dby]
    for param, dparam, m in zip(params, grads, mem):
        m += dparam * dparam
        param += -learning_rate * dparam / np.sqrt(m + 1e-8)
    return loss, hs[len(inputs) - 1], params


def test_char_rnn_training_step_with_in_place_updates_replays_bit_for_bit():
    rng = np.random.default_rng(2)
    vocab, hidden = 6, 5
    shapes = [(hidden, vocab), (hidden, hidden), (vocab, hidden), (hidden, 1), (vocab, 1)]
    init = [(rng.standard_normal(s) * 0.01) for s in shapes]
    inputs, targets = [0, 3, 2, 5], [3, 2, 5, 1]

    def step(hprev, Wxh, Whh, Why, bh, by):
        mem = [np.zeros_like(p) for p in (Wxh, Whh, Why, bh, by)]
        loss, h, params = rnn_step(inputs, targets, hprev, Wxh, Whh, Why, bh, by, mem)
        return (loss, h, *params)

    h0 = np.zeros((hidden, 1))
    graph = cv.capture(step, cv.spec(h0.shape, h0.dtype),
                       *[cv.spec(p.shape, p.dtype) for p in init])
    replayed = graph.replay(dict(zip(graph.inputs, [h0, *[p.copy() for p in init]])))
    eager = step(h0.copy(), *[p.copy() for p in init])
    for name, value in zip(graph.outputs, eager):
        assert_bitwise(replayed[name], value)


# --- a Kalman filter, particle resampling, MFCC-style features ----------------------------------


def kalman_filter(zs, F, H, Q, R, x, P):
    estimates = []
    for z in zs:
        x = F @ x
        P = F @ P @ F.T + Q
        S = H @ P @ H.T + R
        K = P @ H.T @ np.linalg.inv(S)
        x = x + K @ (z - H @ x)
        P = (np.eye(P.shape[0]) - K @ H) @ P
        estimates.append(x.copy())
    return np.stack(estimates)


def test_kalman_filter_replays_bit_for_bit():
    dt = 0.1
    F = np.array([[1, dt], [0, 1]])
    H = np.array([[1.0, 0.0]])
    Q, R = np.eye(2) * 1e-3, np.array([[0.05]])
    zs = np.random.default_rng(3).standard_normal((6, 1))

    def run(zs):
        return kalman_filter(zs, F, H, Q, R, np.zeros(2), np.eye(2))

    graph = cv.capture(run, cv.spec(zs.shape, zs.dtype))
    assert_bitwise(graph.replay({"zs": zs})["out"], run(zs))


def test_np_array_of_captured_tensors_is_their_stack():
    def collect(x):
        return np.array([x * 2, x + 1])

    graph = cv.capture(collect, cv.spec((3,), "float64"))  # trace/conversions.py
    x = np.array([0.5, -1.0, 3.0])
    assert_bitwise(graph.replay({"x": x})["out"], collect(x))

    def collect_f(x):
        return np.array([x * 2, x + 1], order="F")  # NumPy's own conversion: refused

    with pytest.raises(cv.CaptureViolation, match="np.stack"):
        cv.capture(collect_f, cv.spec((3,), "float64"))


def systematic_resample(weights, u):
    n = len(weights)
    positions = (np.arange(n) + u) / n
    cumulative_sum = np.cumsum(weights)
    cumulative_sum[-1] = 1.0
    return np.searchsorted(cumulative_sum, positions)


def test_particle_resampling_replays_bit_for_bit():
    w = np.random.default_rng(4).random(10)
    w /= w.sum()
    graph = cv.capture(lambda weights: systematic_resample(weights, 0.37),
                       cv.spec(w.shape, w.dtype))
    assert_bitwise(graph.replay({"weights": w})["out"], systematic_resample(w, 0.37))


def mfcc_like(frames, filterbank, n_fft=32):
    windowed = frames * np.hamming(frames.shape[1])
    power = np.abs(np.fft.rfft(windowed, n=n_fft)) ** 2 / n_fft
    energies = np.dot(power, filterbank.T)
    energies = np.where(energies == 0, np.finfo(float).eps, energies)
    return np.log(energies)


def test_mfcc_style_features_replay_bit_for_bit():
    rng = np.random.default_rng(5)
    frames = rng.standard_normal((4, 32))
    filterbank = np.abs(rng.standard_normal((6, 17)))
    graph = cv.capture(lambda frames: mfcc_like(frames, filterbank),
                       cv.spec(frames.shape, frames.dtype))
    assert_bitwise(graph.replay({"frames": frames})["out"], mfcc_like(frames, filterbank))


@pytest.mark.parametrize("program", ["dropout"])
def test_global_generator_draw_is_refused_not_frozen(program):
    def dropout(x, p=0.5):
        mask = np.random.rand(*x.shape) < p
        return x * mask / p

    with pytest.raises(cv.CaptureViolation, match="np.random.rand"):
        cv.capture(dropout, cv.spec((4, 4), "float32"), global_random="violation")
    graph = cv.capture(dropout, cv.spec((4, 4), "float32"))  # the default: a draw, a state
    assert [n.name for n in graph.state_nodes] == ["np.random"]
