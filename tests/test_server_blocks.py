"""The server parses an edited buffer block by block, keeping the trees of unchanged blocks:
each version's tree must be exactly `ast.parse`'s, positions included."""

from __future__ import annotations

import ast
import random
from pathlib import Path

import pytest

from torchdoctor.server.analysis import Analysis
from torchdoctor.server.blocks import BlockParser

SOURCE_ROOT = Path(__file__).resolve().parents[1] / "src" / "torchdoctor"

# Texts that split badly at lines in column 0: each must still give `ast.parse`'s tree.
TRICKY = {
    "decorator with arguments on lines of their own": (
        "import functools\n\n\n@functools.lru_cache(\n    maxsize=None\n)\n"
        "# a comment\n@staticmethod\ndef f():\n    return 1\n\n\nclass A:\n    pass\n"
    ),
    "module string with lines in column 0": (
        'HELP = """\nusage: train.py\n--lr LR\n"""\n\nx = 1\n\'\'\'\nnot """ closed here\n\'\'\'\ny = 2\n'
    ),
    "brackets holding lines in column 0": "table = {\n'a': 1,\n'b': 2,\n}\nz = [\n1,\n]\n",
    "clauses in column 0": (
        "try:\n    import torch\nexcept ImportError:\n    torch = None\nelse:\n    pass\n"
        "finally:\n    pass\nif torch:\n    a = 1\nelif a:\n    a = 2\nelse:\n    a = 3\n"
    ),
    "the same block twice": "def f():\n    return 1\n\n\ndef f():\n    return 1\n\n\nf()\n",
    "windows line endings": "import torch\r\n\r\ndef f(x):\r\n    return x.cuda()\r\n",
    "backslash continuation": "x = 1 + \\\n2\ny = 3\n",
    "no newline at the end": "import torch\nx = torch.ones(2)",
    "a comment in column 0 inside a function": "def f():\n    a = 1\n# note\n    return a\n\nb = 2\n",
    "async and match": (
        "async def f():\n    await g()\n\n\nmatch x:\n    case 1:\n        pass\n\n\nasync def g():\n"
        "    pass\n"
    ),
}


def _dump(tree: ast.AST) -> str:
    return ast.dump(tree, include_attributes=True)


def _same_as_ast_parse(parser: BlockParser, text: str) -> bool:
    """Whether `parser` gave a tree (None: the caller parses the whole text, always right)."""
    tree = parser.parse(text)
    try:
        expected = _dump(ast.parse(text))
    except SyntaxError:
        assert tree is None  # never a tree where Python has none
        return False
    if tree is not None:
        assert _dump(tree) == expected
    return tree is not None


def _edits(text: str, seed: int, count: int = 6) -> list[str]:
    """`text`, then versions of it with lines typed, deleted and repeated at random places."""
    rng = random.Random(seed)
    lines, versions = text.split("\n"), [text]
    for number in range(count):
        at = rng.randrange(len(lines) + 1)
        kind = rng.choice(["typed", "deleted", "repeated"])
        if kind == "typed":
            lines.insert(at, f"# edit {number}")
        elif kind == "repeated" and at < len(lines):
            lines.insert(at, lines[at])
        elif at < len(lines):
            del lines[at]
        versions.append("\n".join(lines))
    return versions


@pytest.mark.parametrize("name", sorted(TRICKY))
def test_tricky_texts_parse_as_python_parses_them(name):
    parser = BlockParser()
    assert _same_as_ast_parse(parser, TRICKY[name])  # parsed block by block, not given up on
    for version in _edits(TRICKY[name], seed=len(name)):
        _same_as_ast_parse(parser, version)


def test_real_code_through_a_series_of_edits():
    files = sorted(SOURCE_ROOT.rglob("*.py"))
    assert len(files) > 100
    reused = 0
    for number, path in enumerate(files):
        parser = BlockParser()
        for version in _edits(path.read_text(encoding="utf-8"), seed=number, count=3):
            reused += _same_as_ast_parse(parser, version)
    assert reused > 2 * len(files)  # most versions are parsed block by block, not given up on


def test_a_block_typed_into_is_parsed_again_and_the_others_are_moved():
    parser = BlockParser()
    text = "def f():\n    return 1\n\n\ndef g():\n    return 2\n"
    first = parser.parse(text)
    assert first is not None
    kept_g = first.body[1]
    edited = "import torch\n" + text.replace("return 1", "return 10")
    second = parser.parse(edited)
    assert second is not None
    assert second.body[2] is kept_g and kept_g.lineno == 6  # moved down one line, not re-parsed
    assert _dump(second) == _dump(ast.parse(edited))


def test_a_lone_carriage_return_is_left_to_the_whole_parse():
    # Python ends a line at a lone "\r"; the blocks are cut at "\n" only.
    assert BlockParser().parse("x = 1\ry = 2\n") is None


def test_the_server_finds_the_same_as_check_after_edits(tmp_path):
    path = tmp_path / "train.py"
    text = (
        "import torch\n\n\ndef train(model, loader, optimizer):\n    for x, y in loader:\n"
        "        loss = model(x).sum()\n        loss.backward()\n        optimizer.step()\n"
    )
    analysis = Analysis("en")
    first, _ = analysis.check_python(text, path)
    assert [f.code for f in first] == ["TD201"]
    edited = "# a comment typed above\n" + text.replace(
        "optimizer.step()", "optimizer.step()\n        optimizer.zero_grad()"
    )
    assert analysis.check_python(edited, path)[0] == []
    again = "# a comment typed above\n\n" + text
    assert [(f.code, f.line) for f in analysis.check_python(again, path)[0]] == [("TD201", 7)]
