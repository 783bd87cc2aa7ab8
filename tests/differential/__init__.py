"""The differential suite: every captured function, replayed on every engine, against eager NumPy.

A *case* is one program of the op table's examples (:mod:`helpers.op_examples`, which reaches
every op of :data:`capviz.ops.OPS`, plus :mod:`.forms`, the argument forms peers test) with its
data inputs in one of :data:`values.DTYPES`, filled by one value generator (normal values, or
special values: inf, NaN, -0.0, huge, tiny, subnormals), in its own shape or an edge shape
(empty, 0-d, size 1), and C-contiguous or not. The sampler is seeded (:func:`cases.sample`).

Each case runs eagerly on NumPy, is captured once, and is replayed on every backend; the result
is classified (:mod:`.classify`) by the rule of issue 25: exact, within the engine's declared
tolerance, refused by name (a capviz error), NumPy's own error where eager NumPy raises, or
else a raw error or a silent difference: the two classes that must stay empty.

``python -m tests.differential`` runs the CI profile, ``--thorough`` the 20,000-case one, and
prints the totals per backend and class (``--show CLASS`` lists the cases of a class).
"""
