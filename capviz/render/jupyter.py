"""Jupyter display: ``CapturedGraph._repr_mimebundle_`` (SVG plus the text listing)."""

from __future__ import annotations

from typing import Any

from capviz.errors import RenderError
from capviz.ir import CapturedGraph


def mimebundle(graph: CapturedGraph, include: Any = None, exclude: Any = None) -> dict[str, str]:
    """``{"image/svg+xml": ..., "text/plain": ...}``, honouring ``include``/``exclude``."""
    from capviz.render.svg import to_svg

    wanted = {"image/svg+xml", "text/plain"}
    if include:
        wanted &= set(include)
    if exclude:
        wanted -= set(exclude)
    bundle: dict[str, str] = {}
    if "text/plain" in wanted:
        bundle["text/plain"] = str(graph)
    if "image/svg+xml" in wanted:
        try:
            bundle["image/svg+xml"] = to_svg(graph)
        except RenderError as err:
            bundle["text/plain"] = f"{bundle.get('text/plain', repr(graph))}\n(no SVG: {err})"
    return bundle
