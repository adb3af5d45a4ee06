"""Findings per rule on real corpora, for docs/precision.md.

    python benchmarks/count_findings.py /path/to/transformers-X /path/to/timm-Y ... [--show RULE]

Runs `torchdoctor check --select ALL --format json` on each corpus (no cache) and prints a
Markdown table: one row per rule, one column per corpus, and whether the rule is on by default.
`--show RULE` also prints every finding of that rule, to read them.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

from torchdoctor.catalog import all_pitfalls


def findings_of(corpus: Path) -> list[dict]:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "torchdoctor",
            "check",
            "--no-cache",
            "--select",
            "ALL",
            "--format",
            "json",
            str(corpus),
        ],
        capture_output=True,
        text=True,
        encoding="utf-8",
    )
    if result.returncode not in (0, 1):
        sys.exit(f"check failed on {corpus}: {result.stderr.strip()}")
    return json.loads(result.stdout)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("corpora", nargs="+", type=Path)
    parser.add_argument("--show", action="append", default=[], metavar="RULE")
    args = parser.parse_args()

    counts: dict[str, Counter] = {}
    for corpus in args.corpora:
        found = findings_of(corpus)
        counts[corpus.name] = Counter(f["code"] for f in found)
        for f in found:
            if f["code"] in args.show or f["name"] in args.show:
                print(f"{f['path']}:{f['line']}:{f['column']}: {f['code']} {f['message']}")

    names = list(counts)
    print("| rule | default | " + " | ".join(names) + " |")
    print("|---|---|" + "---|" * len(names))
    for pitfall in all_pitfalls():
        cells = " | ".join(str(counts[n][pitfall.code]) for n in names)
        print(
            f"| {pitfall.code} `{pitfall.name}` | {'on' if pitfall.default else 'off'} | {cells} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
