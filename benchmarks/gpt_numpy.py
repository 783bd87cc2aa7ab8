"""A GPT-2-style forward pass in plain NumPy, with no capviz in it (no name scopes): the model the
view's benchmark and browser tests capture unchanged. About 78 ops per block at these sizes."""

import numpy as np

D, HEADS, T, VOCAB = 32, 4, 8, 50


def init_params(n_layer, seed=0):
    rng = np.random.default_rng(seed)

    def w(*shape):
        return (rng.standard_normal(shape) * 0.02).astype(np.float32)

    blocks = [{"ln1": np.ones(D, np.float32), "ln2": np.ones(D, np.float32),
               "attn": {"c_attn": w(D, 3 * D), "c_proj": w(D, D)},
               "mlp": {"c_fc": w(D, 4 * D), "c_proj": w(4 * D, D)}} for _ in range(n_layer)]
    return {"wte": w(VOCAB, D), "blocks": blocks}


def layer_norm(x, g):
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + np.float32(1e-5)) * g


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def attention(q, k, v):
    return softmax(q @ k.T / np.float32(np.sqrt(q.shape[-1]))) @ v


def mha(x, p):
    q, k, v = np.split(x @ p["c_attn"], 3, axis=-1)
    heads = [attention(q[:, i::HEADS], k[:, i::HEADS], v[:, i::HEADS]) for i in range(HEADS)]
    return np.hstack(heads) @ p["c_proj"]


def mlp(x, p):
    return np.maximum(x @ p["c_fc"], 0) @ p["c_proj"]


def transformer_block(x, p):
    x = x + mha(layer_norm(x, p["ln1"]), p["attn"])
    return x + mlp(layer_norm(x, p["ln2"]), p["mlp"])


def gpt(x, params):
    for p in params["blocks"]:
        x = transformer_block(x, p)
    return x @ params["wte"].T
