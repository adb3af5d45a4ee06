"""The renderers' text lives in one table (report/strings.py), complete in every language."""

from __future__ import annotations

import ast
import re
import string
from pathlib import Path

import pytest

import torchdoctor
from torchdoctor._lang import LANGS
from torchdoctor.report import strings

PACKAGE = Path(torchdoctor.__file__).parent
# The catalog keeps its entries' messages, by design; the table is the one other home of text.
TEXT_HOMES = (PACKAGE / "catalog", PACKAGE / "report" / "strings.py")
CJK = re.compile("[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]")
KEYS = [f"{area}.{name}" for area, table in strings.AREAS.items() for name in table]


def _fields(template: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(template) if name is not None}


@pytest.mark.parametrize("key", KEYS)
def test_every_key_has_every_language_with_the_same_fields(key):
    area, name = key.split(".", 1)
    languages = strings.AREAS[area][name]
    assert set(languages) == set(LANGS)
    english = _fields(languages["en"])
    for lang, template in languages.items():
        # `{s}` is the English plural ending; other languages have no use for it.
        assert _fields(template) == english - ({"s"} if lang != "en" else set()), lang


@pytest.mark.parametrize("key", KEYS)
def test_every_string_survives_a_gbk_terminal(key):
    area, name = key.split(".", 1)
    for template in strings.AREAS[area][name].values():
        template.encode("gbk")  # no emoji, nothing a Chinese Windows console cannot show


def test_text_fills_in_the_fields_and_falls_back_to_english():
    assert strings.text("check.found", "zh", n=3, s="s") == "发现 3 个问题"
    assert strings.text("check.found", "fr", n=3, s="s") == "Found 3 problems"
    assert strings.labels("explain", "fr") == strings.labels("explain", "en")
    assert strings.in_every_language("ckpt.other_file", path="b{x}.pth") == {
        "en": "`b{x}.pth`",
        "zh": " `b{x}.pth` ",
    }


def _outside_the_text_homes() -> list[Path]:
    return [
        path
        for path in sorted(PACKAGE.rglob("*.py"))
        if not any(path == home or home in path.parents for home in TEXT_HOMES)
    ]


def test_no_module_keeps_a_private_table_of_translations():
    offenders = []
    for path in _outside_the_text_homes():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docstrings = {
            id(node.body[0].value)
            for node in ast.walk(tree)
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and node.body
            and isinstance(node.body[0], ast.Expr)
            and isinstance(node.body[0].value, ast.Constant)
        }
        for node in ast.walk(tree):
            if isinstance(node, ast.Dict) and any(
                isinstance(key, ast.Constant) and key.value == "zh" for key in node.keys
            ):
                offenders.append(f'{path.relative_to(PACKAGE)}:{node.lineno}: a "zh" key')
            elif (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and id(node) not in docstrings
                and CJK.search(node.value)
            ):
                offenders.append(f"{path.relative_to(PACKAGE)}:{node.lineno}: Chinese text")
    assert not offenders, "UI text belongs in report/strings.py:\n" + "\n".join(offenders)
