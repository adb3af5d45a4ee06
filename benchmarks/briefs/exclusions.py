"""The repositories a new recall round or precision reading must leave out: every repository of
the recall sets kept in benchmarks/recall/ and every `owner/name` the docs name, and the
mirrors already on the machine (fetched for an earlier round); with the names alone, lower-cased,
so that forks and copies are left out too.

    python benchmarks/briefs/exclusions.py OUT_REPOSITORIES OUT_NAMES [--mirrors DIR]
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# `owner/name` as the docs write a GitHub repository (paths of this project left out).
_REPOSITORY = re.compile(r"\b([A-Za-z0-9][\w.-]{0,38})/([A-Za-z0-9][\w.-]{0,99})\b")
_OWN_FOLDERS = frozenset(
    {"docs", "src", "tests", "benchmarks", "scripts", "work", "tmp", "heldout"}
)


def repositories(mirrors: Path | None) -> set[str]:
    found = set()
    for cases in sorted((ROOT / "benchmarks" / "recall").glob("*.jsonl")):
        for line in cases.read_text(encoding="utf-8").splitlines():
            if line.strip():
                found.add(json.loads(line)["repo"])
    for doc in ("docs/precision.md", "docs/benchmarks.md"):
        for owner, name in _REPOSITORY.findall((ROOT / doc).read_text(encoding="utf-8")):
            if owner not in _OWN_FOLDERS and not name.endswith((".md", ".py", ".txt", ".jsonl")):
                found.add(f"{owner}/{name.rstrip('.')}")
    if mirrors is not None and mirrors.is_dir():
        found.update(entry.name.replace("+", "/", 1) for entry in mirrors.iterdir())
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repositories", type=Path)
    parser.add_argument("names", type=Path)
    parser.add_argument("--mirrors", type=Path, default=Path("/work/.mirror"))
    args = parser.parse_args()
    found = repositories(args.mirrors)
    args.repositories.write_text("\n".join(sorted(found)) + "\n", encoding="utf-8")
    names = {repository.split("/")[-1].lower() for repository in found}
    args.names.write_text("\n".join(sorted(names)) + "\n", encoding="utf-8")
    print(f"{len(found)} repositories, {len(names)} names")


if __name__ == "__main__":
    main()
