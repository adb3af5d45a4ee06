"""`torchdoctor server`: a Language Server Protocol server over stdio (needs pygls)."""

from __future__ import annotations

from torchdoctor.errors import UsageError


def serve(lang: str | None) -> int:
    try:
        from torchdoctor.server.app import run
    except ImportError as error:
        if error.name is None or error.name.partition(".")[0] not in ("pygls", "lsprotocol"):
            raise
        raise UsageError(
            "the language server needs pygls: install torchdoctor[server] "
            "(pip install 'torchdoctor[server]')"
        ) from None
    return run(lang)
