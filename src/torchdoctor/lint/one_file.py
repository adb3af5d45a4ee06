"""Check (or fix) one file's bytes: decoded by its kind (a Python source, a notebook, a C++/CUDA
extension), checked, and with --fix written back in place. What runs in `check`'s workers."""

from __future__ import annotations

import difflib
import os
from dataclasses import replace
from functools import partial
from pathlib import Path

from torchdoctor.lint import notebook
from torchdoctor.lint.checker import check_source, fix_source, without_cyclic_gc
from torchdoctor.lint.job import FileOutcome, Job, unreadable
from torchdoctor.lint.lines import split_lines
from torchdoctor.lint.native import check_native, fix_native, is_native
from torchdoctor.lint.source import (
    SourceFile,
    UnreadableFile,
    UnwritableFile,
    decode,
    decode_native,
    encode,
    write_in_place,
)
from torchdoctor.report.finding import Finding
from torchdoctor.user_files import limit_for


def check_stdin(data: bytes, shown: str, job: Job) -> tuple[FileOutcome, str, bytes]:
    limit = limit_for(shown)
    if len(data) > limit:
        return (
            unreadable(shown, f"too large to check (over {limit // (1024 * 1024)} MiB)"),
            "",
            data,
        )
    try:
        outcome, source, fixed_text = _check_decoded(job, shown, shown, data)
    except UnreadableFile as error:
        return unreadable(shown, str(error)), "", data
    if not outcome.fixed:
        return outcome, source.text, data
    try:
        return outcome, source.text, encode(fixed_text, source.encoding)
    except UnwritableFile as error:
        return _unfixed(job, shown, shown, data, str(error)), source.text, data


@without_cyclic_gc  # the notebook's parse and the fixes too, not only the check
def process(job: Job, task: tuple[str, str, bytes]) -> FileOutcome:
    absolute, shown, data = task
    try:
        outcome, source, fixed_text = _check_decoded(job, absolute, shown, data)
    except UnreadableFile as error:
        return unreadable(shown, str(error))
    if job.mode == "fix" and outcome.fixed:
        refusal = _write_fix(absolute, data, fixed_text, source.encoding, job.write_roots)
        if refusal is not None:
            return _unfixed(job, absolute, shown, data, refusal)
    return outcome


def _check_decoded(
    job: Job, name: str, shown: str, data: bytes
) -> tuple[FileOutcome, SourceFile, str]:
    """Decode a file's bytes by its kind (`name`) and check or fix it: the outcome, the source
    and the fixed text. Raises UnreadableFile."""
    if is_native(name):
        source = decode_native(data)
        process = _process_native
    else:
        source = decode(data)
        process = _process_notebook if name.endswith(".ipynb") else _process_source
    outcome, fixed_text = process(source, shown, job)
    return outcome, source, fixed_text


def _unfixed(job: Job, name: str, shown: str, data: bytes, reason: str) -> FileOutcome:
    """A file whose fixes were not written: all of its findings, and why in one line."""
    outcome, _, _ = _check_decoded(replace(job, mode="check"), name, shown, data)
    outcome.warnings.append(f"{shown}: not fixed: {reason}")
    return outcome


def _write_fix(
    absolute: str, original: bytes, text: str, encoding: str, write_roots: tuple[str, ...]
) -> str | None:
    """Write a fixed file in place; the reason in a few words when it was not written. A
    symbolic link is written through only to a file inside `write_roots`."""
    if os.path.islink(absolute):
        target = os.path.realpath(absolute)
        if not any(target.startswith(os.path.join(root, "")) for root in write_roots):
            return f"a symbolic link to {target}, outside the checked paths"
    try:
        write_in_place(Path(absolute), original, encode(text, encoding))
    except UnwritableFile as error:
        return str(error)
    except OSError as error:
        return error.strerror or str(error)
    return None


def _process_source(
    source: SourceFile, shown: str, job: Job, check=None, fix=None
) -> tuple[FileOutcome, str]:
    check = check or partial(check_source, project=job.project)
    fix = fix or partial(fix_source, project=job.project)
    if job.mode == "check":
        result = check(source.text, shown, job.codes)
        return FileOutcome(shown, result.findings, result.internal_errors), source.text
    fixed = fix(source.text, shown, job.codes, job.unsafe)
    outcome = FileOutcome(
        shown, fixed.remaining.findings, fixed.remaining.internal_errors, fixed=fixed.fixed
    )
    if job.mode == "diff" and fixed.fixed:
        outcome.diff = _diff(source.text, fixed.source, shown)
    return outcome, fixed.source


def _process_native(source: SourceFile, shown: str, job: Job) -> tuple[FileOutcome, str]:
    """A C++/CUDA extension source: scanned as text, fixed without a re-parse."""
    check = partial(check_native, project=job.project)
    fix = partial(fix_native, project=job.project)
    return _process_source(source, shown, job, check, fix)


def _process_notebook(source: SourceFile, shown: str, job: Job) -> tuple[FileOutcome, str]:
    """Check (or fix) a notebook's code cells as one program; cells that don't parse are
    reported and left out. The fixed text is the notebook's JSON, only changed cells rewritten."""
    book = notebook.load(source.text)
    skipped, broken, tree = notebook.broken_cells(book, shown)
    notebook.join_cells(book, skipped)
    cells = [cell for cell, _ in book.line_map]  # what a cell's last statement shows
    # Parsed once, not again.
    check = partial(check_source, tree=tree, cells=cells, project=job.project)
    fix = partial(fix_source, cells=cells, project=job.project)
    outcome, fixed_source = _process_source(
        SourceFile(book.source, "utf-8"), shown, job, check, fix
    )
    outcome.findings = broken + [notebook.locate(f, book) for f in outcome.findings]
    outcome.findings.sort(key=Finding.sort_key)
    fixed_text = notebook.split_cells(book, fixed_source) if outcome.fixed else source.text
    if outcome.diff:
        outcome.diff = _diff(source.text, fixed_text, shown)
    return outcome, fixed_text


def _diff(old: str, new: str, shown: str) -> str:
    return "".join(
        difflib.unified_diff(
            split_lines(old, keepends=True),
            split_lines(new, keepends=True),
            fromfile=f"a/{shown}",
            tofile=f"b/{shown}",
        )
    )
