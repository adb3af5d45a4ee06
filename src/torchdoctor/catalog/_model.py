"""What a pitfall is: identity, bilingual explanation, and the detectors attached to it."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import Callable, Iterable, Iterator, Mapping

from torchdoctor._regex import lazy_compile

LANGS = ("en", "zh")

# Explanation headings, in display order. Entries write them in English in both languages;
# the renderer shows the Chinese heading for --lang zh.
SECTIONS = (
    "What it catches",
    "Why is this bad?",
    "Example",
    "Use instead:",
    "Symptoms",
    "Fix safety",
    "Known problems",
    "References",
)
REQUIRED_SECTIONS = ("What it catches", "Why is this bad?", "Example", "Use instead:")
# The sections made of code alone: an entry writes their code once (`Pitfall.example` and
# `Pitfall.use_instead`) and each language's prose leaves them out.
CODE_SECTIONS = ("Example", "Use instead:")
SECTION_TITLES_ZH = {
    "What it catches": "检查什么",
    "Why is this bad?": "为什么有问题？",
    "Example": "示例",
    "Use instead:": "应改为：",
    "Symptoms": "症状",
    "Fix safety": "修复的安全性",
    "Known problems": "已知局限",
    "References": "参考",
}

CODE_PATTERN = lazy_compile(r"^TD\d{3}$")
NAME_PATTERN = lazy_compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")

# A user-visible text in every language: {"en": ..., "zh": ...}.
Text = Mapping[str, str]

# Findings an engine makes itself, about input it could not examine. One entry takes each role
# (see Pitfall.engine_finding); engines ask the registry for it by role, never by code or name.
ROLES = {
    "unparsable-source": "a Python file or notebook cell that does not parse: "
    "make(error, source, path) -> Finding",
    "unreadable-source": "a file or notebook cell given to `check` that is not readable source: "
    "make(reason, path, cell=None) -> Finding",
    "unreadable-checkpoint": "says what a checkpoint the reader cannot read is; `ckpt` shows it "
    "first (the entry's checkpoint check makes the finding)",
}
# Methods named like a monitor hook; each must be one the Monitor base declares.
_HOOK_LIKE = lazy_compile(r"^(?:on|after|before)_\w+$")


def pick(text: Text, lang: str) -> str:
    """The text in `lang`, falling back to English."""
    return text.get(lang) or text["en"]


@dataclass
class StaticDetector:
    node_types: tuple[type, ...]
    check: Callable  # (node, ctx) -> Iterable[Finding]
    # Only call `check` for nodes with one of these names (see lint.checker.node_name); None: all.
    names: frozenset[str] | None = None
    # With `names`: also call it for calls of a bare name an import binds to something whose
    # last part is one of them (`cp(...)` after `from torch.utils.checkpoint import checkpoint
    # as cp`).
    imported: bool = False


@dataclass
class Clue:
    """What an error signature concluded: how sure it is, and the cause/fix texts to show.

    `cause`/`fix` may use str.format fields filled from `fields` (a regex's named groups).
    None falls back to the entry's title (cause) and `fix_hint` (fix).

    `contradicted_by`: the premise of the cause, checked against the user's code when
    `explain` can read it: called with the text of the user's files in the traceback, it says
    whether that code contradicts the cause (numpy data blamed where the code has no numpy but
    an explicit `.double()`); a contradicted cause is demoted below the general answers."""

    confidence: float
    cause: Text | None = None
    fix: Text | None = None
    fields: Mapping[str, str] = field(default_factory=dict)
    contradicted_by: Callable[[list[str]], bool] | None = None


@dataclass
class ErrorSignature:
    """Recognises an error, warning or log line as this pitfall.

    With `regex`, the block's message is searched with it (case-sensitive, re.S); with
    `check`, the function decides: `check(block, report) -> Clue | None`. `types` are exception
    or warning class names without module (`RuntimeError`, `OutOfMemoryError`, `UserWarning`);
    empty means any block, log lines included, and the whole input text as a last resort.

    The regex is compiled on first use, and only for a message that holds one of the literal
    texts the regex cannot match without (`literals`): `explain` starts in a fresh process, and
    compiling every signature of the catalog would be most of its run time.

    `unless`: a pattern searched in the whole input that says the cause's premise is false
    (the user measured what the cause blames, and it was fine): the signature is then silent.

    `words` (a function signature's): lower-case texts one of which the input holds, in any
    capitalisation, whenever `check` can answer; empty: none known, the check always runs. They
    let `explain` leave the entry unimported for an input without them, as `literals` do for a
    regex (tests/test_required_literals.py checks that no fixture a check answers lacks them)."""

    types: frozenset[str]
    regex: str | None = None
    check: Callable | None = None
    confidence: float = 0.9
    cause: Text | None = None
    fix: Text | None = None
    unless: re.Pattern | None = None
    words: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        self._compiled: re.Pattern | None = None

    @cached_property
    def literals(self) -> tuple[str, ...]:
        """Texts one of which every text the regex matches holds (for a function signature:
        its `words`); empty: none known."""
        return required_literals(self.regex) if self.regex else self.words

    @property
    def pattern(self) -> re.Pattern:
        if self._compiled is None:
            self._compiled = re.compile(self.regex or "", re.S)
        return self._compiled

    def search(self, text: str) -> re.Match | None:
        if not may_hold(self.literals, text):
            return None
        return self.pattern.search(text)


def may_hold(literals: tuple[str, ...], text: str) -> bool:
    """Whether `text` may hold a match of a regex that needs one of `literals` (none: any)."""
    return not literals or any(literal in text for literal in literals)


_QUANTIFIERS = "?*+{"
_BREAKS = ".^$|"
_ESCAPED_CLASSES = "wWdDsSbBAZzGnrtfv0123456789xuUN"
# Escapes whose character is written after them (`\x41`, `\u2019`, `\N{...}`, `\101`).
_ESCAPED_CODES = "xuUN0123456789"
# Flags for the whole regex, written first; only `i` and `x` change what a plain character matches.
_GLOBAL_FLAGS = lazy_compile(r"\(\?([aiLmsux]+)\)")


def required_literals(regex: str) -> tuple[str, ...]:
    """Texts one of which every match of `regex` contains: the required literal of each
    top-level alternative (see `required_literal`); empty when one of them has none."""
    flags = _GLOBAL_FLAGS.match(regex)
    if flags:
        if "i" in flags.group(1) or "x" in flags.group(1):
            return ()
        regex = regex[flags.end() :]
    literals = []
    for branch in _top_level_branches(regex):
        literal = required_literal(branch)
        if literal is None:
            return ()
        literals.append(literal)
    return tuple(literals)


def required_literal(regex: str, shortest: int = 4) -> str | None:
    """The longest run of plain characters that every match of `regex` contains, or None.

    Conservative: a regex with a top-level `|` or inline flags has none; classes are skipped,
    and groups too, except one that every match matches once (no quantifier, no alternation in
    it, not a lookaround), whose own run counts; a character followed by a quantifier is not
    counted."""
    if regex.startswith("(?") and regex[2:3] in "aiLmsux" or len(_top_level_branches(regex)) > 1:
        return None
    runs: list[str] = []
    run: list[str] = []
    depth = index = 0
    while index < len(regex):
        char = regex[index]
        literal = None
        if char == "(" and depth == 0:
            group = _group_matched_once(regex, index)
            if group is not None:
                body, index = group
                runs += ["".join(run), required_literal(body, 1) or ""]
                run = []
                index += 1
                continue
        if char == "\\" and index + 1 < len(regex):
            escaped = regex[index + 1]
            index += 1
            if escaped in _ESCAPED_CODES:
                return None  # the character it stands for is not the text written
            if escaped not in _ESCAPED_CLASSES and not escaped.isalnum():
                literal = escaped
        elif char == "[":
            index = _class_end(regex, index)
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char not in _BREAKS and char not in _QUANTIFIERS and char != "}":
            literal = char
        if char in _QUANTIFIERS and run:
            run.pop()  # the quantified character may be absent
        if char == "{":
            index = regex.find("}", index) if "}" in regex[index:] else len(regex)
        if literal is not None and depth == 0:
            following = regex[index + 1 : index + 2]
            run.append(literal)
            if following and following in _QUANTIFIERS:
                run.pop()
                runs.append("".join(run))
                run = []
        else:
            if run:
                runs.append("".join(run))
            run = []
        index += 1
    runs.append("".join(run))
    best = max(runs, key=len)
    return best if len(best) >= shortest else None


def _group_matched_once(regex: str, start: int) -> tuple[str, int] | None:
    """The body of the group opening at `start`, and the index of its `)`, when a match of the
    regex around it matches the group exactly once: a plain, `(?:` or `(?P<name>` group with no
    quantifier after it."""
    if regex.startswith("(?:", start):
        body_start = start + 3
    elif regex.startswith("(?P<", start) and ">" in regex[start:]:
        body_start = regex.index(">", start) + 1
    elif not regex.startswith("(?", start):
        body_start = start + 1
    else:
        return None  # a lookaround, a back reference, a condition, flags
    end = _group_end(regex, start)
    following = regex[end + 1 : end + 2]
    if end == len(regex) or following and following in _QUANTIFIERS:
        return None
    return regex[body_start:end], end


def _group_end(regex: str, start: int) -> int:
    """The index of the `)` that closes the group opening at `start` (len(regex): none)."""
    for index, char, depth in _structure(regex, start):
        if char == ")" and depth == 0:
            return index
    return len(regex)


def _structure(regex: str, start: int = 0) -> Iterator[tuple[int, str, int]]:
    """(index, character, group depth after it) of each character of `regex` from `start` that
    is neither escaped nor inside a character class."""
    depth, index = 0, start
    while index < len(regex):
        char = regex[index]
        if char == "\\":
            index += 2
            continue
        if char == "[":
            index = _class_end(regex, index) + 1
            continue
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        yield index, char, depth
        index += 1


def _class_end(regex: str, start: int) -> int:
    index = start + 1
    if regex[index : index + 1] == "^":
        index += 1
    if regex[index : index + 1] == "]":
        index += 1
    while index < len(regex) and regex[index] != "]":
        index += 2 if regex[index] == "\\" else 1
    return index


def _top_level_branches(regex: str) -> list[str]:
    """The alternatives of `regex` split at its top-level `|` (itself alone when it has none)."""
    branches, begin = [], 0
    for index, char, depth in _structure(regex):
        if char == "|" and depth == 0:
            branches.append(regex[begin:index])
            begin = index + 1
    return branches + [regex[begin:]]


@dataclass
class Pitfall:
    """One catalog entry. Everything about one pitfall lives next to this object, in one file."""

    code: str
    name: str
    title: Text
    # Finding messages, keyed by variant ("" is the default); str.format placeholders allowed.
    messages: Mapping[str, Text]
    # The explanation's prose, `## Heading` sections in each language; the code sections are
    # not in it (see CODE_SECTIONS).
    docs: Text
    default: bool = True
    # The code of the `Example` (triggers the entry) and of `Use instead:` (does not), shown in
    # every language; `example_syntax` is their Markdown fence ("cpp" for extension sources).
    example: str = ""
    use_instead: str = ""
    example_syntax: str = "python"
    fix_title: Text | None = None
    fix_applicability: str | None = None  # "safe" | "unsafe" | "display": the best fix offered
    static_detectors: list[StaticDetector] = field(default_factory=list)
    # Scanners of C++/CUDA extension sources: `scan(source: NativeSource) -> Iterable[Finding]`.
    native_scanners: list[Callable] = field(default_factory=list)
    # False only for entries whose Example cannot be linted as text (documented in the entry).
    lint_example: bool = True
    # True when the static detectors can only fire in code that mentions torch: files that
    # never do are then parsed (for syntax errors) but not walked.
    needs_torch: bool = True
    # True when static findings depend on the files next to the checked one (not only on its
    # text): the cache then keys on the directory listing too.
    reads_neighbours: bool = False
    # What to do about it, shown by the explainer when a signature gives no specific fix.
    fix_hint: Text | None = None
    error_signatures: list[ErrorSignature] = field(default_factory=list)
    # Names of entries whose static findings in the user's code are likely roots of this error
    # (a device mismatch rooted in `x.cuda()` whose result is discarded). The entry's own
    # static findings are always linked.
    root_causes: tuple[str, ...] = ()
    # Runtime monitors (watch/): classes built once per watched run, see watch.monitor.Monitor.
    monitors: list[type] = field(default_factory=list)
    # Checkpoint checks (ckpt/): `check(diff_or_listing) -> Iterable[Finding]`, see ckpt/.
    checkpoint_checks: list[Callable] = field(default_factory=list)
    # The engine-made findings this entry stands for (a key of ROLES), and the function that
    # makes them, when the role has one.
    role: str | None = None
    make_finding: Callable | None = None
    # `repair(source) -> (repaired source, places) | None`: for a source that does not parse
    # only because of an old idiom the entry knows, the same text with it replaced in place
    # (same length, so every position stays right), and where (line, column from 0). The
    # checker then checks the rest of the file and reports the entry's finding at each place.
    source_repairs: list[Callable] = field(default_factory=list)
    module: str = ""

    def __post_init__(self) -> None:
        if self.role is not None and self.role not in ROLES:
            raise ValueError(f"{self.code}: unknown role {self.role!r} (known: {', '.join(ROLES)})")

    def static(
        self, *node_types: type, names: Iterable[str] | None = None, imported: bool = False
    ) -> Callable:
        """Register a static detector called for every AST node of the given types.

        With `names`, it is called only for nodes of that name: a call's function or method
        name (`x.cuda()` -> "cuda", `Variable(x)` -> "Variable"), an expression statement's call
        name, an attribute's `attr`, a name's `id`, the attribute a subscript indexes
        (`loss.data[0]` -> "data"), a function's or class's `name`. The engine
        dispatches on it with a dict, so a narrow detector costs nothing on other nodes. With
        `imported` too, it is also called for a call of a bare name that an import binds to
        something whose last part is one of `names` (`cp(...)` after `from
        torch.utils.checkpoint import checkpoint as cp`, as `ctx.qualname` resolves it): a
        detector of an imported function then needs no call for every call of the file.
        """

        def register(func: Callable[..., Iterable]) -> Callable:
            wanted = frozenset(names) if names is not None else None
            self.static_detectors.append(StaticDetector(node_types, func, wanted, imported))
            return func

        return register

    def native(self, func: Callable) -> Callable:
        """Register a scanner of C++/CUDA sources (see lint.native.NativeSource)."""
        self.native_scanners.append(func)
        return func

    def error(
        self,
        pattern: str,
        *,
        types: Iterable[str] = ("RuntimeError",),
        confidence: float = 0.9,
        cause: Text | None = None,
        fix: Text | None = None,
        unless: re.Pattern | None = None,
    ) -> None:
        """Register an error signature: a regex searched in messages of the given types.

        Named groups become fields of `cause`/`fix` (`{device}`); `unless`: see ErrorSignature."""
        self.error_signatures.append(
            ErrorSignature(frozenset(types), pattern, None, confidence, cause, fix, unless)
        )

    def error_check(
        self, *, types: Iterable[str] = ("RuntimeError",), words: Iterable[str] = ()
    ) -> Callable:
        """Register a function signature: `check(block, report) -> Clue | None`. `words`:
        texts one of which the input holds (any capitalisation) whenever the check answers."""
        needed = tuple(word.lower() for word in words)

        def register(func: Callable) -> Callable:
            self.error_signatures.append(ErrorSignature(frozenset(types), None, func, words=needed))
            return func

        return register

    def monitor(self, cls: type) -> type:
        """Register a runtime monitor class (a watch.monitor.Monitor subclass).

        A method named like a hook that the base class does not declare is a typo that would
        never be called: refused here, at import, as pluggy refuses an unknown hookimpl."""
        base = cls.__mro__[-2]  # the root below `object`: Monitor, which declares every hook
        for klass in cls.__mro__[:-2]:
            for name in klass.__dict__:
                if _HOOK_LIKE.match(name) and name not in base.__dict__:
                    hooks = [h for h in base.__dict__ if _HOOK_LIKE.match(h)]
                    import difflib

                    close = difflib.get_close_matches(name, hooks, n=1)
                    hint = f"; did you mean `{close[0]}`?" if close else ""
                    raise TypeError(
                        f"{self.code}: {klass.__qualname__}.{name} is not a monitor "
                        f"hook{hint} (hooks: {', '.join(hooks)})"
                    )
        self.monitors.append(cls)
        return cls

    def engine_finding(self, role: str) -> Callable:
        """Register the function an engine calls to make this entry's finding for `role`."""
        if role not in ROLES:
            raise ValueError(f"{self.code}: unknown role {role!r} (known: {', '.join(ROLES)})")

        def register(func: Callable) -> Callable:
            self.role, self.make_finding = role, func
            return func

        return register

    def source_repair(self, func: Callable) -> Callable:
        """Register a repair of a source that does not parse (see `source_repairs`)."""
        self.source_repairs.append(func)
        return func

    def checkpoint(self, func: Callable) -> Callable:
        """Register a checkpoint check used by `torchdoctor ckpt`."""
        self.checkpoint_checks.append(func)
        return func

    @property
    def area(self) -> str:
        return self.module.rsplit(".", 2)[-2] if self.module.count(".") >= 2 else ""

    def detector_kinds(self) -> list[str]:
        kinds = ["static"] if self.static_detectors or self.native_scanners else []
        if self.error_signatures:
            kinds.append("explain")
        if self.monitors:
            kinds.append("runtime")
        if self.checkpoint_checks:
            kinds.append("ckpt")
        return kinds

    def message(self, variant: str, lang: str, **fields: object) -> str:
        """The message of `variant` in `lang`; a field given in every language (a dict with an
        "en" key) is given in `lang` too."""
        fields = {
            name: pick(value, lang) if isinstance(value, dict) and "en" in value else value
            for name, value in fields.items()
        }
        return pick(self.messages[variant], lang).format(**fields)

    def sections(self, lang: str) -> dict[str, str]:
        """The explanation's `## Heading` sections in display order: the prose in `lang`, with
        the code sections placed after the prose sections that come before them."""
        prose = list(split_sections(pick(self.docs, lang)).items())
        if not self.example:  # an entry that still writes its code in each language's prose
            return dict(prose)
        code = [
            (CODE_SECTIONS[0], self._fenced(self.example)),
            (CODE_SECTIONS[1], self._fenced(self.use_instead)),
        ]
        earlier = SECTIONS[: SECTIONS.index(CODE_SECTIONS[0])]
        at = next((i for i, (heading, _) in enumerate(prose) if heading not in earlier), len(prose))
        return dict(prose[:at] + code + prose[at:])

    def explanation(self, lang: str) -> str:
        """The whole explanation in `lang` as Markdown, code sections included."""
        return "\n\n".join(f"## {heading}\n{body}" for heading, body in self.sections(lang).items())

    def _fenced(self, code: str) -> str:
        return f"```{self.example_syntax}\n{code.strip(chr(10))}\n```"


def split_sections(doc: str) -> dict[str, str]:
    sections: dict[str, str] = {}
    current = None
    lines: list[str] = []
    for line in doc.strip("\n").splitlines():
        if line.startswith("## "):
            if current is not None:
                sections[current] = "\n".join(lines).strip("\n")
            current, lines = line[3:].strip(), []
        else:
            lines.append(line)
    if current is not None:
        sections[current] = "\n".join(lines).strip("\n")
    return sections
