"""Settings for `check`: `[tool.torchdoctor]` in pyproject.toml, then the command line."""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Callable

from torchdoctor._lang import LANGS
from torchdoctor.catalog import _registry
from torchdoctor.catalog._registry import resolve
from torchdoctor.errors import UsageError
from torchdoctor.lint.files import compile_patterns
from torchdoctor.user_files import read_regular_file

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

# A pyproject.toml that configures torchdoctor: `[tool.torchdoctor...]`, `tool.torchdoctor.x = `,
# or `torchdoctor = ` / `torchdoctor.x = ` under [tool] (not a dependency like "torchdoctor==1").
_MENTIONS_TORCHDOCTOR = re.compile(
    rb"tool\s*\.\s*[\"']?torchdoctor\b|^[ \t]*[\"']?torchdoctor[\"']?[ \t]*(\.|=(?!=))",
    re.MULTILINE,
)
KNOWN_KEYS = {
    "select",
    "ignore",
    "extend-select",
    "exclude",
    "extend-exclude",
    "per-file-ignores",
    "lang",
}


@dataclass
class Settings:
    root: Path
    select: list[str] | None = None
    extend_select: list[str] = field(default_factory=list)
    ignore: list[str] = field(default_factory=list)
    exclude: list[str] = field(default_factory=list)
    per_file_ignores: dict[str, list[str]] = field(default_factory=dict)
    lang: str | None = None
    config_file: Path | None = None

    def enabled_codes(self) -> frozenset[str]:
        """Default rules, or `select`, plus `extend-select`, minus `ignore`."""
        if self.select is None:
            codes = set(_registry.default_codes())
        else:
            codes = resolve(self.select)
        return frozenset((codes | resolve(self.extend_select)) - resolve(self.ignore))

    @cached_property
    def per_file_ignore_matcher(self):
        """(path relative to root) -> codes ignored there; built once per run."""
        import pathspec  # here: most runs have no per-file-ignores, and its import is slow

        rules = [
            (pathspec.PathSpec.from_lines("gitwildmatch", [pattern]), resolve(selectors))
            for pattern, selectors in self.per_file_ignores.items()
        ]

        def ignored(relative_path: str) -> frozenset[str]:
            codes: set[str] = set()
            for spec, selected in rules:
                if spec.match_file(relative_path):
                    codes |= selected
            return frozenset(codes)

        return ignored


def find_config(start: Path) -> Path | None:
    """The nearest pyproject.toml with a [tool.torchdoctor] table, from `start` upwards."""
    start = start.resolve()
    for directory in (start, *start.parents):
        if _configures_torchdoctor(directory / "pyproject.toml"):
            return directory / "pyproject.toml"
    return None


def _configures_torchdoctor(candidate: Path) -> bool:
    """Whether `candidate` is a pyproject.toml with a [tool.torchdoctor] table. One that cannot
    be read or parsed is passed over unless it mentions torchdoctor (then: UsageError): a
    broken file of an unrelated project above this one is not ours to report."""
    if not candidate.is_file():
        return False
    try:
        data = read_regular_file(candidate)
    except OSError:
        return False
    try:
        tables = _parse_tool_tables(data, candidate)
    except UsageError:
        if _MENTIONS_TORCHDOCTOR.search(data):
            raise
        return False
    return "torchdoctor" in tables


class NearestConfigs:
    """The settings of each file, as ruff finds them: from the nearest pyproject.toml with a
    [tool.torchdoctor] table above the file (parent configs are not merged; default settings
    where there is none), or from the one `config_file` given on the command line. `adjust`
    puts the command line's options over each. Each directory is looked at once and each
    config read once, however many files share them."""

    def __init__(
        self, cwd: Path, adjust: Callable[[Settings], None], config_file: Path | None = None
    ) -> None:
        self._cwd = cwd
        self._adjust = adjust
        self._config_file = config_file
        # By directory: its nearest config (None: none), or why it cannot be used.
        self._nearest: dict[Path, Path | None | UsageError] = {}
        self._settings: dict[Path | None, Settings | UsageError] = {}

    def for_directory(self, directory: Path) -> Settings:
        """The settings of the files in `directory` (resolved, as discovery gives them);
        UsageError for a config that is broken."""
        config_file = self._config_file
        if config_file is None:
            config_file = self._find(directory)
        if config_file not in self._settings:
            try:
                settings = load(config_file, self._cwd)
                self._adjust(settings)
                self._settings[config_file] = settings
            except UsageError as error:
                self._settings[config_file] = error
        settings_or_error = self._settings[config_file]
        if isinstance(settings_or_error, UsageError):
            raise UsageError(str(settings_or_error))
        return settings_or_error

    def _find(self, start: Path) -> Path | None:
        walked = []
        directory = start
        while directory not in self._nearest:
            walked.append(directory)
            try:
                if _configures_torchdoctor(directory / "pyproject.toml"):
                    self._nearest[directory] = directory / "pyproject.toml"
                elif directory.parent == directory:
                    self._nearest[directory] = None
                else:
                    directory = directory.parent
            except UsageError as error:
                self._nearest[directory] = error
        found = self._nearest[directory]
        for below in walked:
            self._nearest[below] = found
        if isinstance(found, UsageError):
            raise UsageError(str(found))
        return found


def load(config_file: Path | None, cwd: Path) -> Settings:
    if config_file is None:
        return Settings(root=cwd.resolve())
    table = _read_tool_tables(config_file).get("torchdoctor", {})
    if not isinstance(table, dict):
        raise UsageError(
            f"{config_file}: [tool.torchdoctor] must be a table, not {_toml_type(table)}"
        )
    unknown = set(table) - KNOWN_KEYS
    if unknown:
        raise UsageError(
            f"{config_file}: unknown key(s) in [tool.torchdoctor]: {', '.join(sorted(unknown))}"
        )
    settings = Settings(root=config_file.parent.resolve(), config_file=config_file)
    if "select" in table:
        settings.select = _string_list(table, "select", config_file)
    settings.extend_select = _string_list(table, "extend-select", config_file)
    settings.ignore = _string_list(table, "ignore", config_file)
    for key in ("exclude", "extend-exclude"):
        patterns = _string_list(table, key, config_file)
        compile_patterns(patterns, f"{config_file}: [tool.torchdoctor] {key}")
        settings.exclude += patterns
    settings.per_file_ignores = _per_file_ignores(table, config_file)
    settings.lang = _lang(table, config_file)
    # Validate selectors now, so a typo in the config is a clear usage error.
    settings.enabled_codes()
    settings.per_file_ignore_matcher  # built now, so a bad selector is a usage error at once
    return settings


def _read_tool_tables(path: Path) -> dict:
    try:
        data = read_regular_file(path)
    except OSError as error:
        raise UsageError(f"{path}: {error.strerror or error}") from None
    return _parse_tool_tables(data, path)


def _parse_tool_tables(data: bytes, path: Path) -> dict:
    try:
        parsed = tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError as error:
        raise UsageError(f"{path}: invalid TOML: not UTF-8 (byte {error.start})") from None
    except tomllib.TOMLDecodeError as error:
        raise UsageError(f"{path}: invalid TOML: {error}") from None
    tool = parsed.get("tool", {})
    return tool if isinstance(tool, dict) else {}


def _string_list(table: dict, key: str, path: Path) -> list[str]:
    return _strings(table.get(key, []), key, path)


def _strings(value: object, key: str, path: Path) -> list[str]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        raise UsageError(
            f"{path}: [tool.torchdoctor] {key} must be a list of strings, not {_toml_type(value)}"
        )
    wrong = next((v for v in value if not isinstance(v, str)), None)
    if wrong is not None:
        raise UsageError(
            f"{path}: [tool.torchdoctor] {key} must be a list of strings, "
            f"not a list holding {_toml_type(wrong)}"
        )
    return value


def _per_file_ignores(table: dict, path: Path) -> dict[str, list[str]]:
    value = table.get("per-file-ignores", {})
    expected = "a table of glob patterns to lists of rules"
    if not isinstance(value, dict):
        raise UsageError(
            f"{path}: [tool.torchdoctor] per-file-ignores must be {expected}, "
            f"not {_toml_type(value)}"
        )
    ignores = {}
    for pattern, rules in value.items():
        compile_patterns([pattern], f"{path}: [tool.torchdoctor] per-file-ignores")
        ignores[pattern] = _strings(rules, f"per-file-ignores.{pattern!r}", path)
    return ignores


def _lang(table: dict, path: Path) -> str | None:
    value = table.get("lang")
    if value is not None and value not in LANGS:
        shown = repr(value) if isinstance(value, str) else _toml_type(value)
        raise UsageError(
            f"{path}: [tool.torchdoctor] lang must be one of "
            f"{', '.join(map(repr, LANGS))}, not {shown}"
        )
    return value


def _toml_type(value: object) -> str:
    """What a TOML value is, in TOML's words."""
    for kind, name in (
        (bool, "a boolean"),
        (int, "an integer"),
        (float, "a float"),
        (str, "a string"),
        (list, "an array"),
        (dict, "a table"),
    ):
        if isinstance(value, kind):
            return name
    return "a date or time"
