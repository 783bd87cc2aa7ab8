"""Drawing graphs: DOT (:mod:`.dot`), SVG (:mod:`.svg`), Jupyter (:mod:`.jupyter`), live view
(:mod:`.live`). This layer reads graphs; it never drives a capture."""
