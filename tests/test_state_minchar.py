"""One training step of Karpathy's min-char-rnn (the gist's ``lossFun`` and its Adagrad update
over zipped lists), unchanged, captures whole and replays bit for bit against eager NumPy over
two calls: the outputs and all ten parameter and memory arrays, dtypes included.

Its backward pass reads ``Whh.T`` and ``Why.T`` (views of the outside arrays) before the update
``param += ...`` writes them: those reads are view states, read from the live arrays when a
replay starts (capviz/trace/state.py)."""

from __future__ import annotations

import numpy as np

import capviz as cv

# --- the program, as published (data: lists of ints) -----------------------------------------

hidden_size = 16
vocab_size = 10
seq_length = 5
learning_rate = 1e-1
rng = np.random.RandomState(0)
Wxh = rng.randn(hidden_size, vocab_size)*0.01 # input to hidden
Whh = rng.randn(hidden_size, hidden_size)*0.01 # hidden to hidden
Why = rng.randn(vocab_size, hidden_size)*0.01 # hidden to output
bh = np.zeros((hidden_size, 1)) # hidden bias
by = np.zeros((vocab_size, 1)) # output bias
mWxh, mWhh, mWhy = np.zeros_like(Wxh), np.zeros_like(Whh), np.zeros_like(Why)
mbh, mby = np.zeros_like(bh), np.zeros_like(by) # memory variables for Adagrad
inputs = [1, 2, 3, 4, 5]
targets = [2, 3, 4, 5, 6]


def lossFun(inputs, targets, hprev):
  xs, hs, ys, ps = {}, {}, {}, {}
  hs[-1] = np.copy(hprev)
  loss = 0
  # forward pass
  for t in range(len(inputs)):
    xs[t] = np.zeros((vocab_size,1)) # encode in 1-of-k representation
    xs[t][inputs[t]] = 1
    hs[t] = np.tanh(np.dot(Wxh, xs[t]) + np.dot(Whh, hs[t-1]) + bh) # hidden state
    ys[t] = np.dot(Why, hs[t]) + by # unnormalized log probabilities for next chars
    ps[t] = np.exp(ys[t]) / np.sum(np.exp(ys[t])) # probabilities for next chars
    loss += -np.log(ps[t][targets[t],0]) # softmax (cross-entropy loss)
  # backward pass: compute gradients going backwards
  dWxh, dWhh, dWhy = np.zeros_like(Wxh), np.zeros_like(Whh), np.zeros_like(Why)
  dbh, dby = np.zeros_like(bh), np.zeros_like(by)
  dhnext = np.zeros_like(hs[0])
  for t in reversed(range(len(inputs))):
    dy = np.copy(ps[t])
    dy[targets[t]] -= 1 # backprop into y.
    dWhy += np.dot(dy, hs[t].T)
    dby += dy
    dh = np.dot(Why.T, dy) + dhnext # backprop into h
    dhraw = (1 - hs[t] * hs[t]) * dh # backprop through tanh nonlinearity
    dbh += dhraw
    dWxh += np.dot(dhraw, xs[t].T)
    dWhh += np.dot(dhraw, hs[t-1].T)
    dhnext = np.dot(Whh.T, dhraw)
  for dparam in [dWxh, dWhh, dWhy, dbh, dby]:
    np.clip(dparam, -5, 5, out=dparam) # clip to mitigate exploding gradients
  return loss, dWxh, dWhh, dWhy, dbh, dby, hs[len(inputs)-1]


def step(hprev):
  loss, dWxh, dWhh, dWhy, dbh, dby, hprev = lossFun(inputs, targets, hprev)
  # perform parameter update with Adagrad
  for param, dparam, mem in zip([Wxh, Whh, Why, bh, by],
                                [dWxh, dWhh, dWhy, dbh, dby],
                                [mWxh, mWhh, mWhy, mbh, mby]):
    mem += dparam * dparam
    param += -learning_rate * dparam / np.sqrt(mem + 1e-8) # adagrad update
  return loss, hprev


# --- the test ----------------------------------------------------------------------------------

NAMES = ("Wxh", "Whh", "Why", "bh", "by", "mWxh", "mWhh", "mWhy", "mbh", "mby")


def _arrays():
    return [globals()[name] for name in NAMES]


def _same(a, b):
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape, (a.dtype, b.dtype, a.shape, b.shape)
    assert np.array_equal(a, b)


def test_min_char_rnn_step_captures_whole_and_replays_two_calls_bit_for_bit():
    start = [a.copy() for a in _arrays()]
    graph = cv.capture(step, cv.spec((hidden_size, 1), "float64"))
    assert graph.complete and not graph.violations
    for live, first in zip(_arrays(), start):  # the capture changed nothing outside
        _same(live, first)
    assert sorted(n.name for n in graph.state_nodes if "of" not in n.params) == sorted(NAMES)
    views = {n.name for n in graph.state_nodes if "of" in n.params}
    assert views == {"Whh.T", "Why.T"}  # read before the update wrote them
    assert "state Whh.T : float64[16,16], a view of %" in str(graph)
    graph.verify()

    h0 = np.zeros((hidden_size, 1))
    replayed, h = [], h0
    for _ in range(2):
        result = graph.replay({graph.inputs[0]: h})
        replayed.append([result[name] for name in graph.outputs])
        h = replayed[-1][1]
    after_replays = [a.copy() for a in _arrays()]

    for live, first in zip(_arrays(), start):
        live[...] = first
    eager, h = [], h0
    for _ in range(2):
        loss, h = step(h)
        eager.append([loss, h])
    for replay_value, eager_value in zip(after_replays, _arrays()):
        _same(replay_value, eager_value)
    for got, want in zip(replayed, eager):
        for a, b in zip(got, want):
            _same(a, b)
    assert any(not np.array_equal(a, b) for a, b in zip(after_replays, start))


def test_min_char_rnn_step_replays_from_a_saved_graph_with_the_arrays_given(tmp_path):
    graph = cv.capture(step, cv.spec((hidden_size, 1), "float64"))
    graph.save(str(tmp_path / "minchar.json"))
    loaded = cv.load(str(tmp_path / "minchar.json"))
    loaded.verify()
    given = {name: globals()[name].copy() for name in NAMES}
    h0 = np.full((hidden_size, 1), 0.5)
    result = loaded.replay({loaded.inputs[0]: h0}, states=given)
    expected = graph.replay({graph.inputs[0]: h0}, state="return")
    assert sorted(result.states) == sorted(NAMES)
    for name in NAMES:
        _same(given[name], expected.states[name])
    _same(result[loaded.outputs[0]], expected[graph.outputs[0]])
