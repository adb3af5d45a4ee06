"""Every regex of the doctor runs in linear time on long adversarial text.

Python's `re` backtracks: `\\w+ and` searched in a 50 KB word starts at every position and
rescans the rest of the word from each (quadratic); `.+?\\s*$` on a line with a long run of
spaces before its end retries the run at every step. Tracebacks, logs, state_dict messages and
source files are user text, so every pattern is fuzzed here.

The patterns are collected, not listed: every module-level compiled pattern of the package
(alone or in a list, tuple or dict; those over bytes, which read whole source files for the
project's facts, as the same pattern over ASCII text), every catalog error signature, and every `re.<function>`
called on a string literal. A new pattern is fuzzed without anyone adding it here.

Inputs are built from the pattern itself: a sample text it matches, with a long run of one
character (each neighbour of the insertion point, a space, a letter, a digit) inserted at each
point between its parts, with and without the rest of the sample after it; each beginning of
the sample repeated, and each part; runs of single characters and of pairs of the pattern's own
characters. A pattern is reported when the time of an input grows with the square of its
length: measured at 1,000 and 8,000 characters (best of three), a linear pattern takes about 8
times longer, a quadratic one 64 times; the bar is 32 times, and 50 ms at least, so that noise on
a busy machine cannot fail it. Only inputs slower than 0.5 ms at 1,000 characters (a linear
search takes microseconds) are measured twice. A search still running after 2 s of CPU fails at
once. Times are CPU times of the thread, which other jobs of a busy machine do not lengthen.
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
import random
import re
import signal
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import NEEDS_TORCH

import torchdoctor
from torchdoctor._regex import LazyPattern
from torchdoctor.catalog import _registry

try:  # Python 3.11+
    from re import _constants as sre
    from re import _parser as sre_parse
except ImportError:  # Python 3.10
    import sre_constants as sre
    import sre_parse

if not hasattr(signal, "setitimer"):
    pytest.skip("a search that hangs is stopped with SIGVTALRM", allow_module_level=True)

PACKAGE = Path(torchdoctor.__file__).parent
# The watcher imports torch; its patterns are found by the literal scan below.
NOT_IMPORTED = ("torchdoctor.watch", "torchdoctor.__main__")
# Patterns applied with `.match` only (anchored at one position), passed around in a
# collection, so the source scan cannot see how they are used.
ANCHORED_COLLECTIONS = {
    "torchdoctor.explain.parse._IPY_FRAMES",
    "torchdoctor.explain.parse._LOG_STARTS",
}
SEARCHING = {"search", "finditer", "findall", "sub", "subn", "split"}
ANCHORING = {"match", "fullmatch"}

SMALL, LARGE = 1_000, 8_000
SCREEN_SECONDS = 0.0005  # a linear search of 1,000 characters takes a few microseconds
QUADRATIC_RATIO = 32  # between linear (8) and quadratic (64) for an 8x longer input
QUADRATIC_FLOOR = 0.05  # below this, 8,000 characters were read in no time at all
HANG_SECONDS = 2


@dataclass(frozen=True)
class Regex:
    pattern: str
    flags: int
    anchored: bool  # used with .match/.fullmatch only
    where: str

    def compiled(self) -> re.Pattern:
        return re.compile(self.pattern, self.flags)


# Modules that import torch, left unread where torch is not installed (a skipped test says so).
NEED_TORCH: list[str] = []


def _modules():
    for info in pkgutil.walk_packages([str(PACKAGE)], "torchdoctor."):
        if not info.name.startswith(NOT_IMPORTED):
            try:
                yield info.name, importlib.import_module(info.name)
            except ModuleNotFoundError as error:
                if error.name != "torch":
                    raise
                NEED_TORCH.append(info.name)


def _patterns_in(value) -> list[re.Pattern]:
    if isinstance(value, (re.Pattern, LazyPattern)):  # lazy: compiled on first use
        return [value]
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, (list, tuple, set, frozenset)):
        return [p for item in value for p in _patterns_in(item)]
    return []


def _uses(source: str) -> dict[str, set[str]]:
    """The methods called on each module-level name: `_FILE.match(...)` -> {"_FILE": {"match"}}."""
    uses: dict[str, set[str]] = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            uses.setdefault(node.value.id, set()).add(node.attr)
    return uses


def _flags(call: ast.Call) -> int:
    positional = {
        "compile": 1,
        "search": 2,
        "match": 2,
        "fullmatch": 2,
        "findall": 2,
        "finditer": 2,
        "split": 3,
        "sub": 4,
        "subn": 4,
    }.get(call.func.attr)
    node = next((k.value for k in call.keywords if k.arg == "flags"), None)
    if node is None and positional is not None and len(call.args) > positional:
        node = call.args[positional]
    if node is None:
        return 0
    return sum(
        {
            getattr(re, n.attr)
            for n in ast.walk(node)
            if isinstance(n, ast.Attribute) and n.attr.isupper() and hasattr(re, n.attr)
        }
    )


def _literal_calls(tree: ast.Module):
    """`re.search("...", ...)` and the like; `re.compile("...")` inside functions only: a
    module-level pattern is collected compiled, with how it is used."""
    in_functions = {
        id(node)
        for function in ast.walk(tree)
        if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        for node in ast.walk(function)
    }
    for call in ast.walk(tree):
        if (
            isinstance(call, ast.Call)
            and isinstance(call.func, ast.Attribute)
            and isinstance(call.func.value, ast.Name)
            and call.func.value.id == "re"
            and call.args
            and isinstance(call.args[0], ast.Constant)
            and isinstance(call.args[0].value, str)
            and (call.func.attr != "compile" or id(call) in in_functions)
        ):
            yield call


def collect() -> list[Regex]:
    found: dict[tuple, Regex] = {}

    def add(pattern, flags: int, anchored: bool, where: str) -> None:
        if isinstance(pattern, bytes):
            # The project facts' patterns read files' bytes: fuzzed as the same pattern over
            # text, ASCII classes as in bytes (they hold no byte above 0x7f).
            pattern, flags = pattern.decode("ascii"), (flags & ~re.UNICODE) | re.ASCII
        if isinstance(pattern, str):
            key = (pattern, flags & ~re.UNICODE, anchored)
            found.setdefault(key, Regex(pattern, flags, anchored, where))

    for name, module in _modules():
        uses = _uses(Path(module.__file__).read_text(encoding="utf-8"))
        for attr, value in vars(module).items():
            qualified = f"{name}.{attr}"
            used = uses.get(attr, set())
            anchored = qualified in ANCHORED_COLLECTIONS or (
                used & ANCHORING and not used & SEARCHING
            )
            for compiled in _patterns_in(value):
                add(compiled.pattern, compiled.flags, bool(anchored), qualified)
    for pitfall in _registry.all_pitfalls():
        for signature in pitfall.error_signatures:
            if signature.regex:
                add(
                    signature.regex,
                    signature.pattern.flags,
                    False,
                    f"{pitfall.name} error signature",
                )
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in _literal_calls(ast.parse(path.read_text(encoding="utf-8"))):
            flags = re.compile(node.args[0].value, _flags(node)).flags
            add(
                node.args[0].value,
                flags,
                node.func.attr in ANCHORING,
                f"{path.relative_to(PACKAGE.parent)}:{node.lineno}",
            )
    return sorted(found.values(), key=lambda r: r.where)


# --- inputs ---------------------------------------------------------------------------------

_PROBES = "xa0 _.:,'\"/()[]-<>#=\t"
_CATEGORIES = {
    sre.CATEGORY_DIGIT: r"\d",
    sre.CATEGORY_NOT_DIGIT: r"\D",
    sre.CATEGORY_SPACE: r"\s",
    sre.CATEGORY_NOT_SPACE: r"\S",
    sre.CATEGORY_WORD: r"\w",
    sre.CATEGORY_NOT_WORD: r"\W",
}
_REPEATS = tuple(
    op
    for op in (sre.MAX_REPEAT, sre.MIN_REPEAT, getattr(sre, "POSSESSIVE_REPEAT", None))
    if op is not None
)


def _in_class(items, char: str) -> bool:
    negated = hit = False
    for op, value in items:
        if op is sre.NEGATE:
            negated = True
        elif op is sre.LITERAL:
            hit |= ord(char) == value
        elif op is sre.RANGE:
            hit |= value[0] <= ord(char) <= value[1]
        elif op is sre.CATEGORY and value in _CATEGORIES:
            hit |= re.match(_CATEGORIES[value], char) is not None
    return hit != negated


def _class_member(items, rnd: random.Random) -> str:
    named = [chr(v) for op, v in items if op is sre.LITERAL]
    named += [chr(v[0]) for op, v in items if op is sre.RANGE]
    probes = list(_PROBES)
    rnd.shuffle(probes)
    return next((c for c in named + probes if _in_class(items, c)), "x")


def _sample(parsed, rnd: random.Random, groups: dict, parts: list[list]) -> None:
    """Append to `parts` a text `parsed` matches (lookarounds aside), cut where its items meet:
    each part is [text, literal], a run of literal characters being one part."""
    for op, value in parsed:
        if op is sre.LITERAL:
            if parts and parts[-1][1]:
                parts[-1][0] += chr(value)
            else:
                parts.append([chr(value), True])
        elif op is sre.NOT_LITERAL:
            parts.append(["y" if value == ord("x") else "x", False])
        elif op is sre.ANY:
            parts.append(["x", False])
        elif op is sre.IN:
            parts.append([_class_member(value, rnd), False])
        elif op in _REPEATS:
            low, high, item = value
            for _ in range(max(low, min(rnd.choice((1, 1, 2, 3)), high))):
                _sample(item, rnd, groups, parts)
        elif op is sre.SUBPATTERN:
            start = len(parts)
            _sample(value[-1], rnd, groups, parts)
            if value[0]:
                groups[value[0]] = "".join(text for text, _ in parts[start:])
        elif op is getattr(sre, "ATOMIC_GROUP", None):
            _sample(value, rnd, groups, parts)
        elif op is sre.BRANCH:
            _sample(rnd.choice(value[1]), rnd, groups, parts)
        elif op is sre.GROUPREF:
            parts.append([groups.get(value, ""), False])
        elif op is sre.GROUPREF_EXISTS:
            _sample(value[1] if value[0] in groups else (value[2] or []), rnd, groups, parts)


def adversarial_shapes(regex: Regex) -> list[tuple[str, str, str]]:
    """The inputs to try, as (before, unit, after): `unit` is repeated to the length wanted."""
    rnd = random.Random(regex.pattern)
    parsed = sre_parse.parse(regex.pattern, regex.flags)
    samples = []
    for _ in range(3):
        parts: list[list] = []
        _sample(parsed, rnd, {}, parts)
        samples.append([text for text, _ in parts if text])
    own = sorted({c for parts in samples for part in parts for c in part})
    shapes = {("", c, "") for c in set(_PROBES) | {"\n"} | set(own)}
    shapes |= {("", a + b, "") for a in own[:12] for b in own[:12] if a < b}
    for parts in samples:
        text = "".join(parts)
        shapes.add(("", text + " ", ""))
        cuts = [0]
        for part in parts:  # a part repeated: `.*X.*Y` retries each X
            shapes.add((text[: cuts[-1]], part, "\x00"))
            cuts.append(cuts[-1] + len(part))
        if len(cuts) > 16:
            cuts = [cuts[round(k * (len(cuts) - 1) / 15)] for k in range(16)]
        for cut in cuts:
            head, tail = text[:cut], text[cut:]
            if head:  # a beginning repeated: each repetition may read on to the end
                shapes.add(("", head + " ", ""))
            for char in {" ", "x", "0", *head[-1:], *tail[:1]}:
                for after in (tail, "\x00", "\x00" + tail):  # the rest, or a mismatch
                    shapes.add((head, char, after))
    return sorted(shapes)


def _built(shape: tuple[str, str, str], length: int) -> str:
    before, unit, after = shape
    return before + unit * (length // len(unit) + 1) + after


# --- timing ---------------------------------------------------------------------------------


class _Hang(Exception):
    pass


def _alarm(signum, frame):
    raise _Hang


def _seconds(regex: re.Pattern, anchored: bool, text: str) -> float:
    """The CPU time of one search: this thread's own, which other jobs of a busy machine do
    not add to (a wall clock did, and failed linear patterns under load); the hang guard counts
    the process's CPU time too."""
    apply = regex.match if anchored else regex.search
    start = time.thread_time()
    signal.setitimer(signal.ITIMER_VIRTUAL, HANG_SECONDS)
    try:
        apply(text)
    except _Hang:
        return float("inf")
    finally:
        signal.setitimer(signal.ITIMER_VIRTUAL, 0)
    return time.thread_time() - start


def superlinear_input(regex: Regex) -> str | None:
    """An input whose search time grows faster than its length, or None."""
    compiled = regex.compiled()
    previous = signal.signal(signal.SIGVTALRM, _alarm)
    try:
        shapes = adversarial_shapes(regex)
        times = {}
        for shape in shapes:
            times[shape] = _seconds(compiled, regex.anchored, _built(shape, SMALL))
            if times[shape] == float("inf"):  # still running after HANG_SECONDS
                return _built(shape, SMALL)
        for shape in sorted(shapes, key=lambda shape: -times[shape]):
            if times[shape] <= SCREEN_SECONDS:
                break
            small, large = _built(shape, SMALL), _built(shape, LARGE)
            long_time = min(_seconds(compiled, regex.anchored, large) for _ in range(3))
            if long_time < QUADRATIC_FLOOR:
                continue
            short_time = min(_seconds(compiled, regex.anchored, small) for _ in range(3))
            if long_time > QUADRATIC_RATIO * short_time:
                return large
        return None
    finally:
        signal.signal(signal.SIGVTALRM, previous)


# --- tests ----------------------------------------------------------------------------------

REGEXES = collect()


def test_every_module_was_read():
    if NEED_TORCH:
        pytest.skip(f"{NEEDS_TORCH}; not read without it: {', '.join(NEED_TORCH)}")


def test_the_collection_finds_the_patterns_that_read_user_text():
    where = {r.where for r in REGEXES}
    assert len(REGEXES) > 200
    assert {
        "torchdoctor.explain.parse._FILE",
        "torchdoctor.explain.parse._EXCEPTION",
        "torchdoctor.lint.noqa._NOQA",
        "torchdoctor.lint.notebook._MAGIC",
        "torchdoctor.knowledge.state_dicts._SHAPES",
    } <= where
    assert any(w.endswith("error signature") for w in where)
    assert any(w.startswith("torchdoctor/catalog/") and ":" in w for w in where)
    anchored = {r.where for r in REGEXES if r.anchored}
    assert "torchdoctor.explain.parse._FILE" in anchored
    assert "torchdoctor.lint.noqa._NOQA" not in anchored


@pytest.mark.parametrize("searched", [r"\w+ and \w+ must", r"(?P<key>\S+?):\s+copying"])
def test_the_fuzzer_catches_a_quadratic_search(searched):
    assert superlinear_input(Regex(searched, 0, False, "known quadratic")) is not None


def test_the_fuzzer_catches_an_exponential_search():
    assert superlinear_input(Regex(r"(x+x+)+y", 0, False, "known exponential")) is not None


def test_the_fuzzer_catches_a_quadratic_match():
    # The frame-line regex as it was: `.+?` then `\s*$` rescans trailing whitespace each step.
    frame = r'\s*File "(?P<path>[^"]*)", line (?P<line>\d+)(?:,? in (?P<function>.+?))?\s*$'
    assert superlinear_input(Regex(frame, 0, True, "known quadratic")) is not None


@pytest.mark.parametrize("regex", REGEXES, ids=[r.where for r in REGEXES])
def test_regex_is_linear(regex):
    text = superlinear_input(regex)
    assert text is None, (
        f"{regex.where}: {regex.pattern!r} takes time growing with the square of its input, "
        f"e.g. {text[:40]!r}...{text[-40:]!r} ({len(text)} characters)"
    )


# Python 3.10, the oldest the package supports, has neither possessive quantifiers (`\w++`) nor
# atomic groups: there `re.compile` raises "multiple repeat" (a project whose `.python-version`
# says 3.10 ran the doctor on 3.10: cooper's, in reading ar).
_NEWER_OPCODES = {
    getattr(sre, name) for name in ("POSSESSIVE_REPEAT", "ATOMIC_GROUP") if hasattr(sre, name)
}


def _opcodes(parsed):
    for op, argument in parsed:
        yield op
        todo = [argument]
        while todo:
            item = todo.pop()
            if isinstance(item, sre_parse.SubPattern):
                yield from _opcodes(item)
            elif isinstance(item, (tuple, list)):
                todo.extend(item)


def test_no_regex_needs_a_newer_python_than_the_package_supports():
    newer = [
        regex.where
        for regex in REGEXES
        if _NEWER_OPCODES.intersection(_opcodes(sre_parse.parse(regex.pattern, regex.flags)))
    ]
    assert not newer, f"possessive quantifiers or atomic groups (Python 3.11+ only): {newer}"
