"""Quality of `torchdoctor explain` on a directory of labelled real error outputs.

    python benchmarks/eval_explain.py DIR [--show-misses] [--markdown]

DIR holds `<expected-name>/<case>.txt` files in the format of tests/fixtures/explain: a header
of `#| key: value` lines (`source:` where the text comes from, `expect:` the catalog name that
must be the top answer, or `none` when no answer must be given), then the error output as the
user pasted it. A case counts as right when the top-ranked cause is the expected one (for
`none`: when nothing is ranked). Linking to user files is off: the files are not here.

Use it on a held-out set, collected without looking at the matcher, to estimate how often the
right cause comes first on errors this project has not tuned for (docs/precision.md).
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

from torchdoctor.explain.match import diagnose
from torchdoctor.explain.parse import parse_text


def read_case(path: Path) -> tuple[dict[str, str], str]:
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines(keepends=True)
    headers: dict[str, str] = {}
    body = 0
    while body < len(lines) and lines[body].startswith("#| "):
        key, _, value = lines[body][3:].partition(":")
        headers[key.strip()] = value.strip()
        body += 1
    return headers, "".join(lines[body:])


def ranked_names(text: str) -> list[str]:
    return [d.pitfall.name for d in diagnose(parse_text(text), "en", link=False).diagnoses]


def evaluate(root: Path) -> list[tuple[Path, str, list[str]]]:
    results = []
    for path in sorted(root.glob("*/*.txt")):
        headers, text = read_case(path)
        expected = headers.get("expect", path.parent.name)
        results.append((path, expected, ranked_names(text)))
    return results


def is_right(expected: str, names: list[str]) -> bool:
    return names == [] if expected == "none" else bool(names) and names[0] == expected


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=Path, metavar="DIR")
    parser.add_argument("--show-misses", action="store_true", help="list every wrong answer")
    parser.add_argument("--markdown", action="store_true", help="per-name table in Markdown")
    args = parser.parse_args(argv)

    results = evaluate(args.root)
    if not results:
        print(f"no cases under {args.root}", file=sys.stderr)
        return 2
    totals, rights = Counter(), Counter()
    for _, expected, names in results:
        totals[expected] += 1
        rights[expected] += is_right(expected, names)
    recognised = [r for r in results if r[1] != "none"]
    top1 = sum(is_right(e, n) for _, e, n in recognised)
    quiet = sum(is_right(e, n) for _, e, n in results if e == "none")
    print(
        f"cases: {len(results)} ({len(recognised)} with an expected cause, "
        f"{len(results) - len(recognised)} that are none of ours)"
    )
    if recognised:
        print(
            f"right cause ranked first: {top1}/{len(recognised)} "
            f"({100 * top1 / len(recognised):.1f} %)"
        )
    if len(results) > len(recognised):
        print(f"no answer where none is right: {quiet}/{len(results) - len(recognised)}")
    if args.markdown:
        print("\n| expected | cases | right first |\n|---|---:|---:|")
        for name in sorted(totals):
            print(f"| {name} | {totals[name]} | {rights[name]} |")
    if args.show_misses:
        for path, expected, names in results:
            if not is_right(expected, names):
                print(
                    f"MISS {path.relative_to(args.root)}: expected {expected}, ranked {names[:3]}"
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
