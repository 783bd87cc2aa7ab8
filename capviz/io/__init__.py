"""A graph's other forms: the listing, the structural check, JSON of static values, the
networkx view and the saved files (JSON + npz, never pickled)."""
