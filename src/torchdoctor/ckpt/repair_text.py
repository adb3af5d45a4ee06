"""The lines that say which safe repairs were made to a checkpoint, in the user's language:
shared by `torchdoctor ckpt fix` and `torchdoctor.load_state_dict`."""

from __future__ import annotations

from torchdoctor.report import strings


def repair_lines(diff, where, unwrap: bool | None, lang: str) -> list[str]:
    """One line per safe repair the diff applies."""
    lines = []
    for difference in diff.differences:
        fields = difference.fields
        if difference.kind == "nesting":
            kind = {True: "nesting", False: "nesting-kept", None: "nesting-taken"}[unwrap]
            lines.append(strings.text(f"ckpt.repair-{kind}", lang, access=access(where)))
        elif difference.kind == "wrapped-part":
            lines.append(strings.text("ckpt.repair-wrapped-part", lang, **fields))
        elif difference.kind in ("prefix", "batches-tracked"):
            key = f"ckpt.repair-{difference.kind}-{fields['side']}"
            lines.append(strings.text(key, lang, **fields))
    return lines


def access(where: tuple[str, ...]) -> str:
    """How Python code reaches the weights: `checkpoint["state_dict"]`."""
    return "checkpoint" + "".join(f'["{part}"]' for part in where)
