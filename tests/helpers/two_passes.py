"""A first capture held to the two passes (capviz/trace/recapture.py) where it would lift the
arrays its statements write (capviz/trace/lifted.py, the first capture's guess) and run once:
for the tests of what the second capture refuses, which still decides every first capture whose
guess does not stand (an array held elsewhere, a write no statement names, a list the call
grows). The programs those tests refuse replay as eager in one pass
(tests/test_first_capture_guessed.py)."""

import pytest

from capviz.trace import lifted


@pytest.fixture
def two_passes(monkeypatch):
    """A first capture of a function with array states takes the two passes (its kept Python
    numbers are lifted as before, with the arrays named beside them)."""
    real = lifted.plan

    def plan(fn, places, floats=True):
        made = real(fn, places, floats)
        if made is not None and made.guessed and not lifted.has_numbers(made):
            return None
        return made

    monkeypatch.setattr(lifted, "plan", plan)
