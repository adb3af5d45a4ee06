"""Rank the causes of a parsed error: every catalog signature votes, user code is linked."""

from __future__ import annotations

import linecache
import os
import re
from dataclasses import dataclass, field
from typing import Callable

from torchdoctor._regex import lazy_compile
from torchdoctor.catalog import _registry
from torchdoctor.catalog._model import Clue, ErrorSignature, Pitfall, Text, pick
from torchdoctor.catalog._registry import IndexedSignature
from torchdoctor.explain.model import ErrorBlock, ErrorReport, Frame
from torchdoctor.explain.parse import pytest_failures, user_frame, user_frame_of
from torchdoctor.report import json_output, strings
from torchdoctor.report.localize import localize
from torchdoctor.user_files import read_regular_file

# Below this, a cause is not shown: "not recognised" is better than a guess dressed as an answer.
MIN_CONFIDENCE = 0.3
# How much a block's position in the output weighs: the first exception counts most.
_ROOT_WEIGHT = 1.0
_EARLIER_WEIGHT = 0.95
_WARNING_WEIGHT = 0.85  # a warning printed before a crash is seldom the crash's cause
_LINK_BONUS = 0.02  # a root cause found in the user's code outranks the error it explains
# A cause whose premise the user's code contradicts keeps this share of its confidence: below
# the general answer of the same error, still shown when nothing else is.
_CONTRADICTED = 0.6
_MAX_LINKED_FILES = 5
# A message pasted alone (an issue title, a chat line, a notebook's last line) has no exception
# class to check a signature's `types` against: its answers count a little less, and less again
# when only another capitalisation matches.
_MESSAGE_LINES = 12
_MESSAGE_WEIGHT = 0.95
_FOLDED_WEIGHT = 0.9
_folded: dict[str, re.Pattern] = {}
# An error message quoted in an issue's prose: "there is a mismatch: `Expected input batch_size
# (8) to match target batch_size (32)`", or in double quotes, or a short code span over a few
# lines (an editor's "Exception has occurred: ..." pasted between backticks). Read only when
# the text holds no exception the parser found; the first few spans long enough to be a message.
_INLINE_CODE = lazy_compile(r"`([^`]{20,400})`|[\"\u201c]([^\"\u201c\u201d\n]{20,400})[\"\u201d]")
_INLINE_SPANS = 20
_INLINE_WEIGHT = 0.9
_APOSTROPHES = str.maketrans("\u2018\u2019", "''")
# A message retyped with a Chinese or Japanese input method carries full-width forms of ASCII
# (`srcIndex ＜ srcSelectDimSize`, `（1x2 and 3x4）`): read them as the ASCII torch printed.
_FULL_WIDTH = {0x3000: " ", **{code: code - 0xFEE0 for code in range(0xFF01, 0xFF5F)}}


@dataclass
class Location:
    path: str
    line: int | None
    source: str | None = None
    column: int | None = None  # known for a line the static checker found: a span
    function: str | None = None

    def to_json(self) -> dict:
        if self.column is None:
            return json_output.frame(self.path, self.line, self.function, self.source)
        return json_output.span(self.path, self.line, self.column, source=self.source)


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
    # The premise check of the clue behind it (see Clue.contradicted_by).
    contradicted_by: Callable[[list[str]], bool] | None = None

    def to_json(self, lang: str) -> dict:
        # `fix` is the text of what to do, as before: an explanation edits nothing.
        return {
            "code": self.pitfall.code,
            "name": self.pitfall.name,
            "title": pick(self.pitfall.title, lang),
            "message": self.cause,
            "origin": "explain",
            "fix": self.fix,
            "root_of": self.root_of,
            "linked": [
                {"location": loc.to_json(), "name": name, "message": message}
                for loc, name, message in self.linked
            ],
            **json_output.shared_fields(
                self.location.to_json() if self.location else None,
                confidence=round(self.confidence, 2),
                cause=self.cause,
            ),
        }


@dataclass
class Explanation:
    report: ErrorReport
    diagnoses: list[Diagnosis]
    lang: str
    internal_error: str | None = None
    # Why a user file named in the error was not linked to it (one line), when one was not.
    link_problem: str | None = None
    # A pytest report of several failures: each failing test and its own explanation, in order.
    failures: list[tuple[str, Explanation]] = field(default_factory=list)

    def to_json(self) -> dict:
        frame = user_frame_of(self.report)
        error = self.report.to_json()
        error["user_frame"] = frame.to_json() if frame else None
        data = {"findings": [d.to_json(self.lang) for d in self.diagnoses], "error": error}
        if self.failures:
            data["failures"] = [{"test": test, **part.to_json()} for test, part in self.failures]
        if self.internal_error:
            data["internal_error"] = self.internal_error
        if self.link_problem:
            data["link_problem"] = self.link_problem
        return data


def diagnose(report: ErrorReport, lang: str = "en", link: bool = True) -> Explanation:
    """The ranked causes of every error in `report`, best first."""
    failures = pytest_failures(report)
    if len(failures) > 1:
        return _each_failure(report, failures, lang, link)
    return _diagnose(report, lang, link)


def _diagnose(report: ErrorReport, lang: str, link: bool) -> Explanation:
    best: dict[str, Diagnosis] = {}
    has_exception = bool(report.exceptions)
    # Of several exceptions, the first printed is the root: a chained exception, another rank's
    # timeout, a second crash while handling the first all follow from it.
    exceptions = report.exceptions
    first = exceptions[0] if exceptions else None
    signatures = _registry.error_signatures()
    for block in _distinct(report.blocks):
        weight = _weight(block, first, has_exception)
        for indexed in signatures:
            found = _match(indexed, block, report)
            if found is None:
                continue
            pitfall, signature, clue = found
            confidence = min(clue.confidence * weight, 1.0)
            _keep_better(best, pitfall, signature, clue, confidence, block, report, lang)
    _match_whole_text(report, best, lang)
    _match_message_alone(report, best, lang)
    if not best and not has_exception:
        _match_inline_code(report, best, lang)
    if not has_exception:
        _warnings_below_errors(best)
    diagnoses = [d for d in best.values() if d.confidence >= MIN_CONFIDENCE]
    link_problem = None
    if link and diagnoses:
        try:
            roots, link_problem = _link_user_code(report, diagnoses, lang)
        except Exception as error:  # the link is a bonus: never the cost of the answer
            roots, link_problem = [], f"could not link the error to your code: {_why(error)}"
        diagnoses.extend(roots)
    diagnoses.sort(key=lambda d: -d.confidence)
    return Explanation(report, _without_duplicates(diagnoses), lang, link_problem=link_problem)


def _warnings_below_errors(best: dict[str, Diagnosis]) -> None:
    """Without a printed exception, an error read elsewhere (a title, a log line, the whole
    input) still outranks a warning: a warning printed before a crash is seldom its cause."""
    if not any(d.block is None or d.block.kind != "warning" for d in best.values()):
        return
    for diagnosis in best.values():
        if diagnosis.block is not None and diagnosis.block.kind == "warning":
            diagnosis.confidence *= _WARNING_WEIGHT


def _each_failure(
    report: ErrorReport, failures: list[tuple[str, ErrorReport]], lang: str, link: bool
) -> Explanation:
    """Each failure of a pytest report explained on its own; the causes of the first failure
    come first, as the first root cause of a log does."""
    parts = [(test, _diagnose(part, lang, link)) for test, part in failures]
    diagnoses = [d for _, part in parts for d in part.diagnoses]
    link_problem = next((p.link_problem for _, p in parts if p.link_problem), None)
    return Explanation(report, _without_duplicates(diagnoses), lang, None, link_problem, parts)


def _distinct(blocks: list[ErrorBlock]) -> list[ErrorBlock]:
    """Each (type, message) once: logs repeat the same warning or assert hundreds of times.
    The first occurrence is kept, since the first exception is the root."""
    seen: dict[tuple[str, str], ErrorBlock] = {}
    for block in blocks:
        seen.setdefault((block.type, block.message), block)
    return list(seen.values())


def _weight(block: ErrorBlock, first: ErrorBlock | None, has_exception: bool) -> float:
    if block.kind == "warning":
        return _WARNING_WEIGHT if has_exception else _ROOT_WEIGHT
    if block is first or block.relation == "worker" or first is None:
        return _ROOT_WEIGHT
    return _EARLIER_WEIGHT


# What a signature makes of a block: its entry, the signature itself, and the clue.
Found = tuple[Pitfall, ErrorSignature, Clue]


def _match(indexed: IndexedSignature, block: ErrorBlock, report: ErrorReport) -> Found | None:
    if indexed.types and block.short_type not in indexed.types:
        return None
    return _clue(indexed, block, report)


def _clue(indexed: IndexedSignature, block: ErrorBlock, report: ErrorReport) -> Found | None:
    """What the signature makes of the block, its exception types aside. A regex the index
    finds nothing with leaves its entry unimported; the index's match is the signature's own
    (the same regex and flags, kept equal to the catalog by tests/test_catalog_index.py)."""
    found = None
    if indexed.regex is not None:
        found = _search(indexed, block.message)
        if found is None:
            return None
    elif indexed.literals and not _holds_a_word(indexed.literals, report):
        return None
    pitfall, signature = indexed.load()
    if signature.check is not None:
        clue = signature.check(block, report)
        return None if clue is None else (pitfall, signature, clue)
    if found is None or _premise_denied(signature, report):
        return None
    return pitfall, signature, _regex_clue(signature, found)


def _holds_a_word(words: tuple[str, ...], report: ErrorReport) -> bool:
    """Whether the input holds one of a function signature's `words`, in any capitalisation;
    answered once per input (asked for every block of a log, reading the whole input each
    time would be quadratic)."""
    known = report.once(_words_held)
    held = known.get(words)
    if held is None:
        folded = report.once(folded_text)
        held = known[words] = any(word in folded for word in words)
    return held


def _words_held(report: ErrorReport) -> dict[tuple[str, ...], bool]:
    return {}


def folded_text(report: ErrorReport) -> str:
    """The input as the `words` of function signatures are read in: lower case, full-width
    forms and typographic apostrophes as ASCII, without markdown's backticks and bold."""
    text = report.text.translate(_FULL_WIDTH).translate(_APOSTROPHES)
    return text.lower().replace("`", "").replace("**", "")


def _premise_denied(signature: ErrorSignature, report: ErrorReport) -> bool:
    return signature.unless is not None and report.search(signature.unless) is not None


def _search(signature: IndexedSignature, message: str) -> re.Match | None:
    found = signature.search(message)
    if found is None and ("`" in message or "**" in message):
        # Markdown's inline code and bold, as issues retype a message: "Can't call `numpy()`
        # on ...", "Couldn't export operator **aten::upsample_bilinear2d**"
        found = signature.search(message.replace("`", "").replace("**", ""))
    if found is None and ("\u2019" in message or "\u2018" in message):
        # Typographic apostrophes, as editors and web pages retype one: "can’t convert ..."
        found = signature.search(message.translate(_APOSTROPHES))
    return found


def _regex_clue(signature: ErrorSignature, found: re.Match) -> Clue:
    fields = {k: v for k, v in found.groupdict().items() if v is not None}
    return Clue(signature.confidence, signature.cause, signature.fix, fields)


def _match_whole_text(report: ErrorReport, best: dict[str, Diagnosis], lang: str) -> None:
    """Type-less signatures also read the whole input: errors the parser did not split into
    blocks (a line of a compiler's output, a load_state_dict message pasted without its
    exception line) still count."""
    whole = ErrorBlock("", report.text, kind="log")
    for indexed in _registry.error_signatures():
        if indexed.types or indexed.name in best:
            continue
        found = _match(indexed, whole, report)
        if found is not None:
            pitfall, signature, clue = found
            best[pitfall.name] = _diagnosis(
                pitfall, signature, clue, clue.confidence, None, report, lang
            )


def _match_message_alone(report: ErrorReport, best: dict[str, Diagnosis], lang: str) -> None:
    """A short input without a traceback or warning is one message: every signature reads it,
    whatever its exception types, and in any capitalisation."""
    message = _message_alone(report)
    if message is None:
        return
    folded = message.message.lower()
    for indexed in _registry.error_signatures():
        found = _clue(indexed, message, report)
        weight = _MESSAGE_WEIGHT
        if found is None and indexed.regex:
            found = _match_folded(indexed, message.message, folded, report)
            weight = _MESSAGE_WEIGHT * _FOLDED_WEIGHT
        if found is None:
            continue
        pitfall, signature, clue = found
        confidence = clue.confidence * weight
        _keep_better(best, pitfall, signature, clue, confidence, None, report, lang)


def _match_inline_code(report: ErrorReport, best: dict[str, Diagnosis], lang: str) -> None:
    """Messages quoted as inline code in prose, each read as a message alone."""
    signatures = _registry.error_signatures()
    for number, quoted in enumerate(_INLINE_CODE.finditer(report.text)):
        if number == _INLINE_SPANS:
            break
        span = ErrorBlock("", (quoted.group(1) or quoted.group(2)).strip(), kind="log")
        for indexed in signatures:
            found = _clue(indexed, span, report)
            if found is None:
                continue
            pitfall, signature, clue = found
            confidence = clue.confidence * _MESSAGE_WEIGHT * _INLINE_WEIGHT
            _keep_better(best, pitfall, signature, clue, confidence, None, report, lang)


def _keep_better(
    best: dict[str, Diagnosis],
    pitfall: Pitfall,
    signature: ErrorSignature,
    clue: Clue,
    confidence: float,
    block: ErrorBlock | None,
    report: ErrorReport,
    lang: str,
) -> None:
    """Keep this cause of `pitfall` unless one at least as confident is kept already."""
    current = best.get(pitfall.name)
    if current is None or confidence > current.confidence:
        best[pitfall.name] = _diagnosis(pitfall, signature, clue, confidence, block, report, lang)


def _message_alone(report: ErrorReport) -> ErrorBlock | None:
    """The input as one message, when it is short and holds no frame and no warning."""
    if any(b.frames or b.kind == "warning" for b in report.blocks):
        return None
    lines = [line.strip() for line in report.text.split("\n") if line.strip()]
    if not lines or len(lines) > _MESSAGE_LINES:
        return None
    return ErrorBlock("", "\n".join(lines).translate(_FULL_WIDTH), kind="log")


def _match_folded(
    indexed: IndexedSignature, message: str, folded: str, report: ErrorReport
) -> Found | None:
    """The signature's regex in any capitalisation: titles and chat lines retype the message."""
    found = _search_folded(indexed, message, folded)
    if found is None:
        return None
    pitfall, signature = indexed.load()
    if _premise_denied(signature, report):
        return None
    return pitfall, signature, _regex_clue(signature, found)


def _search_folded(signature: IndexedSignature, message: str, folded: str) -> re.Match | None:
    regex = signature.regex or ""
    if signature.literals and not any(literal.lower() in folded for literal in signature.literals):
        return None
    pattern = _folded.get(regex)
    if pattern is None:
        pattern = _folded[regex] = re.compile(regex, re.S | re.I)
    return pattern.search(message)


def _diagnosis(
    pitfall: Pitfall,
    signature: ErrorSignature,
    clue: Clue,
    confidence: float,
    block: ErrorBlock | None,
    report: ErrorReport,
    lang: str,
) -> Diagnosis:
    cause = _fill(clue.cause or signature.cause or pitfall.title, lang, clue.fields)
    fix = _fill(
        clue.fix
        or signature.fix
        or pitfall.fix_hint
        or pitfall.fix_title
        or strings.in_every_language("explain.see_rule", name=pitfall.name),
        lang,
        clue.fields,
    )
    location = _location_of(block, report)
    return Diagnosis(
        pitfall, confidence, cause, fix, location, block, contradicted_by=clue.contradicted_by
    )


def _fill(text: Text, lang: str, fields: dict) -> str:
    template = pick(text, lang)
    try:
        return template.format(**fields)
    except (KeyError, IndexError, ValueError):  # a field the match did not capture
        return template


def _location_of(block: ErrorBlock | None, report: ErrorReport) -> Location | None:
    frame = None
    if block is not None:
        frame = (
            user_frame(block.frames)
            if block.kind == "exception"
            else (block.frames[-1] if block.frames else None)
        )
    frame = frame or user_frame_of(report)
    if frame is None:
        return None
    return Location(frame.path, frame.line, frame.source, function=frame.function)


# Linking to the user's code ----------------------------------------------------------------


def _link_user_code(
    report: ErrorReport, diagnoses: list[Diagnosis], lang: str
) -> tuple[list[Diagnosis], str | None]:
    """Run the static checker on the user's files in the traceback; a finding of the matched
    entry itself pins its location, a finding of one of its root causes becomes a cause.

    Returns the root causes found, and why the first file that could not be linked was not.
    The link is a bonus: whatever goes wrong with a file, the diagnosis stands without it."""
    wanted: dict[str, list[Diagnosis]] = {}
    for diagnosis in diagnoses:
        for name in (diagnosis.pitfall.name, *diagnosis.pitfall.root_causes):
            entry = _registry.get(name)
            if entry is not None and entry.static_detectors:
                wanted.setdefault(entry.code, []).append(diagnosis)
    premised = [d for d in diagnoses if d.contradicted_by is not None]
    if not wanted and not premised:
        return [], None
    roots: dict[str, Diagnosis] = {}
    sources: list[str] = []
    problem = None
    for path in _user_files(report):
        try:
            why = _link_file(path, wanted, roots, lang, sources)
        except Exception as error:  # the checker's own failure: this file is not linked
            why = _why(error)
        if why and problem is None:
            problem = f"could not link the error to {path}: {why}"
    if sources:
        for diagnosis in premised:
            if diagnosis.contradicted_by(sources):  # type: ignore[misc]
                diagnosis.confidence *= _CONTRADICTED
    return list(roots.values()), problem


def _link_file(
    path: str,
    wanted: dict[str, list[Diagnosis]],
    roots: dict[str, Diagnosis],
    lang: str,
    sources: list[str],
) -> str | None:
    """Link the findings of one file to the diagnoses that want them, and keep its text in
    `sources` for the causes' premises; None, or why not."""
    from torchdoctor.lint.lines import split_lines
    from torchdoctor.lint.source import UnreadableFile

    try:
        source = _source_of(path)
    except FileNotFoundError:  # a traceback from another machine: nothing to say
        return None
    except (UnreadableFile, OSError) as error:
        return getattr(error, "strerror", None) or str(error)
    sources.append(source)
    if not wanted:
        return None
    result = _static_findings(source, path, frozenset(wanted), lang)
    why = result.internal_errors[0] if result.internal_errors else None
    lines = split_lines(source)
    for finding in result.findings:
        if finding.code not in wanted:  # the engine's own finding: the file does not parse
            why = why or f"line {finding.line}: {finding.message}"
            continue
        text = lines[finding.line - 1].strip() if 0 < finding.line <= len(lines) else None
        location = Location(path, finding.line, text, finding.column)
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
                fix = finding.fix.title if finding.fix else pick(root.fix_hint or root.title, lang)
                roots[root.name] = Diagnosis(
                    root,
                    confidence,
                    finding.message,
                    fix,
                    location,
                    diagnosis.block,
                    root_of=diagnosis.pitfall.name,
                )
    return why


def _user_files(report: ErrorReport) -> list[str]:
    """Files of the user's frames that may be read, most relevant first, each once."""
    frames: list[Frame] = []
    primary = user_frame_of(report)
    if primary is not None:
        frames.append(primary)
    for block in reversed(report.blocks):
        frame = user_frame(block.frames) if block.frames else None
        if frame is not None:
            frames.append(frame)
    found: list[str] = []
    seen: set[str] = set()
    for frame in frames:
        if not _may_read(frame.path):
            continue
        identity = _identity(frame.path)
        if identity not in seen:
            seen.add(identity)
            found.append(frame.path)
        if len(found) == _MAX_LINKED_FILES:
            break
    return found


def _may_read(path: str) -> bool:
    """A Python file on disk (anything under that name: `_source_of` reads only a regular file),
    or code that only lives in memory (an IPython cell)."""
    return _in_memory(path) is not None or (path.endswith(".py") and os.path.lexists(path))


def _identity(path: str) -> str:
    try:
        return os.path.realpath(path)
    except (OSError, ValueError):  # a name the system cannot resolve: itself
        return path


def _in_memory(path: str) -> list[str] | None:
    """The lines IPython keeps in linecache for a cell (`<ipython-input-3-...>`, or
    `/tmp/ipykernel_1/2.py`): entries without a modification time, never read from disk."""
    entry = linecache.cache.get(path)
    if isinstance(entry, tuple) and len(entry) == 4 and entry[1] is None:
        return entry[2]
    return None


def _source_of(path: str) -> str:
    """The text of a user file: a cell kept in memory, or a regular file read with the
    checker's size limit (a FIFO would block, a device never end). Raises OSError or
    UnreadableFile."""
    from torchdoctor.lint.source import decode

    lines = _in_memory(path)
    if lines is not None:
        return "".join(lines)
    return decode(read_regular_file(path)).text


def _static_findings(source: str, path: str, codes: frozenset[str], lang: str):
    from torchdoctor.lint.checker import check_source

    result = check_source(source, path, codes)
    localize(result.findings, lang)
    return result


def _why(error: Exception) -> str:
    return f"{type(error).__name__}: {error}"


def _without_duplicates(diagnoses: list[Diagnosis]) -> list[Diagnosis]:
    seen: set[str] = set()
    unique = []
    for diagnosis in diagnoses:
        if diagnosis.pitfall.name not in seen:
            seen.add(diagnosis.pitfall.name)
            unique.append(diagnosis)
    return unique
