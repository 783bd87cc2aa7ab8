"""A GPT-2 forward pass in the plain-NumPy style of picoGPT's ``gpt2.py`` (jaymody/picoGPT),
with no capviz in it: ``benchmarks/peers_gpt.py`` captures it unchanged with capviz and, for the
peer, runs a second copy of this module whose ``np`` is ``jax.numpy`` (:func:`with_numpy`).

The benchmark starts from the embedded tokens (:func:`gpt2_embedded`, the whole forward after
picoGPT's first line): ``wte[inputs]`` of an ndarray ``wte`` by a captured tensor is a NumPy
conversion of the tensor that NumPy offers no hook for (capviz refuses it and names the fix,
``cv.constant(wte)[inputs]``), and jax.numpy traces it as a gather; both sides get the same
``x = wte[ids] + wpe[range(T)]``.

Two scalars changed from picoGPT: ``(2 / np.pi) ** 0.5`` in ``gelu`` and ``q.shape[-1] ** 0.5``
in ``attention`` are Python floats where picoGPT writes ``np.sqrt(2 / np.pi)`` and
``np.sqrt(q.shape[-1])``. Under NumPy 2 those are ``np.float64`` scalars, which promote float32
activations, and so the whole forward from the first block on, to float64 (NEP 50), while
``jax.numpy`` keeps float32: the two sides would not compute the same thing. Setting
``PICOGPT_SCALARS`` (``with_numpy(..., picogpt_scalars=True)``, ``--picogpt-scalars``) keeps
picoGPT's lines, to measure that difference.
"""

import importlib.util
import sys

import numpy as np

PICOGPT_SCALARS = False


def gelu(x):
    root = np.sqrt(2 / np.pi) if PICOGPT_SCALARS else (2 / np.pi) ** 0.5
    return 0.5 * x * (1 + np.tanh(root * (x + 0.044715 * x**3)))


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
    a = gelu(linear(x, **c_fc))
    return linear(a, **c_proj)


def attention(q, k, v, mask):
    scale = np.sqrt(q.shape[-1]) if PICOGPT_SCALARS else q.shape[-1] ** 0.5
    return softmax(q @ k.T / scale + mask) @ v


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
    return x + ffn(layer_norm(x, **ln_2), **mlp)


def gpt2(inputs, wte, wpe, blocks, ln_f, n_head):
    x = wte[inputs] + wpe[range(len(inputs))]
    return gpt2_embedded(x, wte, blocks, ln_f, n_head)


def gpt2_embedded(x, wte, blocks, ln_f, n_head):
    for block in blocks:
        x = transformer_block(x, **block, n_head=n_head)
    x = layer_norm(x, **ln_f)
    return x @ wte.T


def init_params(n_layer=12, n_embd=768, n_vocab=50257, n_ctx=1024, seed=0, bias_scale=0.0):
    """Random float32 weights of GPT-2's shapes (``n_layer=12, n_embd=768``: GPT-2 small); every
    bias (the dense layers' and the layer norms') ``bias_scale * N(0, 1)``, zeros by default."""
    rng = np.random.default_rng(seed)
    biases = np.random.default_rng(seed + 1)

    def bias(n):
        if not bias_scale:
            return np.zeros(n, np.float32)
        return (biases.standard_normal(n, np.float32) * np.float32(bias_scale))

    def w(*shape):
        return (rng.standard_normal(shape, np.float32) * np.float32(0.02))

    def ln():
        return {"g": np.ones(n_embd, np.float32), "b": bias(n_embd)}

    def dense(n_in, n_out):
        return {"w": w(n_in, n_out), "b": bias(n_out)}

    blocks = [{"mlp": {"c_fc": dense(n_embd, 4 * n_embd), "c_proj": dense(4 * n_embd, n_embd)},
               "attn": {"c_attn": dense(n_embd, 3 * n_embd), "c_proj": dense(n_embd, n_embd)},
               "ln_1": ln(), "ln_2": ln()} for _ in range(n_layer)]
    return {"wte": w(n_vocab, n_embd), "wpe": w(n_ctx, n_embd), "blocks": blocks, "ln_f": ln()}


def with_numpy(namespace, picogpt_scalars=False):
    """A fresh copy of this module whose ``np`` is ``namespace`` (``jax.numpy`` for the peer)."""
    spec = importlib.util.spec_from_file_location(f"gpt2_pico_{id(namespace)}", __file__)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.np = namespace
    module.PICOGPT_SCALARS = picogpt_scalars
    sys.modules.setdefault(spec.name, module)
    return module
