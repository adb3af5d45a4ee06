"""What the server knows of each file's project: its settings (the nearest pyproject.toml with a
`[tool.torchdoctor]` table, as `check` reads it) and its cross-file facts (lint/project.py).

The facts are read from the files on disk once per project and kept until a file of that
project is saved: reading a large project costs much more than checking one file after an edit.
"""

from __future__ import annotations

import threading
from pathlib import Path

from torchdoctor.lint import config
from torchdoctor.lint.project import NO_FACTS, ProjectFacts, facts_for, project_root


def settings_for(path: Path | None) -> config.Settings:
    """The settings that apply to a file, as `check` finds them; defaults for a buffer that is
    not a file yet. Looked up afresh each time: the user may have edited the pyproject.toml.
    Raises UsageError for a broken configuration."""
    if path is None:
        return config.Settings(root=Path.cwd().resolve())
    return config.NearestConfigs(Path.cwd(), lambda settings: None).for_directory(
        path.parent.resolve()
    )


class ProjectFactsCache:
    """Project facts by project root, read on first use and forgotten when a file changes."""

    def __init__(self) -> None:
        self._facts: dict[Path, ProjectFacts] = {}
        self._lock = threading.Lock()  # checks run in a worker thread, saves arrive in another

    def facts_for_file(self, path: Path | None) -> ProjectFacts:
        if path is None:
            return NO_FACTS
        root = project_root(path)
        with self._lock:
            known = self._facts.get(root)
        if known is None:
            known = facts_for(root)
            with self._lock:
                self._facts[root] = known
        return known

    def forget(self, path: Path) -> None:
        """A file was saved: the facts of its project are read again when next needed."""
        root = project_root(path)
        with self._lock:
            self._facts.pop(root, None)
