"""Small built-in models in plain NumPy, used by ``capviz demo``, the docs and the tests."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from capviz.capture import name_scope, spec
from capviz.capture_fn import capture


def mlp_weights(sizes: tuple[int, ...] = (8, 16, 16, 4), seed: int = 0) -> list[tuple]:
    """Weights ``[(w, b), ...]`` of an MLP (float32 ndarrays)."""
    gen = np.random.default_rng(seed)
    return [((gen.standard_normal((a, b)) / np.sqrt(a)).astype(np.float32),
             np.zeros(b, np.float32)) for a, b in itertools.pairwise(sizes)]


def mlp(x: Any, weights: list[tuple]) -> Any:
    """An MLP: ``tanh(x @ w + b)`` per hidden layer, softmax at the end."""
    for i, (w, b) in enumerate(weights):
        with name_scope(f"layer{i}"):
            x = x @ w + b
            if i + 1 < len(weights):
                x = np.tanh(x)
    with name_scope("softmax"):
        e = np.exp(x - np.max(x, axis=-1, keepdims=True))
        return e / np.sum(e, axis=-1, keepdims=True)


def capture_mlp(weights: list[tuple], batch: int = 4) -> Any:
    """The graph of :func:`mlp` on a ``float32[batch, width]`` input named ``x``, captured
    here, so its input is declared at a line of this file (``capviz demo``)."""
    width = weights[0][0].shape[0]
    return capture(lambda x: mlp(x, weights), spec((batch, width), "float32"))


def transformer_weights(d: int = 16, heads: int = 2, seed: int = 0) -> dict[str, Any]:
    """Weights of :func:`transformer_block` (float32 ndarrays)."""
    gen = np.random.default_rng(seed)

    def w(*shape: int) -> np.ndarray:
        return (gen.standard_normal(shape) / np.sqrt(shape[0])).astype(np.float32)

    return {"heads": heads, "g1": np.ones(d, np.float32), "b1": np.zeros(d, np.float32),
            "wqkv": w(d, 3 * d), "wo": w(d, d), "g2": np.ones(d, np.float32),
            "b2": np.zeros(d, np.float32), "w1": w(d, 4 * d), "w2": w(4 * d, d)}


def layer_norm(x: Any, g: Any, b: Any, eps: float = 1e-5) -> Any:
    mu = np.mean(x, axis=-1, keepdims=True)
    var = np.var(x, axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * g + b


def gelu(x: Any) -> Any:
    return 0.5 * x * (1.0 + np.tanh(0.7978845608 * (x + 0.044715 * x ** 3)))


def softmax(x: Any) -> Any:
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True)


def transformer_block(x: Any, p: dict[str, Any]) -> Any:
    """A pre-norm transformer block over ``x`` of shape ``(seq, d)``, in plain NumPy: layer norm,
    causal attention (mask from ``np.tri``), heads by ``np.split`` joined by ``np.hstack``,
    a GELU MLP."""
    seq, d = x.shape
    heads = p["heads"]
    with name_scope("attention"):
        h = layer_norm(x, p["g1"], p["b1"])
        q, k, v = np.split(h @ p["wqkv"], 3, axis=-1)
        mask = np.tri(seq, dtype=bool)
        outs = []
        for qh, kh, vh in zip(np.split(q, heads, axis=-1), np.split(k, heads, axis=-1),
                              np.split(v, heads, axis=-1)):
            scores = qh @ kh.T / np.sqrt(np.float32(d // heads))
            scores = np.where(mask, scores, np.float32(-1e9))
            outs.append(softmax(scores) @ vh)
        x = x + np.hstack(outs) @ p["wo"]
    with name_scope("mlp"):
        h = layer_norm(x, p["g2"], p["b2"])
        x = x + gelu(h @ p["w1"]) @ p["w2"]
    return x
