"""Characters a reader cannot see: refused in names, shown escaped everywhere else. Pure.

A NUL, an ANSI escape or a right-to-left override (U+202E) in a name or description can make a
plan in a CI log read differently from what it does. Names and ids must not hold them at all;
any other text provision prints (plan values, ids read from the instance, file names, error
details) shows each one as `\\uXXXX`, the way JSON would.

Layer: vocabulary.
"""

from __future__ import annotations

import unicodedata

# Control (Cc), format (Cf: bidi overrides and isolates, zero-width characters), surrogates,
# and the line and paragraph separators, which some terminals treat as line breaks.
_HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})


def is_hidden(char: str) -> bool:
    """True for a character that is invisible or changes how the text around it is shown."""
    return unicodedata.category(char) in _HIDDEN_CATEGORIES


def describe(char: str) -> str:
    """`U+202E (RIGHT-TO-LEFT OVERRIDE)`; control characters have no name, only the code."""
    name = unicodedata.name(char, "")
    return f"U+{ord(char):04X}" + (f" ({name})" if name else "")


def first_hidden(text: str) -> str | None:
    return next((c for c in text if is_hidden(c)), None)


def visible(text: str, keep: str = "") -> str:
    """`text` with every hidden character (except those in `keep`) written as an escape."""
    if not any(is_hidden(c) for c in text):
        return text
    return "".join(_escape(c) if is_hidden(c) and c not in keep else c for c in text)


def _escape(char: str) -> str:
    code = ord(char)
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def counted(count: int, noun: str) -> str:
    """'1 blueprint', '4 blueprints': a count with its noun in the right number (English plurals in -s)."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"
