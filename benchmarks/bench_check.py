"""Speed of `torchdoctor check` on a large real corpus, against the cost of just parsing it.

Every measurement is a whole fresh process timed by benchmarks/_measure.py, repeated --repeat
times; the table shows the median. See benchmarks/README.md for getting corpora and running.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

import torchdoctor
from torchdoctor import __version__
from torchdoctor.lint.cache import CACHE_DIR_NAME, project_root
from torchdoctor.lint.files import discover

HERE = Path(__file__).resolve().parent
MEASURE = HERE / "_measure.py"
PARSE_ALL = HERE / "_parse_all.py"
DEFAULT_CORPUS_GLOB = "/work/corpus/transformers-*"
COLD_RATIO_TARGET = 1.5
WARM_SECONDS_TARGET = 0.5  # issue 13
BUSY_CPU_SHARE = 0.85  # a single-threaded run that got less of a CPU than this competed for it
CHECK_OK = (0, 1)  # 1 means findings, not failure
RUFF_OK = (0, 1)
TORCHFIX_OK = (0, 1)  # 1 means some files failed to process
FLOOR = "ast.parse floor"
COLD_ONE_JOB = "check, 1 job, cold, ALL rules"
WARM = "check, warm re-run"
DOC_START = (
    "<!-- bench_check results: start (written by benchmarks/bench_check.py --update-doc) -->"
)
DOC_END = "<!-- bench_check results: end -->"
CORPUS_HELP = """\
no corpus found. Get one, outside the repository (never commit a corpus):

    pip download --no-deps --no-binary :all: transformers -d ~/corpus
    tar -xzf ~/corpus/transformers-*.tar.gz -C ~/corpus

then pass --corpus ~/corpus/transformers-X.Y.Z, or set TORCHDOCTOR_CORPUS to that directory."""


class BenchmarkError(Exception):
    """A measured command failed or misbehaved: its numbers would mean nothing."""


@dataclass
class Corpus:
    path: Path
    files: list[Path]
    lines: int
    list_file: Path  # the files as a JSON list, read by the floor process


@dataclass
class Row:
    label: str
    corpus: Corpus
    command: list[str]
    seconds: list[float] = field(default_factory=list)
    cpu_seconds: list[float] = field(default_factory=list)
    peak_bytes: int = 0
    outputs: set[str] = field(default_factory=set)  # digests of what the runs printed
    note: str = ""  # why there is no number
    timed_out_after: float = 0

    @property
    def median(self) -> float | None:
        return statistics.median(self.seconds) if self.seconds else None

    @property
    def cpu_median(self) -> float | None:
        return statistics.median(self.cpu_seconds) if self.cpu_seconds else None


@dataclass
class Report:
    corpus: Corpus
    rows: list[Row]
    notes: list[str]
    load_at_start: float
    revision: str


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    corpus_path = find_corpus(args.corpus)
    torchfix_path = find_corpus(args.torchfix_corpus) if args.torchfix_corpus else corpus_path
    if corpus_path is None or torchfix_path is None:
        print(f"bench_check: {CORPUS_HELP}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="torchdoctor-bench-") as scratch:
        try:
            report = run_all(args, corpus_path, torchfix_path, Path(scratch))
        except BenchmarkError as error:
            print(f"bench_check: error: {error}", file=sys.stderr)
            return 1
    print(render_markdown(report) if args.markdown else render_text(report))
    if args.update_doc:
        update_doc(Path(args.update_doc), render_markdown(report))
    return 0


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--corpus",
        help="directory of Python sources (default: $TORCHDOCTOR_CORPUS, "
        f"else the newest {DEFAULT_CORPUS_GLOB})",
    )
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement (median shown)")
    parser.add_argument(
        "--torchfix-corpus",
        help="run TorchFix on this smaller corpus instead (it is ~200x slower than parsing)",
    )
    parser.add_argument("--torchfix-timeout", type=float, default=600, help="seconds (default 600)")
    parser.add_argument("--markdown", action="store_true", help="print a markdown table")
    parser.add_argument(
        "--update-doc",
        metavar="FILE",
        help="also replace the results block of FILE (docs/benchmarks.md)",
    )
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    return args


def find_corpus(given: str | None) -> Path | None:
    """The given directory, else $TORCHDOCTOR_CORPUS, else the newest default one."""
    given = given or os.environ.get("TORCHDOCTOR_CORPUS")
    if given:
        path = Path(given).expanduser()
        return path.resolve() if path.is_dir() else None
    candidates = sorted(p for p in Path("/").glob(DEFAULT_CORPUS_GLOB.lstrip("/")) if p.is_dir())
    return candidates[-1] if candidates else None


def run_all(
    args: argparse.Namespace, corpus_path: Path, torchfix_path: Path, scratch: Path
) -> Report:
    # Every checker run starts here, with the corpus as argument: no pyproject.toml with
    # [tool.torchdoctor] is found from here, so the corpus's own settings play no part.
    project = scratch / "project"
    project.mkdir()
    load_at_start = os.getloadavg()[0]
    package = Path(torchdoctor.__file__).resolve().parent
    snapshot = snapshot_package(package, scratch)
    # Children inherit these. PYTHONPATH comes before the editable install's path entry. Cached
    # bytecode is what an installed checker runs with, and it goes to the private copy only.
    os.environ["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(snapshot), os.environ.get("PYTHONPATH")])
    )
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    corpus = load_corpus(corpus_path, project, scratch)
    compile_torchdoctor(corpus, project, snapshot)

    floor = measure_row(FLOOR, corpus, floor_command(corpus), scratch, args.repeat)
    one_job = check_command("--jobs", "1", "--no-cache", "--select", "ALL", str(corpus.path))
    cold_one = measure_row(COLD_ONE_JOB, corpus, one_job, project, args.repeat, ok_codes=CHECK_OK)
    all_cores = check_command("--no-cache", str(corpus.path))
    cold_all = measure_row(
        f"check, {os.cpu_count()} jobs, cold",
        corpus,
        all_cores,
        project,
        args.repeat,
        ok_codes=CHECK_OK,
    )
    warm, notes = measure_warm(corpus, project, args.repeat, cold_all)
    rows = [floor, cold_one, cold_all, warm, ruff_row(corpus, scratch, args.repeat)]

    torchfix_corpus = corpus
    if torchfix_path != corpus.path:
        torchfix_corpus = load_corpus(torchfix_path, project, scratch)
        rows.append(
            measure_row(
                FLOOR, torchfix_corpus, floor_command(torchfix_corpus), scratch, args.repeat
            )
        )
    rows.append(torchfix_row(torchfix_corpus, scratch, args.torchfix_timeout))
    return Report(corpus, rows, notes, load_at_start, source_revision(package))


def snapshot_package(package: Path, scratch: Path) -> Path:
    """A private copy of torchdoctor for every checker run to import: a directory for PYTHONPATH.

    Every row then measures the same code even while the tree is being edited, and the cache key,
    which covers the package's own files, cannot change between the populating and the warm run.
    """
    target = scratch / "src"
    shutil.copytree(package, target / "torchdoctor", ignore=shutil.ignore_patterns("__pycache__"))
    return target


def source_revision(package: Path) -> str:
    """The git commit the measured code comes from, marked when it has uncommitted changes."""

    def git(*arguments: str) -> str:
        done = subprocess.run(
            ["git", "-C", str(package), *arguments], capture_output=True, text=True, check=False
        )
        return done.stdout.strip()

    commit = git("rev-parse", "--short", "HEAD")
    if not commit:
        return "not from a git checkout"
    return commit + (" + uncommitted changes" if git("status", "--porcelain", "--", ".") else "")


def load_corpus(path: Path, project: Path, scratch: Path) -> Corpus:
    """The files the checker would check, listed by its own discovery, so both sides parse the same set."""
    files = discover([str(path)], [], project).files
    if not files:
        raise BenchmarkError(f"{path}: no Python files")
    lines = 0
    for file in files:  # also fills the page cache, so no timed run pays for cold disk reads
        lines += file.read_bytes().count(b"\n")
    list_file = scratch / f"{path.name}.files.json"
    list_file.write_text(json.dumps([str(f) for f in files]), encoding="utf-8")
    return Corpus(path, files, lines, list_file)


def compile_torchdoctor(corpus: Corpus, project: Path, snapshot: Path) -> None:
    """One untimed run on one file, so that no timed run pays for writing .pyc files."""
    one_file = check_command("--no-cache", "--select", "ALL", str(corpus.files[0]))
    measure_row("warm-up", corpus, one_file, project, 1, ok_codes=CHECK_OK)
    if not (snapshot / "torchdoctor" / "__pycache__").is_dir():
        raise BenchmarkError(f"the checker did not import the snapshot in {snapshot}")


def floor_command(corpus: Corpus) -> list[str]:
    return [sys.executable, str(PARSE_ALL), str(corpus.list_file)]


def check_command(*arguments: str) -> list[str]:
    return [sys.executable, "-m", "torchdoctor", "check", *arguments]


def measure_row(
    label: str,
    corpus: Corpus,
    command: list[str],
    cwd: Path,
    repeat: int,
    *,
    ok_codes: tuple[int, ...] = (0,),
    timeout: float = 0,
) -> Row:
    """Run `command` `repeat` times; a run that times out ends the repeats."""
    row = Row(label, corpus, command)
    for run in range(1, repeat + 1):
        result = measure_once(command, cwd, timeout)
        if result["timed_out"]:
            row.timed_out_after = timeout
            progress(
                f"{label} [{corpus.path.name}] run {run}/{repeat}: timed out after {timeout:g} s"
            )
            break
        if result["returncode"] not in ok_codes:
            raise BenchmarkError(
                f"`{shown_command(command)}` exited with {result['returncode']}:\n"
                f"{result['stderr_tail']}"
            )
        row.seconds.append(result["wall_s"])
        row.cpu_seconds.append(result["cpu_s"])
        row.peak_bytes = max(row.peak_bytes, result["peak_rss_bytes"])
        row.outputs.add(result["stdout_digest"])
        progress(f"{label} [{corpus.path.name}] run {run}/{repeat}: {result['wall_s']:.2f} s")
    return row


def measure_once(command: list[str], cwd: Path, timeout: float) -> dict:
    wrapper = [sys.executable, str(MEASURE), "--timeout", str(timeout), "--", *command]
    done = subprocess.run(wrapper, cwd=cwd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise BenchmarkError(
            f"the measuring wrapper failed on `{shown_command(command)}`:\n{done.stderr}"
        )
    return json.loads(done.stdout)


def measure_warm(corpus: Corpus, project: Path, repeat: int, cold: Row) -> tuple[Row, list[str]]:
    """Fill the cache with one default run, then time re-runs of the unchanged tree. The cache
    lives at the corpus's project root, as it would for its users; if the benchmark made it
    there, it removes it afterwards."""
    cache_dir = project_root(corpus.path, None) / CACHE_DIR_NAME
    made_here = not cache_dir.exists()
    try:
        return _measure_warm(corpus, project, repeat, cold, cache_dir)
    finally:
        if made_here:
            shutil.rmtree(cache_dir, ignore_errors=True)


def _measure_warm(
    corpus: Corpus, project: Path, repeat: int, cold: Row, cache_dir: Path
) -> tuple[Row, list[str]]:
    command = check_command(str(corpus.path))
    populate = measure_row("populate cache", corpus, command, project, 1, ok_codes=CHECK_OK)
    if not cache_dir.is_dir():
        raise BenchmarkError(f"the cache was not written to {cache_dir}")
    before = cache_files(cache_dir)
    warm = measure_row(WARM, corpus, command, project, repeat, ok_codes=CHECK_OK)

    notes = []
    # A fully warm run writes nothing: the cache is saved only after a miss.
    if cache_files(cache_dir) != before:
        notes.append(
            "the warm re-runs rewrote the cache: some files missed it although neither "
            "the corpus nor the checker changed"
        )
    if len(cold.outputs | populate.outputs | warm.outputs) > 1:
        notes.append("cold and warm runs with the same rules printed different findings")
    return warm, notes


def cache_files(cache_dir: Path) -> dict[str, int]:
    return {p.name: p.stat().st_mtime_ns for p in cache_dir.glob("*.json")}


def ruff_row(corpus: Corpus, cwd: Path, repeat: int) -> Row:
    # --isolated: ruff's defaults, not the corpus's own [tool.ruff] settings.
    arguments = ["check", "--no-cache", "--isolated", str(corpus.path)]
    return reference_row("ruff", arguments, corpus, cwd, repeat, ok_codes=RUFF_OK, timeout=0)


def torchfix_row(corpus: Corpus, cwd: Path, timeout: float) -> Row:
    # Timed once: it is two orders of magnitude slower than the others, so noise does not matter.
    # It only parses the files that contain "torch", with all cores.
    return reference_row(
        "torchfix", [str(corpus.path)], corpus, cwd, 1, ok_codes=TORCHFIX_OK, timeout=timeout
    )


def reference_row(
    tool: str,
    arguments: list[str],
    corpus: Corpus,
    cwd: Path,
    repeat: int,
    *,
    ok_codes: tuple[int, ...],
    timeout: float,
) -> Row:
    """Another linter with its default rules, for reference; missing or failing is a note, not an error."""
    executable = shutil.which(tool)
    if executable is None:
        return Row(f"{tool} (default rules)", corpus, [tool, *arguments], note="not installed")
    label = f"{tool_version(tool, executable)} (default rules)"
    try:
        return measure_row(
            label, corpus, [executable, *arguments], cwd, repeat, ok_codes=ok_codes, timeout=timeout
        )
    except BenchmarkError as error:
        progress(str(error))
        return Row(label, corpus, [executable, *arguments], note="failed (see stderr of the run)")


def tool_version(tool: str, executable: str) -> str:
    done = subprocess.run([executable, "--version"], capture_output=True, text=True, check=False)
    output = done.stdout.split()
    version = output[-1] if output else "?"
    return f"{'TorchFix' if tool == 'torchfix' else tool} {version}"


def shown_command(command: list[str]) -> str:
    """The command as a reader would type it: no interpreter path, no temporary file names."""
    shown = []
    for part in command:
        if part == sys.executable:
            shown.append("python")
        elif part == str(PARSE_ALL):
            shown.append("benchmarks/_parse_all.py")
        elif part.endswith(".files.json"):
            shown.append("FILES.json")
        elif os.path.isabs(part) and shutil.which(os.path.basename(part)) == part:
            shown.append(os.path.basename(part))
        else:
            shown.append(part)
    return " ".join(shown)


def progress(message: str) -> None:
    print(f"bench_check: {message}", file=sys.stderr, flush=True)


# --- output ---------------------------------------------------------------------------------

COLUMNS = (
    "measurement",
    "corpus",
    "files",
    "runs",
    "wall s",
    "x floor",
    "CPU s",
    "CPU x floor",
    "peak RSS MB",
    "command",
)
NUMERIC_COLUMNS = range(2, 9)


def table_cells(report: Report) -> list[list[str]]:
    floors = {row.corpus.path: row for row in report.rows if row.label == FLOOR}
    cells = []
    for row in report.rows:
        floor = floors[row.corpus.path]
        if row.median is None:
            seconds = f"> {row.timed_out_after:g}" if row.timed_out_after else row.note
            numbers = [seconds, "-", "-", "-", "-"]
        else:
            numbers = [
                f"{row.median:.2f}",
                f"{row.median / floor.median:.2f}",
                f"{row.cpu_median:.2f}",
                f"{row.cpu_median / floor.cpu_median:.2f}",
                f"{row.peak_bytes / 2**20:.0f}",
            ]
        cells.append(
            [
                row.label,
                row.corpus.path.name,
                f"{len(row.corpus.files):,}",
                str(len(row.seconds)),
                *numbers,
                shown_command(row.command),
            ]
        )
    return cells


def environment_line(report: Report) -> str:
    corpus = report.corpus
    return (
        f"{date.today().isoformat()}, torchdoctor {__version__} ({report.revision}), "
        f"Python {platform.python_version()}, {os.cpu_count()} CPUs, {platform.system()} "
        f"{platform.machine()}, load average {report.load_at_start:.1f} at start; "
        f"corpus {corpus.path.name}: {len(corpus.files):,} files, {corpus.lines:,} lines"
    )


def target_lines(report: Report) -> list[str]:
    rows = {row.label: row for row in report.rows}
    floor = next(row for row in report.rows if row.label == FLOOR)
    cold, warm = rows[COLD_ONE_JOB], rows[WARM].median
    ratio = cold.median / floor.median
    lines = [
        (
            f"single-job cold, ALL rules: {ratio:.2f}x the floor by wall time "
            f"({cold.cpu_median / floor.cpu_median:.2f}x by CPU time) (target <= {COLD_RATIO_TARGET}x "
            f"wall): {'met' if ratio <= COLD_RATIO_TARGET else 'NOT met'}"
        ),
        (
            f"warm re-run: {warm:.2f} s (target <= {WARM_SECONDS_TARGET:g} s): "
            f"{'met' if warm <= WARM_SECONDS_TARGET else 'NOT met'}"
        ),
        (
            "peak RSS: the largest single process (main or one worker); "
            f"the parallel run has {os.cpu_count()} workers; CPU s sums all of a run's processes"
        ),
    ]
    notes = list(report.notes)
    # A single-threaded process that got less CPU than wall time waited for other work.
    if min(floor.cpu_median / floor.median, cold.cpu_median / cold.median) < BUSY_CPU_SHARE:
        notes.append(
            "the machine was busy with other work: wall times are inflated and noisy; "
            "CPU times are steadier"
        )
    return lines + [f"warning: {note}" for note in notes]


def render_text(report: Report) -> str:
    cells = table_cells(report)
    widths = [
        max(len(COLUMNS[i]), *(len(row[i]) for row in cells)) for i in range(len(COLUMNS) - 1)
    ]

    def line(values: list[str]) -> str:
        padded = [
            value.rjust(width) if i in NUMERIC_COLUMNS else value.ljust(width)
            for i, (value, width) in enumerate(zip(values[:-1], widths, strict=True))
        ]
        return "  ".join(padded + [values[-1]])  # the command, last, is not padded

    out = [environment_line(report), "", line(list(COLUMNS)), *(line(row) for row in cells), ""]
    return "\n".join(out + target_lines(report))


def render_markdown(report: Report) -> str:
    cells = table_cells(report)
    out = [
        environment_line(report) + ".",
        "",
        "| " + " | ".join(COLUMNS) + " |",
        "|"
        + "|".join("---:" if i in NUMERIC_COLUMNS else "---" for i in range(len(COLUMNS)))
        + "|",
    ]
    for row in cells:
        out.append("| " + " | ".join(row[:-1] + [f"`{row[-1]}`"]) + " |")
    out.append("")
    out += [f"- {line}" for line in target_lines(report)]
    return "\n".join(out)


def update_doc(path: Path, block: str) -> None:
    text = path.read_text(encoding="utf-8")
    start, end = text.find(DOC_START), text.find(DOC_END)
    if start < 0 or end < start:
        raise SystemExit(f"bench_check: {path} has no results block ({DOC_START} ... {DOC_END})")
    path.write_text(
        text[: start + len(DOC_START)] + "\n" + block + "\n" + text[end:], encoding="utf-8"
    )
    progress(f"updated {path}")


if __name__ == "__main__":
    sys.exit(main())
