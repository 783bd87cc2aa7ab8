"""The data model: the exception tree, the graph's nodes and data, the user's source lines,
constants' memory layouts, violation messages and value statistics. Imports nothing of capviz
above it."""
