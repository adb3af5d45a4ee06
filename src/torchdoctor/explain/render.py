"""Explanations as text for people (the JSON form is Explanation.to_json)."""

from __future__ import annotations

from torchdoctor.explain.match import Diagnosis, Explanation
from torchdoctor.explain.parse import user_frame_of
from torchdoctor.report import strings
from torchdoctor.report.render import printable

# Causes shown in full; the rest are listed by name only.
_SHOWN_IN_FULL = 3


def as_text(explanation: Explanation) -> str:
    if explanation.failures:
        return _failures(explanation.failures)
    labels = strings.labels("explain", explanation.lang)
    report = explanation.report
    lines: list[str] = []
    final = report.final or (report.blocks[-1] if report.blocks else None)
    if final is None and not explanation.diagnoses:
        lines.append(f"{labels['header']}: {labels['nothing']}")
        return "\n".join(lines) + "\n"
    if final is None:  # a training log whose text alone tells (`loss: nan`)
        lines.append(f"{labels['header']}: {labels['log']}")
    else:
        lines.append(f"{labels['header']}: {_headline(final.type, final.message)}")
    frame = user_frame_of(report)
    if frame is not None:
        where = f"{frame.path}:{frame.line}" if frame.line else frame.path
        lines.append(f"  {labels['at']} {where}" + (f": {frame.source}" if frame.source else ""))
    if not explanation.diagnoses:
        lines.append("")
        lines.append(labels["unknown"])
        lines.append(
            f"  {labels['parsed']}: {final.type or '(log)'}: {_headline('', final.message)}"
        )
        return _shown(lines)
    for diagnosis in explanation.diagnoses[:_SHOWN_IN_FULL]:
        lines.append("")
        lines.extend(_diagnosis(diagnosis, labels, explanation.lang))
    rest = explanation.diagnoses[_SHOWN_IN_FULL:]
    if rest:
        lines.append("")
        lines.append(
            f"{labels['others']}: "
            + ", ".join(f"{d.pitfall.name} ({d.confidence:.0%})" for d in rest)
        )
    return _shown(lines)


def _failures(failures: list[tuple[str, Explanation]]) -> str:
    """A pytest report's failures, in its order: each test's explanation under its name."""
    parts = [
        printable(f"[{k}/{len(failures)}] {test}") + "\n" + as_text(part)
        for k, (test, part) in enumerate(failures, 1)
    ]
    return "\n".join(parts)


def _shown(lines: list[str]) -> str:
    """The lines as a terminal may show them: the error's own text can hold control characters
    (a stray escape sequence, a carriage return, a binary log), shown escaped."""
    return "".join(printable(line) + "\n" for text in lines for line in text.split("\n"))


def _diagnosis(diagnosis: Diagnosis, labels: dict, lang: str) -> list[str]:
    from torchdoctor.catalog import pick

    pitfall = diagnosis.pitfall
    lines = [
        f"{pitfall.code} {pitfall.name} ({labels['confidence']} {diagnosis.confidence:.0%}): "
        f"{pick(pitfall.title, lang)}"
    ]
    if diagnosis.location is not None:
        location = diagnosis.location
        where = f"{location.path}:{location.line}" if location.line else location.path
        lines.append(
            f"  {labels['at']} {where}" + (f": {location.source}" if location.source else "")
        )
    if diagnosis.root_of:
        lines.append(f"  {labels['root']} {diagnosis.root_of}")
    lines.append(f"  {labels['cause']}: {diagnosis.cause}")
    for location, name, message in diagnosis.linked:
        if name == pitfall.name and diagnosis.location == location:
            continue
        lines.append(
            f"  {labels['linked']}: {location.path}:{location.line}"
            + (f" `{location.source}`" if location.source else "")
            + f" ({name})"
        )
    lines.append(f"  {labels['fix']}: {diagnosis.fix}")
    lines.append(f"  {labels['more']}: torchdoctor rule {pitfall.name}")
    return lines


def _headline(kind: str, message: str, limit: int = 300) -> str:
    first = " ".join(message.strip().splitlines()[:1]) if message else ""
    if len(first) > limit:
        first = first[: limit - 3] + "..."
    return f"{kind}: {first}" if kind else first
