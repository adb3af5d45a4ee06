"""`torchdoctor explain [FILE|-]`: read a traceback or a log, print its causes and fixes."""

from __future__ import annotations

import os
import stat
import sys
from collections import deque

from torchdoctor.errors import UsageError
from torchdoctor.report import json_output
from torchdoctor.report.stream import write_stderr

# Logs can be large; the error is near the end. Of a larger input only its end is read: this
# much is explained in seconds (reading is linear, but every signature reads it all).
MAX_INPUT_BYTES = 16 * 1024 * 1024
_CHUNK = 1024 * 1024


def run_explain(args, lang: str) -> int:
    """Exit 0 when a cause was found, 1 when nothing was recognised, 2 on unusable input."""
    from torchdoctor.explain.api import explanation_of
    from torchdoctor.explain.render import as_text

    text = _read_input(args.file)
    explanation = explanation_of(text, lang, link=not args.no_link)
    if args.format == "json":
        print(json_output.dumps(json_output.envelope("explain", explanation.to_json())))
    else:
        sys.stdout.write(as_text(explanation))
        if explanation.link_problem:
            write_stderr(f"torchdoctor: {explanation.link_problem}\n")
        if explanation.internal_error:
            write_stderr(f"torchdoctor: internal error: {explanation.internal_error}\n")
    return 0 if explanation.diagnoses else 1


def _read_input(name: str | None) -> str:
    if name in (None, "-"):
        if sys.stdin is None:
            raise UsageError("no input: give a FILE or pipe a traceback into stdin")
        if sys.stdin.isatty():
            print(
                "Paste the traceback or log, then press Ctrl-D (Ctrl-Z Enter on Windows):",
                file=sys.stderr,
            )
        data, cut = _tail(sys.stdin.buffer)
        what = "the input"
    else:
        try:
            data, cut = _read_file(name)
        except OSError as error:
            raise UsageError(f"{name}: {error.strerror or error}") from None
        what = name
    if cut:
        write_stderr(
            f"torchdoctor: {what} is larger than {MAX_INPUT_BYTES >> 20} MiB: only its "
            f"last {MAX_INPUT_BYTES >> 20} MiB were read\n"
        )
        data = data[data.find(b"\n") + 1 :]  # the first line read is cut: drop it
    # Logs mix encodings (a GBK console, a UTF-8 program): never fail on a byte.
    return data.decode("utf-8", errors="replace")


def _read_file(name: str) -> tuple[bytes, bool]:
    """The end of a file the user named, and whether its beginning was left out. A pipe
    (`explain <(cmd)`) or a terminal is read as a stream, to its end."""
    with open(name, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            return _tail(handle)
        skip = max(0, info.st_size - MAX_INPUT_BYTES)
        handle.seek(skip)
        return handle.read(MAX_INPUT_BYTES), skip > 0


def _tail(stream) -> tuple[bytes, bool]:
    """The last MAX_INPUT_BYTES of a stream, and whether more came before them."""
    chunks: deque[bytes] = deque()
    size, cut = 0, False
    while chunk := stream.read(_CHUNK):
        chunks.append(chunk)
        size += len(chunk)
        while size - len(chunks[0]) >= MAX_INPUT_BYTES:
            size -= len(chunks.popleft())
            cut = True
    data = b"".join(chunks)
    if len(data) > MAX_INPUT_BYTES:
        data, cut = data[-MAX_INPUT_BYTES:], True
    return data, cut
