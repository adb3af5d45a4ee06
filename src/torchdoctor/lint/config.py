"""Settings for `check`: `[tool.torchdoctor]` in pyproject.toml, then the command line."""
from __future__ import annotations

import sys
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import pathspec

from torchdoctor.catalog import _registry
from torchdoctor.errors import UsageError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

KNOWN_KEYS = {"select", "ignore", "extend-select", "exclude", "extend-exclude", "per-file-ignores",
              "lang"}


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
            codes = {p.code for p in _registry.all_pitfalls() if p.default}
        else:
            codes = resolve(self.select)
        return frozenset((codes | resolve(self.extend_select)) - resolve(self.ignore))

    @cached_property
    def per_file_ignore_matcher(self):
        """(path relative to root) -> codes ignored there; built once per run."""
        rules = [(pathspec.PathSpec.from_lines("gitwildmatch", [pattern]), resolve(selectors))
                 for pattern, selectors in self.per_file_ignores.items()]

        def ignored(relative_path: str) -> frozenset[str]:
            codes: set[str] = set()
            for spec, selected in rules:
                if spec.match_file(relative_path):
                    codes |= selected
            return frozenset(codes)

        return ignored


def resolve(selectors: list[str]) -> set[str]:
    """Codes named by selectors: `ALL`, a code, a code prefix (`TD2`), or a rule name."""
    pitfalls = _registry.all_pitfalls()
    codes: set[str] = set()
    for raw in selectors:
        selector = raw.strip()
        if not selector:
            continue
        if selector.upper() == "ALL":
            codes |= {p.code for p in pitfalls}
            continue
        by_name = _registry.get(selector)
        if by_name is not None:
            codes.add(by_name.code)
            continue
        prefix = selector.upper()
        matched = {p.code for p in pitfalls if p.code.startswith(prefix)} if prefix.startswith("TD") else set()
        if not matched:
            raise UsageError(f"unknown rule selector {raw!r} (expected a code, a code prefix, "
                             "a rule name or ALL; see `torchdoctor rules`)")
        codes |= matched
    return codes


def find_config(start: Path) -> Path | None:
    """The nearest pyproject.toml with a [tool.torchdoctor] table, from `start` upwards."""
    start = start.resolve()
    for directory in (start, *start.parents):
        candidate = directory / "pyproject.toml"
        if candidate.is_file() and "torchdoctor" in _read_tool_tables(candidate):
            return candidate
    return None


def load(config_file: Path | None, cwd: Path) -> Settings:
    if config_file is None:
        return Settings(root=cwd.resolve())
    table = _read_tool_tables(config_file).get("torchdoctor", {})
    unknown = set(table) - KNOWN_KEYS
    if unknown:
        raise UsageError(f"{config_file}: unknown key(s) in [tool.torchdoctor]: {', '.join(sorted(unknown))}")
    settings = Settings(root=config_file.parent.resolve(), config_file=config_file)
    if "select" in table:
        settings.select = _string_list(table, "select", config_file)
    settings.extend_select = _string_list(table, "extend-select", config_file)
    settings.ignore = _string_list(table, "ignore", config_file)
    settings.exclude = (_string_list(table, "exclude", config_file)
                        + _string_list(table, "extend-exclude", config_file))
    pfi = table.get("per-file-ignores", {})
    if not isinstance(pfi, dict) or not all(isinstance(v, list) for v in pfi.values()):
        raise UsageError(f"{config_file}: per-file-ignores must map glob patterns to lists of rules")
    settings.per_file_ignores = {str(k): [str(x) for x in v] for k, v in pfi.items()}
    settings.lang = table.get("lang")
    # Validate selectors now, so a typo in the config is a clear usage error.
    settings.enabled_codes()
    settings.per_file_ignore_matcher  # built now, so a bad selector is a usage error at once
    return settings


def _read_tool_tables(path: Path) -> dict:
    try:
        with open(path, "rb") as handle:
            data = tomllib.load(handle)
    except tomllib.TOMLDecodeError as error:
        raise UsageError(f"{path}: invalid TOML: {error}") from None
    except OSError as error:
        raise UsageError(f"{path}: {error.strerror}") from None
    tool = data.get("tool", {})
    return tool if isinstance(tool, dict) else {}


def _string_list(table: dict, key: str, path: Path) -> list[str]:
    value = table.get(key, [])
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise UsageError(f"{path}: [tool.torchdoctor] {key} must be a list of strings")
    return value
