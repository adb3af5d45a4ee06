"""`torchdoctor.explain(...)`: the explainer for Python callers, never raising."""

from __future__ import annotations

from torchdoctor.explain.match import Explanation, diagnose
from torchdoctor.explain.model import ErrorReport
from torchdoctor.explain.parse import _safe_str, from_exception, parse_text


def explanation_of(
    error: BaseException | str | bytes, lang: str | None = None, link: bool = True
) -> Explanation:
    """The ranked causes of a live exception or of the text of a traceback or log (bytes are
    decoded as UTF-8; any other object is read as its `str()`).

    A failure inside the doctor gives an Explanation with no causes and `internal_error` set,
    never an exception of its own."""
    from torchdoctor._lang import default_lang

    lang = lang or default_lang()
    try:
        report = (
            from_exception(error)
            if isinstance(error, BaseException)
            else parse_text(_text_of(error))
        )
    except Exception as problem:  # the parser promises not to raise; be sure of it
        return Explanation(ErrorReport(), [], lang, _describe(problem))
    try:
        return diagnose(report, lang, link=link)
    except Exception as problem:
        return Explanation(report, [], lang, _describe(problem))


def explain(error: BaseException | str | bytes, lang: str | None = None) -> dict:
    """The JSON-ready result: `{"findings": [...ranked...], "error": {...parsed...}}`."""
    return explanation_of(error, lang).to_json()


def _text_of(error: object) -> str:
    if isinstance(error, str):
        return error
    if isinstance(error, (bytes, bytearray, memoryview)):
        return bytes(error).decode("utf-8", errors="replace")  # as `explain FILE` reads a log
    return "" if error is None else _safe_str(error)


def _describe(problem: BaseException) -> str:
    return f"{type(problem).__name__}: {_safe_str(problem)}"
