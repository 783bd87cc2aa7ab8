"""Running a graph: its schedule and memory plan, the compiled step table, the input checks,
the replay entry points and the stepping executor."""
