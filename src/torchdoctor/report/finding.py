"""The one result type every engine produces."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Applicability = Literal["safe", "unsafe", "display"]
Origin = Literal["static", "explain", "runtime", "ckpt"]


@dataclass(frozen=True)
class Edit:
    """Replace the text between two character offsets of the file's source."""

    start: int
    end: int
    content: str
    # 1-based positions of start/end, for editors that want rows and columns.
    line: int = 0
    column: int = 0
    end_line: int = 0
    end_column: int = 0

    def to_json(self) -> dict:
        return {
            "content": self.content,
            "start": self.start,
            "end": self.end,
            "location": {"line": self.line, "column": self.column},
            "end_location": {"line": self.end_line, "column": self.end_column},
        }

    @classmethod
    def from_json(cls, data: dict) -> Edit:
        return cls(
            data["start"],
            data["end"],
            data["content"],
            data["location"]["line"],
            data["location"]["column"],
            data["end_location"]["line"],
            data["end_location"]["column"],
        )


@dataclass(frozen=True)
class Fix:
    applicability: Applicability
    title: str
    edits: tuple[Edit, ...]
    # The title in every language ({"en": ..., "zh": ...}), when it comes from the catalog: the
    # title is then given in the language asked for when the finding is shown.
    titles: dict | None = field(default=None, compare=False, repr=False)

    def to_json(self) -> dict:
        return {
            "applicability": self.applicability,
            "title": self.title,
            "edits": [e.to_json() for e in self.edits],
        }

    @classmethod
    def from_json(cls, data: dict) -> Fix:
        return cls(
            data["applicability"], data["title"], tuple(Edit.from_json(e) for e in data["edits"])
        )


@dataclass
class Finding:
    """One pitfall found at one place. Lines and columns are 1-based; columns count characters."""

    code: str
    name: str
    message: str
    origin: Origin = "static"
    path: str = ""
    line: int = 1
    column: int = 1
    end_line: int = 1
    end_column: int = 1
    cell: int | None = None
    fix: Fix | None = None
    confidence: float | None = None
    extra: dict = field(default_factory=dict)
    # What `message` is made from, when it is a catalog message: (variant, fields). The message
    # is then written again in the language asked for when the finding is shown (localize.py).
    template: tuple[str, dict] | None = field(default=None, compare=False, repr=False)

    def sort_key(self) -> tuple:
        return (self.path, self.cell or 0, self.line, self.column, self.code)

    def to_json(self) -> dict:
        data = {
            "code": self.code,
            "name": self.name,
            "message": self.message,
            "origin": self.origin,
            "path": self.path,
            "line": self.line,
            "column": self.column,
            "end_line": self.end_line,
            "end_column": self.end_column,
            "fix": self.fix.to_json() if self.fix else None,
        }
        if self.cell is not None:
            data["cell"] = self.cell
        if self.confidence is not None:
            data["confidence"] = self.confidence
        if self.extra:
            data.update(self.extra)
        return data

    @classmethod
    def from_json(cls, data: dict) -> Finding:
        known = {
            "code",
            "name",
            "message",
            "origin",
            "path",
            "line",
            "column",
            "end_line",
            "end_column",
            "cell",
            "fix",
            "confidence",
        }
        return cls(
            code=data["code"],
            name=data["name"],
            message=data["message"],
            origin=data.get("origin", "static"),
            path=data.get("path", ""),
            line=data["line"],
            column=data["column"],
            end_line=data["end_line"],
            end_column=data["end_column"],
            cell=data.get("cell"),
            fix=Fix.from_json(data["fix"]) if data.get("fix") else None,
            confidence=data.get("confidence"),
            extra={k: v for k, v in data.items() if k not in known},
        )
