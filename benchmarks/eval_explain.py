"""Quality of `torchdoctor explain` on a directory of labelled real error outputs.

    python benchmarks/eval_explain.py DIR [--show-misses] [--markdown] [--by-form]

DIR holds `<expected-name>/<case>.txt` files in the format of tests/fixtures/explain: a header
of `#| key: value` lines (`source:` where the text comes from, `expect:` the catalog name that
must be the top answer, or `none` when no answer must be given), then the error output as the
user pasted it (an optional `form:` header, e.g. `message-alone`, groups the cases with
--by-form). A case counts as right when the top-ranked cause is the expected one (for `none`:
when nothing is ranked). Linking to user files is off: the files are not here.

Also printed: answered precision (of the cases given any answer, how many got the right one
first; a `none` case answered at all is wrong) and calibration (the same, among answers whose
top confidence is at least 0.8, and below it).

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


CONFIDENT = 0.8


def ranked(text: str) -> tuple[list[str], float]:
    """The names of the causes, best first, and the confidence of the first (0: none)."""
    diagnoses = diagnose(parse_text(text), "en", link=False).diagnoses
    return [d.pitfall.name for d in diagnoses], diagnoses[0].confidence if diagnoses else 0.0


def evaluate(root: Path) -> list[tuple[Path, str, list[str]]]:
    return [(path, expected, names) for path, expected, names, _, _ in evaluate_cases(root)]


def evaluate_cases(root: Path) -> list[tuple[Path, str, list[str], float, str]]:
    """(path, expected, ranked names, top confidence, form) of every case under root."""
    results = []
    for path in sorted(root.glob("*/*.txt")):
        headers, text = read_case(path)
        expected = headers.get("expect", path.parent.name)
        names, confidence = ranked(text)
        results.append((path, expected, names, confidence, headers.get("form", "-")))
    return results


def _share(right: int, total: int) -> str:
    return f"{right}/{total} ({100 * right / total:.1f} %)" if total else "0/0"


def is_right(expected: str, names: list[str]) -> bool:
    return names == [] if expected == "none" else bool(names) and names[0] == expected


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=Path, metavar="DIR")
    parser.add_argument("--show-misses", action="store_true", help="list every wrong answer")
    parser.add_argument("--markdown", action="store_true", help="per-name table in Markdown")
    parser.add_argument("--by-form", action="store_true", help="right first per `form:` header")
    args = parser.parse_args(argv)

    cases = evaluate_cases(args.root)
    results = [(path, expected, names) for path, expected, names, _, _ in cases]
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
    answered = [c for c in cases if c[2]]
    confident = [c for c in answered if c[3] >= CONFIDENT]
    doubtful = [c for c in answered if c[3] < CONFIDENT]
    print(
        f"answered precision: {_share(sum(is_right(c[1], c[2]) for c in answered), len(answered))}"
    )
    print(
        f"calibration: confidence >= {CONFIDENT}: "
        f"{_share(sum(is_right(c[1], c[2]) for c in confident), len(confident))} right; "
        f"below: {_share(sum(is_right(c[1], c[2]) for c in doubtful), len(doubtful))} right"
    )
    if args.by_form:
        for form in sorted({c[4] for c in cases}):
            group = [c for c in cases if c[4] == form]
            print(f"  {form}: {_share(sum(is_right(c[1], c[2]) for c in group), len(group))}")
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
