"""Start a new pitfall: an entry skeleton and a fixture stub for each facet asked for.

    python scripts/new_pitfall.py AREA NAME [--static] [--explain] [--watch] [--ckpt]

AREA is a directory of src/torchdoctor/catalog (training, data...), NAME the kebab-case name of
the bad pattern. The entry gets the area's next free code. The skeleton imports and registers,
but is off by default (`default=False`, monitors too) and its detectors find nothing: fill them
in, with the texts, before turning it on. Nothing that exists is overwritten. See
docs/contributing.md.
"""

from __future__ import annotations

import argparse
import re
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NAME = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
ENTRY_FILE = re.compile(r"^td(\d{3})_\w+\.py$")

ENTRY = '''"""{code} {name}: TODO one line: the bad pattern and what it costs."""
from __future__ import annotations
{imports}
PITFALL = Pitfall(
    code="{code}",
    name="{name}",
    title={{"en": "TODO", "zh": "TODO（中文）"}},
    messages={{"": {{"en": "TODO: what is wrong here and what to do",
                   "zh": "TODO：这里哪里有问题，应该怎么做"}}}},
    docs={{
        "en": """
## What it catches
TODO

## Why is this bad?
TODO
""",
        "zh": """
## What it catches
TODO（中文）

## Why is this bad?
TODO（中文）
""",
    }},
    example="""
# TODO: self-contained code that triggers the entry
""",
    use_instead="""
# TODO: the same code, fixed
""",
    default=False,  # off until the detectors are written and measured (docs/precision.md)
)
'''

FACETS = {
    "static": (
        ("ast",),
        ("Iterator",),
        ("Context", "Finding"),
        """

@PITFALL.static(ast.Call, names={{"TODO"}})
def check(node: ast.Call, ctx: Context) -> Iterator[Finding]:
    return iter(())  # TODO: yield ctx.finding(PITFALL, node) for the bad pattern
""",
    ),
    "explain": (
        (),
        (),
        ("Clue", "ErrorBlock", "ErrorReport"),
        """

@PITFALL.error_check(types=("RuntimeError",))
def recognise(block: ErrorBlock, report: ErrorReport) -> Clue | None:
    return None  # TODO: a Clue when block.message is this pitfall's error (or PITFALL.error(regex))
""",
    ),
    "watch": (
        (),
        (),
        ("Monitor",),
        """

@PITFALL.monitor
class {cls}(Monitor):
    default = False  # TODO: remove once measured on real runs

    def after_step(self, optimizer) -> None:
        return None  # TODO: self.report(place, ...) when the run shows the pitfall
""",
    ),
    "ckpt": (
        (),
        ("Iterable",),
        ("Finding", "Subject"),
        """

@PITFALL.checkpoint
def check_checkpoint(subject: Subject) -> Iterable[Finding]:
    return []  # TODO: findings read from subject.listing / subject.diff
""",
    ),
}


def stubs(name: str, code: str) -> dict[str, dict[str, str]]:
    """Facet -> {path under tests/fixtures: contents}: where the fixture tests look."""
    module = name.replace("-", "_")
    return {
        "static": {
            f"lint/{name}.py": (
                f"# {code} {name}: bad cases and clean look-alikes side by side; end the line of\n"
                f"# each expected finding with an expect comment for {code} (docs/contributing.md).\n"
                "import torch\n"
            )
        },
        "explain": {
            f"explain/{name}/TODO.txt": (
                "#| source: TODO the issue URL this output comes from, or how it was reproduced\n"
                f"#| expect: {name}\n"
                "TODO: the error output exactly as printed (tests/fixtures/README.md)\n"
            )
        },
        "watch": {
            # The new entry starts off by default: both runs select it, so that the fixed twin
            # proves the check ran and found nothing.
            f"watch/{module}.py": (
                f'"""{code} {name}: TODO a tiny training run that shows the pitfall."""\n'
                f"#| select: {code}\n#| expect: {code}\n"
            ),
            f"watch/{module}_fixed.py": (
                f'"""{code} {name}: the same run, fixed: nothing is reported."""\n'
                f"#| select: {code}\n#| expect: none\n"
            ),
        },
        "ckpt": {},  # a case is a test in tests/test_ckpt_*.py that asserts the finding's name
    }


def next_code(area_dir: Path) -> str:
    codes = [int(m.group(1)) for p in area_dir.iterdir() if (m := ENTRY_FILE.match(p.name))]
    if not codes:
        raise SystemExit(f"error: {area_dir} has no entry to take the code's hundreds from")
    return f"TD{max(codes) + 1:03d}"


def entry_text(name: str, code: str, facets: list[str]) -> str:
    modules, typing, names, bodies = set(), set(), {"Pitfall"}, []
    cls = "".join(part.title() for part in name.split("-")) + "Monitor"
    for facet in facets:
        imported, typed, needed, body = FACETS[facet]
        modules.update(imported)
        typing.update(typed)
        names.update(needed)
        bodies.append(body.format(cls=cls))
    header = "".join(f"import {module}\n" for module in sorted(modules))
    if typing:
        header += f"from typing import {', '.join(sorted(typing))}\n"
    header += "\n" if header else ""
    line = f"from torchdoctor.catalog.sdk import {', '.join(sorted(names))}"
    if len(line) > 100:
        wrapped = textwrap.wrap(", ".join(sorted(names)), 92)
        line = "from torchdoctor.catalog.sdk import (\n    " + "\n    ".join(wrapped) + ")"
    header += line + "\n"
    return ENTRY.format(code=code, name=name, imports="\n" + header) + "".join(bodies)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("area")
    parser.add_argument("name")
    for facet in FACETS:
        parser.add_argument(f"--{facet}", action="store_true", help=f"a {facet} facet")
    parser.add_argument(
        "--root", type=Path, default=ROOT, help="the repository (default: this one)"
    )
    args = parser.parse_args(argv)
    facets = [facet for facet in FACETS if getattr(args, facet)]
    if not facets:
        parser.error("ask for at least one facet: --static, --explain, --watch or --ckpt")
    if not NAME.match(args.name):
        parser.error(f"{args.name!r} is not a kebab-case name")
    area_dir = args.root / "src" / "torchdoctor" / "catalog" / args.area
    if not (area_dir / "__init__.py").is_file():
        parser.error(f"no catalog area {args.area!r} in {area_dir.parent}")
    module = args.name.replace("-", "_")
    taken = sorted(area_dir.parent.glob(f"*/td[0-9][0-9][0-9]_{module}.py"))
    if taken:
        print(f"error: not overwriting: {taken[0]} has that name", file=sys.stderr)
        return 1
    code = next_code(area_dir)
    files = {area_dir / f"td{code[2:]}_{module}.py": entry_text(args.name, code, facets)}
    for facet in facets:
        for relative, text in stubs(args.name, code)[facet].items():
            files[args.root / "tests" / "fixtures" / relative] = text
    existing = [str(path) for path in files if path.exists()]
    if existing:
        print(f"error: not overwriting {', '.join(existing)}", file=sys.stderr)
        return 1
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        print(path.relative_to(args.root))
    return 0


if __name__ == "__main__":
    sys.exit(main())
