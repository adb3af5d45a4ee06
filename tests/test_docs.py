"""The docs that are generated from the catalog are up to date."""

from pathlib import Path

from torchdoctor.catalog import _docs, all_pitfalls

ROOT = Path(__file__).resolve().parent.parent


def test_rules_reference_is_current():
    current = (ROOT / "docs" / "rules.md").read_text(encoding="utf-8")
    assert current == _docs.reference_markdown(all_pitfalls(), "en"), (
        "docs/rules.md is stale: python -m torchdoctor rules --format markdown --lang en > docs/rules.md"
    )


def test_readme_quick_start_has_exactly_two_commands():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    quick_start = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    blocks = [b for b in quick_start.split("```bash\n")[1:]]
    commands = [b.split("```", 1)[0].strip() for b in blocks]
    assert len(commands) == 2
    assert "torchdoctor check examples/" in commands[0]
    assert "pytest" in commands[1] and "torch==2.13.0" in commands[1]
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "torch==2.13.0" in ci and "pytest" in ci
