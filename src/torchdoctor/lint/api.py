"""`torchdoctor.check(...)`: the static checker for Python callers; never imports torch."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

from torchdoctor._lang import default_lang
from torchdoctor.errors import IncompleteCheck
from torchdoctor.lint import by_config, config, files
from torchdoctor.lint.runner import Job, check_bytes, drop_per_file_ignores
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

    Each file's nearest `[tool.torchdoctor]` table (in a pyproject.toml above it) applies as on
    the command line; `select`/`ignore` take codes, prefixes, names or "ALL". Nothing is
    written: no cache, no fix. A path or file that cannot be checked raises IncompleteCheck,
    after the others were checked; its `findings` are theirs. Bad settings raise UsageError."""
    if source is None and not paths:
        raise TypeError("check() needs paths or source=")
    if source is not None and paths:
        raise TypeError("check() takes paths or source=, not both")
    cwd = Path.cwd()

    def apply_arguments(settings: config.Settings) -> None:
        if select is not None:
            settings.select = [select] if isinstance(select, str) else list(select)
        if ignore is not None:
            settings.ignore += [ignore] if isinstance(ignore, str) else list(ignore)

    configs = config.NearestConfigs(cwd, apply_arguments)
    settings = configs.for_directory(cwd.resolve())
    job = Job(codes=settings.enabled_codes(), lang=lang or settings.lang or default_lang())
    problems: list[str]
    if source is not None:
        settings = configs.for_directory(Path(filename).absolute().parent.resolve())
        data = source.encode("utf-8") if isinstance(source, str) else source
        outcome = check_bytes(data, filename, replace(job, codes=settings.enabled_codes()))[0]
        drop_per_file_ignores(outcome, Path(filename), settings)
        outcomes, problems = [outcome], []
    else:
        found = files.discover([os.fspath(p) for p in paths], settings.exclude, settings.root)
        groups, problems = by_config.group_files(found, configs, settings, force_exclude=False)
        outcomes = by_config.check_groups(groups, found, job, jobs=1, use_cache=False, cwd=cwd)
        problems = list(found.errors) + problems
    findings = sorted((f for o in outcomes for f in o.findings), key=Finding.sort_key)
    problems += [error for o in outcomes for error in o.internal_errors]
    if problems:
        raise IncompleteCheck("; ".join(problems), findings)
    return findings
