"""Every census program (stop 35's 43 and round 2's 46) captured LATER: called once eagerly,
then captured (the lifted path, which a first capture does not take) and replayed over the
three calls, against the same four eager calls (tests/helpers/public_census.py, warm=True).
Exact or refused at a line, never silent. Found silent this way (stop 36, 05:12): the
train-then-validate step of tests/test_public_learning.py (a mode flag on a sub-object, a state
rebound in its train branch and read in its eval branch), a regression of 5234dae (W=20L),
SILENT cold too in its minimal form below."""

import numpy as np
import pytest

import capviz as cv
from tests.helpers.public_census import Program, run
from tests.test_public_learning import LEARNING
from tests.test_public_models import MODELS
from tests.test_public_networks import NETWORKS
from tests.test_public_signals import SIGNALS
from tests.test_public_simulations import SIMULATIONS
from tests.test_public_training import TRAINING

ALL = {**MODELS, **TRAINING, **LEARNING, **SIMULATIONS, **NETWORKS, **SIGNALS}


@pytest.mark.parametrize("name", list(ALL))
def test_a_later_capture_replays_as_eager_or_is_refused(name):
    verdict = run(ALL[name][0], warm=True)
    assert verdict.kind in ("exact", "refused"), (verdict.kind, verdict.detail)
    if verdict.kind == "refused":
        assert isinstance(verdict.error, cv.CapvizError)


class Layer:
    def __init__(self):
        self.W = np.zeros(3)
        self.training = False

    def __call__(self, x):
        if self.training:
            self.W = 0.9 * self.W + 0.1 * x.mean(0)
            return x * 1.0
        return x - self.W


class TrainThenValidate:
    def __init__(self):
        self.layer = Layer()

    def step(self, x):
        self.layer.training = True
        a = self.layer(x)
        self.layer.training = False
        return a, self.layer(x)


@pytest.mark.parametrize("warm", [False, True])
def test_a_state_rebound_in_a_train_branch_and_read_in_the_eval_branch(warm):
    def setup():
        model = TrainThenValidate()
        return Program(model.step,
                       [[np.random.default_rng(k).standard_normal((5, 3))] for k in range(3)],
                       lambda: {"W": model.layer.W})

    verdict = run(setup, warm=warm)
    assert verdict.kind in ("exact", "refused"), (verdict.kind, verdict.detail)
