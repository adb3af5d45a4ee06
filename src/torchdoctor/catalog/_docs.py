"""A pitfall's explanation as text, JSON or Markdown: one text feeds CLI, explainer and docs."""

from __future__ import annotations

from torchdoctor.catalog._model import SECTION_TITLES_ZH, Pitfall, pick

_LABELS = {
    "en": {
        "default": "Default",
        "on": "on",
        "off": "off (opt-in)",
        "detectors": "Detectors",
        "fix": "Fix",
        "none": "none",
    },
    "zh": {
        "default": "默认",
        "on": "开启",
        "off": "关闭（需手动启用）",
        "detectors": "检测方式",
        "fix": "自动修复",
        "none": "无",
    },
}


def heading(section: str, lang: str) -> str:
    return SECTION_TITLES_ZH.get(section, section) if lang == "zh" else section


def as_json(pitfall: Pitfall, lang: str) -> dict:
    return {
        "code": pitfall.code,
        "name": pitfall.name,
        "title": pick(pitfall.title, lang),
        "area": pitfall.area,
        "default": pitfall.default,
        "detectors": pitfall.detector_kinds(),
        "fix": pitfall.fix_applicability,
        "lang": lang,
        "sections": pitfall.sections(lang),
    }


def as_text(pitfall: Pitfall, lang: str) -> str:
    labels = _LABELS.get(lang, _LABELS["en"])
    lines = [
        f"{pitfall.code} {pitfall.name}",
        pick(pitfall.title, lang),
        "",
        f"{labels['default']}: {labels['on'] if pitfall.default else labels['off']} | "
        f"{labels['detectors']}: {', '.join(pitfall.detector_kinds()) or labels['none']} | "
        f"{labels['fix']}: {pitfall.fix_applicability or labels['none']}",
    ]
    for section, body in pitfall.sections(lang).items():
        lines += ["", heading(section, lang), "-" * 20, body]
    return "\n".join(lines) + "\n"


def as_markdown(pitfall: Pitfall, lang: str) -> str:
    lines = [f"## {pitfall.code} `{pitfall.name}`", "", f"**{pick(pitfall.title, lang)}**", ""]
    labels = _LABELS.get(lang, _LABELS["en"])
    lines.append(
        f"{labels['default']}: {labels['on'] if pitfall.default else labels['off']} · "
        f"{labels['fix']}: {pitfall.fix_applicability or labels['none']}"
    )
    for section, body in pitfall.sections(lang).items():
        lines += ["", f"### {heading(section, lang)}", "", body]
    return "\n".join(lines) + "\n"


def reference_markdown(pitfalls, lang: str) -> str:
    """The whole catalog as one Markdown page (docs/rules.md is this, in English)."""
    header = (
        "# Rules\n\nGenerated from the catalog by "
        "`python -m torchdoctor rules --format markdown --lang en > docs/rules.md`.\n"
        "Chinese: `torchdoctor rule NAME --lang zh`.\n\n"
    )
    return header + "\n".join(as_markdown(p, lang) for p in pitfalls)
