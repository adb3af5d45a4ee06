"""Which language to speak: --lang, then TORCHDOCTOR_LANG, then the locale."""

from __future__ import annotations

import locale
import os

LANGS = ("en", "zh")


def default_lang() -> str:
    explicit = os.environ.get("TORCHDOCTOR_LANG", "").strip().lower()
    if explicit in LANGS:
        return explicit
    for variable in ("LC_ALL", "LC_MESSAGES", "LANG", "LANGUAGE"):
        value = os.environ.get(variable, "")
        if value:
            return "zh" if value.lower().startswith("zh") else "en"
    # Windows sets no LANG; its locale name reads e.g. "Chinese (Simplified)_China".
    name = (locale.getlocale()[0] or "").lower()
    return "zh" if name.startswith(("zh", "chinese")) else "en"
