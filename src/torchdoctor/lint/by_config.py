"""Files whose nearest configs differ, checked in one run: grouped by the rules they enable."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from torchdoctor.errors import UsageError
from torchdoctor.lint import config, files
from torchdoctor.lint.runner import (
    FileOutcome,
    Job,
    check_files,
    display_path,
    drop_per_file_ignores,
)

if TYPE_CHECKING:  # imported where patterns are compiled (lint.files)
    import pathspec


def group_files(
    found: files.Discovery,
    configs: config.NearestConfigs,
    walk_settings: config.Settings,
    force_exclude: bool,
) -> tuple[list[dict[Path, config.Settings]], list[str]]:
    """The files with the settings of their nearest config, grouped by the rules enabled, each
    left out where that config's `exclude` says so (as the walk did for the config it used);
    and the configs that could not be read (their files are not checked), one line each."""
    named = {scope for scope in found.scopes if not scope.is_dir()}
    groups: dict[frozenset[str], dict[Path, config.Settings]] = {}
    excluded: dict[int, pathspec.PathSpec | files.NoPatterns] = {}
    rules: dict[int, frozenset[str]] = {}
    errors: dict[str, None] = {}
    # By directory, as text: a Path's hash costs a measurable share of a warm re-check.
    settings_in: dict[str, config.Settings | UsageError] = {}
    for path in found.files:
        directory = os.path.dirname(path)
        if directory not in settings_in:
            try:
                settings_in[directory] = configs.for_directory(path.parent)
            except UsageError as error:
                settings_in[directory] = error
        settings = settings_in[directory]
        if isinstance(settings, UsageError):
            errors[str(settings)] = None
            continue
        key = id(settings)
        if settings is not walk_settings and (force_exclude or path not in named):
            if key not in excluded:
                excluded[key] = files.compile_patterns(settings.exclude, "exclude")
            if excluded[key].match_file(display_path(path, settings.root.resolve())):
                continue
        if key not in rules:
            rules[key] = settings.enabled_codes()
        groups.setdefault(rules[key], {})[path] = settings
    return list(groups.values()), list(errors)


def check_groups(
    groups: list[dict[Path, config.Settings]],
    found: files.Discovery,
    job: Job,
    jobs: int,
    use_cache: bool,
    cwd: Path,
    on_done: Callable[[int], None] = lambda count: None,
) -> list[FileOutcome]:
    """The outcome of each grouped file, in the order of discovery: each group checked with its
    rules, each file's findings filtered by its own per-file-ignores."""
    checked: dict[Path, FileOutcome] = {}
    for group in groups:
        settings = _shared_settings(group, cwd)
        outcomes = check_files(
            list(group),
            settings,
            replace(job, codes=settings.enabled_codes()),
            jobs,
            use_cache=use_cache,
            cwd=cwd,
            scopes=found.scopes,
            on_done=on_done,
        )
        for (path, own), outcome in zip(group.items(), outcomes):
            if own is not settings:
                drop_per_file_ignores(outcome, path, own)
            checked[path] = outcome
    return [checked[path] for path in found.files if path in checked]


def _shared_settings(group: dict[Path, config.Settings], cwd: Path) -> config.Settings:
    """What the files of a group (one set of rules) are checked with: their settings when they
    have the same, else those rules alone (their own per-file-ignores are applied after). One
    check of the group, not one per config, so they share one cache file: two checks with
    the same rules would each drop the other's entries from it."""
    first = next(iter(group.values()))
    if all(settings is first for settings in group.values()):
        return first
    return replace(first, root=cwd.resolve(), per_file_ignores={}, config_file=None)
