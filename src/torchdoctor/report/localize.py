"""Findings in the language the user asked for, from what their text is made of.

A finding the catalog wrote keeps its (variant, fields) and its fix's titles in every language,
so the same findings (from the cache, say) can be shown in English or Chinese: the text is
formatted again here, when it is shown, rather than fixed when the check ran."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Iterable

from torchdoctor.report.finding import Finding


def localize(findings: Iterable[Finding], lang: str) -> None:
    """Write each finding's message and fix title in `lang`, in place; a finding with no
    template (not made by a catalog entry) is left as it is."""
    if lang == "en":
        return  # every finding is made in English (with its fix's title): nothing to rewrite
    from torchdoctor.catalog import _registry
    from torchdoctor.catalog._model import pick

    for finding in findings:
        pitfall = _registry.get(finding.code) if finding.template is not None else None
        if pitfall is not None and finding.template is not None:
            variant, fields = finding.template
            finding.message = pitfall.message(variant, lang, **fields)
        if finding.fix is not None and finding.fix.titles:
            finding.fix = replace(finding.fix, title=pick(finding.fix.titles, lang))


def portable(finding: Finding) -> bool:
    """True when the finding's text can be written again in any language after a round trip
    through JSON: it has a template, and its fields are plain values that JSON gives back as
    they were. Without one, the text stays in the language it was made in."""
    if finding.template is None:
        return False
    try:
        fields = finding.template[1]
        return json.loads(json.dumps(fields)) == fields and all(
            type(value) in (str, int, float, bool, type(None), dict) for value in fields.values()
        )
    except (TypeError, ValueError):
        return False
