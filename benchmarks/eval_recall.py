"""Recall and false alarms of `torchdoctor check` on labelled pitfalls in real repositories.

    python benchmarks/eval_recall.py CASES.jsonl [...] [--mirrors DIR] [--work DIR] [--show]

Each line of a cases file is one labelled place in a public repository at a fixed commit:
`{"repo": "owner/name", "commit": ..., "path": ..., "line": N, "seed": ID,
"label": "bug" | "clean", ...}`, where `seed` is the id of the pitfall in the source notes'
audit (shared/SEED-PITFALLS.md; 201: `.cuda(async=True)`, 202: `torch.save` of a whole model).
The cases are collected by someone who does not read the checker, before it is tuned on them.

Every repository is checked whole at its commit (so facts from other files count), once with
every rule (`--select ALL`). A bug case is caught when a finding of a rule meant for its
pitfall lies within LINE_SLACK lines of the labelled line in the same file; recall is reported
for the default rules and for every rule, over all cases and over the seeded categories (the
pitfalls some rule is meant for). A clean case is a false alarm when such a finding lies on
its own line. Repositories come from the mirrors `fetch` makes (`DIR/owner+name/...`, a bare
git directory); each is unpacked once into the work directory.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

from torchdoctor.catalog import _registry

# The rules meant for each pitfall of the notes (seed id -> codes). A seed with no code has no
# rule yet: its cases count against recall over all cases, not over the seeded categories.
RULES_FOR_SEED: dict[int, tuple[str, ...]] = {
    2: ("TD411",),
    5: ("TD410", "TD404"),
    6: ("TD202",),
    10: ("TD406",),
    11: ("TD405",),
    13: ("TD105",),
    14: ("TD505",),
    15: ("TD302",),
    19: ("TD301",),
    20: ("TD104",),
    22: ("TD002",),
    23: ("TD402",),
    24: ("TD203",),
    28: ("TD103",),
    37: ("TD102",),
    38: ("TD205", "TD206"),
    39: ("TD603",),
    # The loader without a DistributedSampler: the rule made for it (issue 15), not the
    # missing `set_epoch` of one that has it (TD604, a pitfall of its own) that stood here.
    40: ("TD607",),
    41: ("TD608",),
    44: ("TD001",),
    45: ("TD504", "TD602"),
    47: ("TD705",),
    48: ("TD601",),
    49: ("TD201",),
    51: ("TD602", "TD504"),
    53: ("TD703",),
    55: ("TD704",),
    56: ("TD702",),
    58: ("TD408",),
    59: ("TD803",),
    60: ("TD105",),
    67: ("TD101",),
    70: ("TD802",),
    71: ("TD802", "TD803"),
    # An optimizer's step between a forward and the backward through it (since the thirty-fifth
    # session, when TD106 got a detector in the code; explained only before).
    85: ("TD106",),
    90: ("TD501",),
    # uint8 masks, and the uint8 idiom `1 - mask` on what comparisons make now (bool).
    97: ("TD401", "TD423"),
    98: ("TD801",),
    107: ("TD404",),
    108: ("TD403",),
    201: ("TD700",),
    202: ("TD503",),
}
LINE_SLACK = 3
# What is unpacked of each repository: what `check` reads.
SUFFIXES = (".py", ".ipynb", ".cu", ".cpp", ".cc", ".cuh", ".h", ".hpp")


def read_cases(paths: list[Path]) -> list[dict]:
    cases = []
    for path in paths:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if line.strip():
                try:
                    case = json.loads(line)
                except json.JSONDecodeError as error:
                    print(f"{path}:{number}: skipped, not JSON: {error}", file=sys.stderr)
                    continue
                case["source"] = f"{path.name}:{number}"
                cases.append(case)
    return cases


def git_dir(mirrors: Path, repo: str) -> Path | None:
    """The bare git directory `fetch` made for `owner/name`, if any."""
    root = mirrors / repo.replace("/", "+")
    candidates = [root] + sorted(p.parent for p in root.glob("**/HEAD"))
    for candidate in candidates:
        if (candidate / "objects").is_dir() and (candidate / "HEAD").is_file():
            return candidate
    return None


def unpack(mirrors: Path, work: Path, repo: str, commit: str) -> Path | None:
    """The Python sources and notebooks of `repo` at `commit`, unpacked once under `work`
    (a mirror may lack its largest blobs, so files are taken one by one, not archived)."""
    target = work / f"{repo.replace('/', '+')}@{commit[:12]}"
    if (target / ".unpacked").exists():
        return target
    source = git_dir(mirrors, repo)
    if source is None:
        return None
    git = ["git", f"--git-dir={source}"]
    listing = subprocess.run(
        [*git, "ls-tree", "-r", "-z", commit], capture_output=True, check=False
    )
    if listing.returncode != 0:
        return None
    for entry in listing.stdout.split(b"\0"):
        meta, _, name = entry.partition(b"\t")
        path = name.decode("utf-8", "replace")
        if b" blob " not in meta or not path.endswith(SUFFIXES):
            continue
        blob = subprocess.run(
            [*git, "cat-file", "blob", meta.split()[2].decode()], capture_output=True, check=False
        )
        if blob.returncode == 0 and ".." not in Path(path).parts:
            (target / path).parent.mkdir(parents=True, exist_ok=True)
            (target / path).write_bytes(blob.stdout)
    target.mkdir(parents=True, exist_ok=True)
    (target / ".unpacked").touch()
    return target


# A finding's message naming another line of its file: "used as a mask on line 23".
_NAMED_LINE = re.compile(r"\bline (\d+)\b")

Found = dict[str, list[tuple[int, int, str, tuple[int, ...]]]]
# What a finding of eval-mode-missing speaks of: the model's mode (`.eval()`, training mode) or
# only the gradients its loop records (`torch.no_grad()`, `volatile=True`). Seed 38 is the
# mode; a loop that is right about `eval()` and records a graph per batch is labelled clean for
# it by a collector who judged only the mode, so advice on the gradients alone is marked
# (TD205~grad): it neither catches nor alarms for seed 38, unless asked (`grad_advice`).
_SPEAKS_OF_THE_MODE = re.compile(r"eval\(\)|training mode")
GRADIENTS_ONLY = "~grad"


def findings_in(tree: Path) -> Found:
    """Every finding of every rule in `tree`: relative path -> [(line, cell or 0, code, the
    lines its message names)]."""
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "torchdoctor",
            "check",
            "--format",
            "json",
            "--no-cache",
            "--select",
            "ALL",
            "--jobs",
            "2",
            ".",
        ],
        cwd=tree,
        capture_output=True,
        text=True,
        check=False,
    )
    if run.returncode not in (0, 1):
        print(
            f"{tree.name}: check exited {run.returncode}: {run.stderr.strip()[:200]}",
            file=sys.stderr,
        )
    found: Found = defaultdict(list)
    for finding in json.loads(run.stdout or "[]"):
        cell = finding.get("location", {}).get("cell") or 0
        named = tuple(int(n) for n in _NAMED_LINE.findall(finding.get("message", "")))
        code = finding["code"]
        if code == "TD205" and not _SPEAKS_OF_THE_MODE.search(finding.get("message", "")):
            code += GRADIENTS_ONLY
        found[finding["path"].removeprefix("./")].append((finding["line"], cell, code, named))
    return found


def notebook_place(notebook: Path, json_line: int) -> tuple[int, int] | None:
    """(cell number from 1 among all cells, line in the cell) of a line of a notebook's JSON
    text, as `check` reports notebook findings; for nbformat's one-line-per-element layout."""
    try:
        lines = notebook.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    cell, source_start = 0, None
    for number, text in enumerate(lines[:json_line], 1):
        stripped = text.strip()
        if stripped.startswith('"cell_type"'):
            cell, source_start = cell + 1, None
        elif stripped.startswith('"source"'):
            source_start = number
        elif source_start is not None and stripped.startswith("]"):
            source_start = None
    if cell == 0 or source_start is None:
        return None
    return cell, json_line - source_start


def judge(
    case: dict,
    found: Found,
    codes: set[str],
    tree: Path,
    block: bool = False,
    named: bool = False,
    grad_advice: bool = False,
) -> bool:
    """A bug case: caught within LINE_SLACK lines (with `block`, or anywhere in the block its
    line opens: a collector may label a function, class or loop and the rule report the
    statement inside it; with `named`, or by a finding of the file whose message names a line
    within LINE_SLACK: a uint8 mask reported where it is made, "used as a mask on line 23",
    labelled at its use); a clean case: alarmed on its own line. With `grad_advice`, a TD205
    finding on the gradients alone counts as one on the mode (how rounds before the thirty-fourth
    session counted)."""
    wanted = set(RULES_FOR_SEED.get(case["seed"], ())) & codes
    slack = LINE_SLACK if case["label"] == "bug" else 0
    cell, line = 0, case["line"]
    if case["path"].endswith(".ipynb"):
        place = notebook_place(tree / case["path"], case["line"])
        if place is None:
            return False
        cell, line = place
    first, last = line - slack, line + slack
    if block and case["label"] == "bug" and not cell:
        last = max(last, block_end(tree / case["path"], line))
    return any(
        (code.removesuffix(GRADIENTS_ONLY) if grad_advice else code) in wanted
        and found_cell == cell
        and (
            first <= found_line <= last
            or named
            and case["label"] == "bug"
            and not cell
            and any(first <= n <= last for n in lines_named)
        )
        for found_line, found_cell, code, lines_named in found.get(case["path"], ())
    )


# A labelled line that opens a block: its block is where the bug it names shows.
BLOCK_OPENERS = ("def ", "async def ", "class ", "for ", "async for ", "while ", "with ")


def block_end(path: Path, line: int) -> int:
    """The last line of the block a `def`, `class`, loop or `with` line opens (by indentation),
    or `line` itself for any other line."""
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return line
    if not 0 < line <= len(lines):
        return line
    header = lines[line - 1]
    if not header.lstrip().startswith(BLOCK_OPENERS):
        return line
    indent = len(header) - len(header.lstrip())
    end = line
    for number in range(line + 1, len(lines) + 1):
        text = lines[number - 1]
        if not text.strip() or text.lstrip().startswith("#"):
            continue
        if len(text) - len(text.lstrip()) <= indent:
            break
        end = number
    return end


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cases", type=Path, nargs="+", metavar="CASES.jsonl")
    parser.add_argument("--mirrors", type=Path, default=Path("/work/.mirror"))
    parser.add_argument("--work", type=Path, default=Path("/tmp/td-recall"))
    parser.add_argument("--show", action="store_true", help="list every miss and false alarm")
    args = parser.parse_args(argv)

    cases = read_cases(args.cases)
    every = {p.code for p in _registry.all_pitfalls()}
    default = {p.code for p in _registry.all_pitfalls() if p.default}
    by_tree: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for case in cases:
        by_tree[(case["repo"], case["commit"])].append(case)

    # (case, hit: default rules, every rule, default in the block, also naming the line, default
    # counting advice on gradients alone for seed 38)
    results = []
    for (repo, commit), group in sorted(by_tree.items()):
        tree = unpack(args.mirrors, args.work, repo, commit)
        if tree is None:
            print(
                f"{repo}@{commit[:12]}: not in the mirrors; {len(group)} cases left out",
                file=sys.stderr,
            )
            continue
        found = findings_in(tree)
        for case in group:
            results.append(
                (
                    case,
                    judge(case, found, default, tree),
                    judge(case, found, every, tree),
                    judge(case, found, default, tree, block=True),
                    judge(case, found, default, tree, block=True, named=True),
                    judge(case, found, default, tree, grad_advice=True),
                )
            )

    bugs = [r for r in results if r[0]["label"] == "bug"]
    seeded = [r for r in bugs if r[0]["seed"] in RULES_FOR_SEED]
    clean = [r for r in results if r[0]["label"] == "clean"]
    repos = {r[0]["repo"] for r in results}
    print(
        f"{len(results)} cases in {len(repos)} repositories: {len(bugs)} bugs "
        f"({len(seeded)} in seeded categories), {len(clean)} clean look-alikes"
    )
    # The seeded categories some default rule is meant for (a seed whose rules are all opt-in,
    # such as map_location's, can be caught by default by none).
    on_by_default = [r for r in seeded if set(RULES_FOR_SEED[r[0]["seed"]]) & default]
    for name, rows in (
        ("all bugs", bugs),
        ("seeded categories", seeded),
        ("seeded categories with a default rule", on_by_default),
    ):
        for rules, column in (("default rules", 1), ("every rule", 2)):
            hit = sum(1 for r in rows if r[column])
            print(f"recall, {name}, {rules}: {hit}/{len(rows)} = {hit / max(len(rows), 1):.2f}")
    for name, rows in (
        ("seeded categories with a default rule", on_by_default),
        ("all bugs", bugs),
    ):
        hit = sum(1 for r in rows if r[3])
        print(
            f"recall, {name}, default rules, a finding anywhere in a labelled def/class/loop "
            f"counting: {hit}/{len(rows)} = {hit / max(len(rows), 1):.2f}"
        )
        hit = sum(1 for r in rows if r[4])
        print(
            f"recall, {name}, default rules, also a finding whose message names the labelled "
            f"line counting: {hit}/{len(rows)} = {hit / max(len(rows), 1):.2f}"
        )
    for rules, column in (("default rules", 1), ("every rule", 2)):
        alarms = sum(1 for r in clean if r[column])
        print(f"false alarms on clean look-alikes, {rules}: {alarms}/{len(clean)}")
    for name, rows, column in (
        ("recall, seeded categories with a default rule", on_by_default, 5),
        ("false alarms on clean look-alikes", clean, 5),
    ):
        hit = sum(1 for r in rows if r[column])
        print(
            f"{name}, default rules, TD205's advice on gradients alone counting for seed 38 "
            f"(as before the thirty-fourth session): {hit}/{len(rows)}"
        )

    per_seed: dict[int, Counter] = defaultdict(Counter)
    for case, hit_default, hit_every, *_ in bugs:
        per_seed[case["seed"]].update(cases=1, default=hit_default, every=hit_every)
    print("\nseed  rules                cases  default  every")
    for seed in sorted(per_seed):
        row = per_seed[seed]
        rules = ",".join(RULES_FOR_SEED.get(seed, ("-",)))
        print(f"{seed:>4}  {rules:<20} {row['cases']:>5}  {row['default']:>7}  {row['every']:>5}")
    if args.show:
        print()
        for case, hit_default, hit_every, *_ in results:
            wrong = not hit_every if case["label"] == "bug" else hit_default
            if wrong:
                kind = "MISS" if case["label"] == "bug" else "ALARM"
                print(
                    f"{kind} seed {case['seed']} {case['repo']} {case['path']}:{case['line']} "
                    f"({case['source']}): {case.get('pitfall', '')}"
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
