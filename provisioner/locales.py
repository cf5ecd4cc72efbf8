"""Locale tags of a blueprint's translations (`i18n:`), checked as BCP 47 with langcodes.

Open WebUI 0.12 reads `meta.i18n` by the user's interface language, letter for letter: it tries
the language the user picked (`de-DE`), then its first subtag (`de`), then the default text
(`src/lib/utils/localizedContent.ts`, getLocaleCandidates). A tag written `de-ch` or `de_CH`
would never match, so a tag must be valid and written in its standard form.

Layer: source.
"""

from __future__ import annotations

import langcodes


def locale_problem(tag: str) -> str | None:
    """Why `tag` cannot key a translation, or None when it is a standard BCP 47 tag."""
    if not tag or not langcodes.tag_is_valid(tag):
        return (
            f"{tag!r} is not a BCP 47 language tag; write a language code such as de, fr, it, "
            "or one with its region, such as de-CH or pt-BR"
        )
    standard = langcodes.standardize_tag(tag)
    if standard != tag:
        return (
            f"write {standard!r}: Open WebUI matches the user's language to this tag letter for letter, "
            f"so {tag!r} would never be shown"
        )
    return None
