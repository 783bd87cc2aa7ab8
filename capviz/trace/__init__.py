"""The :class:`~capviz.trace.tensor.Tensor` and its two traces: eager (ops run at once on a
backend) and recording (ops appended to a graph), with the machinery of a recording: writes
and views functionalized, scopes, constant names and call sites."""
