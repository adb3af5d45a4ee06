"""`torchdoctor explain [FILE|-]`: read a traceback or a log, print its causes and fixes."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from torchdoctor.errors import UsageError

# Logs can be large; the error is near the end. Reading more than this is never needed.
MAX_INPUT_BYTES = 64 * 1024 * 1024


def run_explain(args, lang: str) -> int:
    """Exit 0 when a cause was found, 1 when nothing was recognised, 2 on unusable input."""
    from torchdoctor.explain.api import explanation_of
    from torchdoctor.explain.render import as_text

    text = _read_input(args.file)
    explanation = explanation_of(text, lang, link=not args.no_link)
    if args.format == "json":
        print(json.dumps(explanation.to_json(), indent=2, ensure_ascii=False))
    else:
        sys.stdout.write(as_text(explanation))
        if explanation.internal_error:
            print(f"torchdoctor: internal error: {explanation.internal_error}", file=sys.stderr)
    return 0 if explanation.diagnoses else 1


def _read_input(name: str | None) -> str:
    if name in (None, "-"):
        if sys.stdin is None:
            raise UsageError("no input: give a FILE or pipe a traceback into stdin")
        if sys.stdin.isatty():
            print("Paste the traceback or log, then press Ctrl-D (Ctrl-Z Enter on Windows):",
                  file=sys.stderr)
        data = sys.stdin.buffer.read(MAX_INPUT_BYTES)
    else:
        path = Path(name)
        try:
            with open(path, "rb") as handle:
                handle.seek(max(0, path.stat().st_size - MAX_INPUT_BYTES))
                data = handle.read()
        except OSError as error:
            raise UsageError(f"{name}: {error.strerror or error}") from None
    # Logs mix encodings (a GBK console, a UTF-8 program): never fail on a byte.
    return data.decode("utf-8", errors="replace")
