"""Rank the causes of a parsed error: every catalog signature votes, user code is linked."""
from __future__ import annotations

import linecache
import os
from dataclasses import dataclass, field
from pathlib import Path

from torchdoctor.catalog import _registry
from torchdoctor.catalog._model import Clue, ErrorSignature, Pitfall, Text, pick
from torchdoctor.explain.model import ErrorBlock, ErrorReport, Frame
from torchdoctor.explain.parse import user_frame, user_frame_of

# Below this, a cause is not shown: "not recognised" is better than a guess dressed as an answer.
MIN_CONFIDENCE = 0.3
# How much a block's position in the output weighs: the error the program died of counts most.
_FINAL_WEIGHT = 1.0
_EARLIER_WEIGHT = 0.95
_WARNING_WEIGHT = 0.85  # a warning printed before a crash is seldom the crash's cause
_LINK_BONUS = 0.02  # a root cause found in the user's code outranks the error it explains
_MAX_LINKED_FILES = 5


@dataclass
class Location:
    path: str
    line: int | None
    source: str | None = None
    column: int | None = None

    def to_json(self) -> dict:
        return {"path": self.path, "line": self.line, "column": self.column,
                "source": self.source}


@dataclass
class Diagnosis:
    """One ranked cause of the error, with what to do about it."""

    pitfall: Pitfall
    confidence: float
    cause: str
    fix: str
    location: Location | None = None
    block: ErrorBlock | None = None
    # A line of the user's code the static checker links to this error: (location, message).
    linked: list[tuple[Location, str, str]] = field(default_factory=list)  # (loc, name, message)
    root_of: str | None = None  # for a linked root cause: the name of the error it explains

    def to_json(self, lang: str) -> dict:
        return {
            "code": self.pitfall.code,
            "name": self.pitfall.name,
            "title": pick(self.pitfall.title, lang),
            "confidence": round(self.confidence, 2),
            "cause": self.cause,
            "fix": self.fix,
            "location": self.location.to_json() if self.location else None,
            "root_of": self.root_of,
            "linked": [{"location": loc.to_json(), "name": name, "message": message}
                       for loc, name, message in self.linked],
        }


@dataclass
class Explanation:
    report: ErrorReport
    diagnoses: list[Diagnosis]
    lang: str
    internal_error: str | None = None

    def to_json(self) -> dict:
        frame = user_frame_of(self.report)
        error = self.report.to_json()
        error["user_frame"] = frame.to_json() if frame else None
        data = {"findings": [d.to_json(self.lang) for d in self.diagnoses], "error": error}
        if self.internal_error:
            data["internal_error"] = self.internal_error
        return data


def diagnose(report: ErrorReport, lang: str = "en", link: bool = True) -> Explanation:
    """The ranked causes of every error in `report`, best first."""
    best: dict[str, Diagnosis] = {}
    has_exception = bool(report.exceptions)
    final = report.final
    for block in _distinct(report.blocks):
        weight = _weight(block, final, has_exception)
        for pitfall, signature in _signatures():
            clue = _match(signature, block, report)
            if clue is None:
                continue
            confidence = min(clue.confidence * weight, 1.0)
            current = best.get(pitfall.name)
            if current is None or confidence > current.confidence:
                best[pitfall.name] = _diagnosis(pitfall, signature, clue, confidence, block,
                                                report, lang)
    _match_whole_text(report, best, lang)
    diagnoses = [d for d in best.values() if d.confidence >= MIN_CONFIDENCE]
    if link and diagnoses:
        diagnoses.extend(_link_user_code(report, diagnoses, lang))
    diagnoses.sort(key=lambda d: -d.confidence)
    return Explanation(report, _without_duplicates(diagnoses), lang)


def _signatures() -> list[tuple[Pitfall, ErrorSignature]]:
    return [(p, s) for p in _registry.all_pitfalls() for s in p.error_signatures]


def _distinct(blocks: list[ErrorBlock]) -> list[ErrorBlock]:
    """Each (type, message) once: logs repeat the same warning or assert hundreds of times.
    The last occurrence is kept, since the final exception is last."""
    seen: dict[tuple[str, str], ErrorBlock] = {}
    for block in blocks:
        seen.pop((block.type, block.message), None)
        seen[(block.type, block.message)] = block
    return list(seen.values())


def _weight(block: ErrorBlock, final: ErrorBlock | None, has_exception: bool) -> float:
    if block.kind == "warning":
        return _WARNING_WEIGHT if has_exception else _FINAL_WEIGHT
    if block is final or block.relation == "worker" or final is None:
        return _FINAL_WEIGHT
    return _EARLIER_WEIGHT


def _match(signature: ErrorSignature, block: ErrorBlock, report: ErrorReport) -> Clue | None:
    if signature.types and block.short_type not in signature.types:
        return None
    if signature.check is not None:
        return signature.check(block, report)
    found = signature.search(block.message)
    if found is None:
        return None
    return Clue(signature.confidence, signature.cause, signature.fix,
                {k: v for k, v in found.groupdict().items() if v is not None})


def _match_whole_text(report: ErrorReport, best: dict[str, Diagnosis], lang: str) -> None:
    """Type-less signatures also read the whole input: errors the parser did not split into
    blocks (a line of a compiler's output, a load_state_dict message pasted without its
    exception line) still count."""
    whole = ErrorBlock("", report.text, kind="log")
    for pitfall, signature in _signatures():
        if signature.types or pitfall.name in best:
            continue
        clue = _match(signature, whole, report)
        if clue is not None:
            best[pitfall.name] = _diagnosis(pitfall, signature, clue, clue.confidence, None,
                                            report, lang)


def _diagnosis(pitfall: Pitfall, signature: ErrorSignature, clue: Clue, confidence: float,
               block: ErrorBlock | None, report: ErrorReport, lang: str) -> Diagnosis:
    cause = _fill(clue.cause or signature.cause or pitfall.title, lang, clue.fields)
    fix = _fill(clue.fix or signature.fix or pitfall.fix_hint or pitfall.fix_title
                or {"en": f"See `torchdoctor rule {pitfall.name}`.",
                    "zh": f"详见 `torchdoctor rule {pitfall.name}`。"}, lang, clue.fields)
    return Diagnosis(pitfall, confidence, cause, fix, _location_of(block, report), block)


def _fill(text: Text, lang: str, fields: dict) -> str:
    template = pick(text, lang)
    try:
        return template.format(**fields)
    except (KeyError, IndexError, ValueError):  # a field the match did not capture
        return template


def _location_of(block: ErrorBlock | None, report: ErrorReport) -> Location | None:
    frame = None
    if block is not None:
        frame = user_frame(block.frames) if block.kind == "exception" else (
            block.frames[-1] if block.frames else None)
    frame = frame or user_frame_of(report)
    if frame is None:
        return None
    return Location(frame.path, frame.line, frame.source)


# Linking to the user's code ----------------------------------------------------------------

def _link_user_code(report: ErrorReport, diagnoses: list[Diagnosis], lang: str) -> list[Diagnosis]:
    """Run the static checker on the user's files in the traceback; a finding of the matched
    entry itself pins its location, a finding of one of its root causes becomes a cause."""
    wanted: dict[str, list[Diagnosis]] = {}
    for diagnosis in diagnoses:
        for name in (diagnosis.pitfall.name, *diagnosis.pitfall.root_causes):
            entry = _registry.get(name)
            if entry is not None and entry.static_detectors:
                wanted.setdefault(entry.code, []).append(diagnosis)
    if not wanted:
        return []
    roots: dict[str, Diagnosis] = {}
    for path, shown_as in _user_files(report):
        source = _source_of(path)
        if source is None:
            continue
        lines = source.splitlines()
        for finding in _static_findings(source, path, frozenset(wanted), lang):
            text = lines[finding.line - 1].strip() if 0 < finding.line <= len(lines) else None
            location = Location(shown_as, finding.line, text, finding.column)
            for diagnosis in wanted[finding.code]:
                diagnosis.linked.append((location, finding.name, finding.message))
                if finding.code == diagnosis.pitfall.code:
                    # Its own finding in the user's code is where the error was made: the
                    # crash line stays in `error.user_frame`.
                    if not any(name == finding.name for _, name, _ in diagnosis.linked[:-1]):
                        diagnosis.location = location
                    continue
                root = _registry.get(finding.code)
                confidence = min(diagnosis.confidence + _LINK_BONUS, 0.99)
                if root.name not in roots or roots[root.name].confidence < confidence:
                    fix = (finding.fix.title if finding.fix else
                           pick(root.fix_hint or root.title, lang))
                    roots[root.name] = Diagnosis(
                        root, confidence, finding.message, fix, location,
                        diagnosis.block, root_of=diagnosis.pitfall.name)
    return list(roots.values())


def _user_files(report: ErrorReport) -> list[tuple[Path, str]]:
    """Readable files of the user's frames, most relevant first, each once."""
    frames: list[Frame] = []
    primary = user_frame_of(report)
    if primary is not None:
        frames.append(primary)
    for block in reversed(report.blocks):
        frame = user_frame(block.frames) if block.frames else None
        if frame is not None:
            frames.append(frame)
    found: list[tuple[Path, str]] = []
    for frame in frames:
        path = Path(frame.path)
        if not _readable(frame.path):
            continue
        if all(path.resolve() != known.resolve() for known, _ in found):
            found.append((path, frame.path))
        if len(found) == _MAX_LINKED_FILES:
            break
    return found


def _readable(path: str) -> bool:
    """A Python file on disk, or code that only lives in memory (an IPython cell, registered in
    linecache under a name like `<ipython-input-3-...>` or `/tmp/ipykernel_1/2.py`)."""
    if path.endswith(".py") and os.path.isfile(path):
        return True
    return bool(linecache.getlines(path))


def _source_of(path: Path) -> str | None:
    from torchdoctor.lint.source import UnreadableFile, decode

    try:
        return decode(path.read_bytes()).text
    except (UnreadableFile, OSError):
        return "".join(linecache.getlines(os.fspath(path))) or None


def _static_findings(source: str, path: Path, codes: frozenset[str], lang: str):
    from torchdoctor.lint.checker import check_source

    return check_source(source, os.fspath(path), codes, lang).findings


def _without_duplicates(diagnoses: list[Diagnosis]) -> list[Diagnosis]:
    seen: set[str] = set()
    unique = []
    for diagnosis in diagnoses:
        if diagnosis.pitfall.name not in seen:
            seen.add(diagnosis.pitfall.name)
            unique.append(diagnosis)
    return unique
