"""`torchdoctor.check(...)`: the static checker for Python callers; never imports torch."""

from __future__ import annotations

import os
from pathlib import Path

from torchdoctor._lang import default_lang
from torchdoctor.errors import IncompleteCheck
from torchdoctor.lint import config, files
from torchdoctor.lint.runner import Job, check_bytes, check_files, drop_per_file_ignores
from torchdoctor.report.finding import Finding


def check(
    *paths: str | os.PathLike,
    source: str | bytes | None = None,
    filename: str = "<source>.py",
    select: str | list[str] | None = None,
    ignore: str | list[str] | None = None,
    lang: str | None = None,
) -> list[Finding]:
    """The findings of `torchdoctor check` on files and directories, or on a `source` text
    read as a file named `filename` (`.ipynb` for a notebook's JSON), sorted by place.

    The project's `[tool.torchdoctor]` table (found from the current directory) applies as on
    the command line; `select`/`ignore` take codes, prefixes, names or "ALL". Nothing is
    written: no cache, no fix. A path or file that cannot be checked raises IncompleteCheck,
    after the others were checked; its `findings` are theirs. Bad settings raise UsageError."""
    if source is None and not paths:
        raise TypeError("check() needs paths or source=")
    if source is not None and paths:
        raise TypeError("check() takes paths or source=, not both")
    cwd = Path.cwd()
    settings = config.load(config.find_config(cwd), cwd)
    if select is not None:
        settings.select = [select] if isinstance(select, str) else list(select)
    if ignore is not None:
        settings.ignore += [ignore] if isinstance(ignore, str) else list(ignore)
    job = Job(codes=settings.enabled_codes(), lang=lang or settings.lang or default_lang())
    if source is not None:
        data = source.encode("utf-8") if isinstance(source, str) else source
        outcome = check_bytes(data, filename, job)[0]
        drop_per_file_ignores(outcome, Path(filename), settings)
        outcomes, problems = [outcome], []
    else:
        found = files.discover([os.fspath(p) for p in paths], settings.exclude, settings.root)
        outcomes = check_files(
            found.files, settings, job, jobs=1, use_cache=False, cwd=cwd, scopes=found.scopes
        )
        problems = list(found.errors)
    findings = sorted((f for o in outcomes for f in o.findings), key=Finding.sort_key)
    problems += [error for o in outcomes for error in o.internal_errors]
    if problems:
        raise IncompleteCheck("; ".join(problems), findings)
    return findings
