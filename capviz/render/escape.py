"""Visible escapes for text that reaches a picture: names, scopes, messages, file names.

A control character (an ANSI escape, a bell, a NUL), a lone surrogate (a file name that is not
valid UTF-8, decoded with ``surrogateescape``) or a line/paragraph separator would either be
invisible, break the XML of an SVG, or make the text impossible to encode at all. Each one is
written as its Python escape instead (``\\x1b``, ``\\udce9``, ``\\u2028``), so the label shows
exactly which character was there. Newlines are kept: labels break lines on them.
"""

from __future__ import annotations

import re

_UNPRINTABLE = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\ud800-\udfff\u2028\u2029]")


def _escape(match: re.Match[str]) -> str:
    return match.group().encode("unicode_escape", "backslashreplace").decode("ascii")


def printable(text: str) -> str:
    """``text`` with every control character, lone surrogate and line separator but ``\\n``
    replaced by its visible Python escape."""
    return _UNPRINTABLE.sub(_escape, text)


_SURROGATE = re.compile("[\ud800-\udfff]")


def _json_escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def json_surrogates(text: str) -> str:
    """JSON text with each lone surrogate written as its ``\\uXXXX`` escape: the text can then
    be encoded as UTF-8, and a JSON parser reads back the same string."""
    return _SURROGATE.sub(_json_escape, text)
