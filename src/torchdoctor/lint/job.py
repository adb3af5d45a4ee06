"""What `check` asks of each file (a Job) and what it gets back (a FileOutcome)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from torchdoctor.catalog._registry import engine_finding
from torchdoctor.lint.project import NO_FACTS, ProjectFacts
from torchdoctor.report.finding import Finding

FixMode = Literal["check", "fix", "diff"]


@dataclass
class Job:
    codes: frozenset[str]
    lang: str = "en"  # of the outcomes: findings are made in English, localized at the end
    mode: FixMode = "check"
    unsafe: bool = False
    # Where --fix may write through a symbolic link: the checked directories and the
    # directories of the checked files (see `one_file._write_fix`).
    write_roots: tuple[str, ...] = ()
    # What the rest of the project says (lint/project.py), found before any file is checked.
    project: ProjectFacts = NO_FACTS


@dataclass
class FileOutcome:
    path: str  # as shown to the user
    findings: list[Finding]
    internal_errors: list[str] = field(default_factory=list)
    fixed: int = 0
    diff: str = ""
    warnings: list[str] = field(default_factory=list)  # one line each, e.g. a fix not written


def unreadable(shown: str, reason: str) -> FileOutcome:
    """The outcome of a file that could not be read or decoded: one finding saying why."""
    return FileOutcome(shown, [engine_finding("unreadable-source", reason, shown)])
