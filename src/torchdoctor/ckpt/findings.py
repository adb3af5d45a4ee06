"""Runs the catalog's checkpoint checks: each entry turns the facts it owns into findings."""

from __future__ import annotations

from dataclasses import dataclass

from torchdoctor.catalog._model import Pitfall, Text, pick
from torchdoctor.ckpt.diff import Diff
from torchdoctor.ckpt.inspect import Listing
from torchdoctor.ckpt.reader import Unreadable
from torchdoctor.report import strings
from torchdoctor.report.finding import Finding, Fix


@dataclass
class Subject:
    """What the checks look at: a file that could not be read, its listing, maybe a diff."""

    path: str
    lang: str
    problem: Unreadable | None = None
    listing: Listing | None = None
    diff: Diff | None = None
    model: str = ""  # the --model SPEC of a diff, or the other file's path
    # How the reference side is called in messages ("the model", "`b.pth`").
    reference: Text | None = None

    def text(self, text: Text) -> str:
        return pick(text, self.lang)

    def finding(
        self,
        pitfall: Pitfall,
        variant: str,
        *,
        keys=(),
        repairable: bool = False,
        options: str = "",
        **fields,
    ) -> Finding:
        fields.setdefault(
            "reference", self.text(self.reference or strings.in_every_language("ckpt.the_model"))
        )
        message = pitfall.message(variant, self.lang, **fields)
        fix = None
        if repairable:
            if self.model and ":" in self.model:
                options = f" --model {self.model}{options}"
            title = strings.text("ckpt.fix_command", self.lang, path=self.path, model=options)
            fix = Fix("safe", title, ())
        extra = {"keys": list(keys)} if keys else {}
        return Finding(
            pitfall.code, pitfall.name, message, origin="ckpt", path=self.path, fix=fix, extra=extra
        )


def findings(subject: Subject) -> list[Finding]:
    from torchdoctor.catalog import all_pitfalls

    found: list[Finding] = []
    for pitfall in all_pitfalls():
        for check in pitfall.checkpoint_checks:
            found.extend(check(subject))
    return found


def problem_message(subject: Subject) -> str:
    """One line for a file that cannot be read: what it is, then any danger it still holds."""
    from torchdoctor.catalog._registry import for_role

    found = findings(subject)
    first = for_role("unreadable-checkpoint").code
    found.sort(key=lambda f: f.code != first)
    return "; ".join(f.message for f in found)
