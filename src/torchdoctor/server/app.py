"""The language server: documents in, diagnostics, code actions and hovers out, over stdio.

Checks run in one worker thread, one at a time, so the server keeps answering while a large
project's facts are read. An edit's diagnostics are sent once the typing has paused
(DEBOUNCE_SECONDS), and its check starts well before that, once the typing has paused
SETTLE_SECONDS: the check is done while the server waits anyway, and a key typed meanwhile
stops it (at its next statement) and starts the wait again. An open or a save is checked and
sent at once. A failure of the doctor is logged and answered with no diagnostics: the server
itself keeps running.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import sys
import threading
import traceback
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, TypeVar

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from torchdoctor import __version__
from torchdoctor.errors import UsageError
from torchdoctor.lint.stopping import stoppable
from torchdoctor.report.finding import Finding
from torchdoctor.server.actions import FIX_ALL, code_actions
from torchdoctor.server.analysis import Analysis
from torchdoctor.server.diagnostics import diagnostic
from torchdoctor.server.hover import hover
from torchdoctor.server.positions import Lines

DEBOUNCE_SECONDS = 0.3
# A pause shorter than most between two keys typed in a word, longer than none: the check of a
# version the next key replaces is work thrown away on a machine where it competes for a core.
SETTLE_SECONDS = 0.1
PYTHON_SUFFIXES = (".py", ".pyi")
T = TypeVar("T")
logger = logging.getLogger(__name__)


@dataclass
class Shown:
    """What the editor was last told about one document (a file, or a notebook's cell)."""

    text: str
    findings: list[Finding]
    path: Path | None
    in_notebook: bool
    lang: str


class DoctorServer(LanguageServer):
    def __init__(self, lang: str | None) -> None:
        super().__init__(
            "torchdoctor",
            __version__,
            # The whole text on every change: pygls applies partial edits with `str.splitlines`,
            # which also breaks lines at form feeds and U+2028 where LSP does not, so a buffer
            # holding one would drift from the editor's (and fixes would land on wrong lines).
            text_document_sync_kind=types.TextDocumentSyncKind.Full,
            notebook_document_sync=types.NotebookDocumentSyncOptions(
                notebook_selector=[
                    types.NotebookDocumentFilterWithCells(
                        cells=[types.NotebookCellLanguage("python")]
                    )
                ]
            ),
        )
        self.analysis = Analysis(lang)
        self.shown: dict[str, Shown] = {}
        self.files: set[str] = set()  # the URIs of the open Python files
        self._pending: dict[str, asyncio.Task] = {}  # by file or notebook URI
        self._cells: dict[str, list[str]] = {}  # notebook URI -> cell URIs given diagnostics
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="torchdoctor-check")

    # ---- when to check ------------------------------------------------------------------

    def schedule(self, uri: str, delay: float = 0.0) -> None:
        """Send a file's or notebook's diagnostics in `delay` seconds, checking it meanwhile;
        replaces a check whose diagnostics were not sent yet."""
        pending = self._pending.pop(uri, None)
        if pending is not None:
            pending.cancel()
        loop = asyncio.get_running_loop()
        send_at = loop.time() + delay
        self._pending[uri] = loop.create_task(
            self._check_later(uri, min(delay, SETTLE_SECONDS), send_at)
        )

    async def _check_later(self, uri: str, start_after: float, send_at: float) -> None:
        await asyncio.sleep(start_after)
        await self.check_now(uri, send_at)

    async def check_now(self, uri: str, send_at: float = 0.0) -> None:
        """Check a file or notebook now, and send its diagnostics at loop time `send_at` or at
        once if that has passed. Cancelled before then, it sends nothing."""
        if self.workspace.get_notebook_document(notebook_uri=uri) is not None:
            await self._check_notebook(uri, send_at)
        elif uri in self.workspace.text_documents:
            await self._check_file(uri, send_at)

    async def current(self, uri: str) -> Shown | None:
        """What is known of a document's present text: checked again now if it changed since."""
        notebook = self.workspace.get_notebook_document(cell_uri=uri)
        if notebook is None and uri not in self.workspace.text_documents:
            return None
        shown = self.shown.get(uri)
        if shown is None or shown.text != self.workspace.get_text_document(uri).source:
            owner = notebook.uri if notebook is not None else uri
            pending = self._pending.pop(owner, None)
            if pending is not None:
                pending.cancel()
            await self.check_now(owner)
        return self.shown.get(uri)

    def forget(self, uri: str) -> None:
        pending = self._pending.pop(uri, None)
        if pending is not None:
            pending.cancel()
        for shown_uri in self._cells.pop(uri, [uri]):
            self.shown.pop(shown_uri, None)
            self._publish(shown_uri, [])

    # ---- checking -----------------------------------------------------------------------

    async def _check_file(self, uri: str, send_at: float) -> None:
        document = self.workspace.get_text_document(uri)
        text, version, path = document.source, document.version, _path(uri)
        # One trip to the worker thread for the findings and the language of their hovers: each
        # trip is a wake-up of either thread, on a machine where the check competes for a core.
        checked = await self._contained(
            lambda: (self.analysis.check_python(text, path), self.analysis.lang_for(path))
        )
        (findings, problems), lang = checked or (([], []), "en")
        await _until(send_at)
        self._log_problems(problems)
        self.shown[uri] = Shown(text, findings, path, False, lang)
        self._publish(uri, findings, text, version)

    async def _check_notebook(self, uri: str, send_at: float) -> None:
        notebook = self.workspace.get_notebook_document(notebook_uri=uri)
        if notebook is None:
            return
        documents = [
            self.workspace.get_text_document(cell.document)
            for cell in notebook.cells
            if cell.kind == types.NotebookCellKind.Code
        ]
        documents = [d for d in documents if d.language_id in (None, "python")]
        texts = [d.source for d in documents]
        path = _path(uri)
        checked = await self._contained(
            lambda: (self.analysis.check_notebook(texts, path), self.analysis.lang_for(path))
        )
        (by_cell, problems), lang = checked or (([[] for _ in texts], []), "en")
        await _until(send_at)
        self._log_problems(problems)
        for document, text, findings in zip(documents, texts, by_cell):
            self.shown[document.uri] = Shown(text, findings, path, True, lang)
            self._publish(document.uri, findings, text, document.version)
        present = [d.uri for d in documents]
        for gone in set(self._cells.get(uri, ())) - set(present):  # cells deleted meanwhile
            self.shown.pop(gone, None)
            self._publish(gone, [])
        self._cells[uri] = present

    async def _contained(self, work: Callable[[], T]) -> T | None:
        """`work()` in the worker thread; None, logged, when it failed. Cancelled (the document
        changed meanwhile), the check stops at its next statement, so that the worker is free for
        the check of the new text."""
        stop = threading.Event()

        def stoppable_work() -> T:
            with stoppable(stop):
                return work()

        try:
            return await asyncio.get_running_loop().run_in_executor(self._worker, stoppable_work)
        except asyncio.CancelledError:
            stop.set()
            raise
        except UsageError as error:  # a broken pyproject.toml: the user can mend it
            self.window_show_message(
                types.ShowMessageParams(types.MessageType.Warning, f"torchdoctor: {error}")
            )
            return None
        except Exception:
            self._log(f"torchdoctor: internal error:\n{traceback.format_exc()}")
            return None

    def _publish(
        self, uri: str, findings: list[Finding], text: str = "", version: int | None = None
    ) -> None:
        lines = Lines(text, self.workspace.position_codec)
        params = types.PublishDiagnosticsParams(
            uri, [diagnostic(f, lines) for f in findings], version=version
        )
        self.text_document_publish_diagnostics(params)

    def _log_problems(self, problems: list[str]) -> None:
        for problem in problems:
            self._log(f"torchdoctor: {problem}")

    def _log(self, text: str) -> None:
        logger.error(text)
        self.window_log_message(types.LogMessageParams(types.MessageType.Error, text))


async def _until(moment: float) -> None:
    """Wait until the event loop's clock reads `moment` (no wait once it has)."""
    remaining = moment - asyncio.get_running_loop().time()
    if remaining > 0:
        await asyncio.sleep(remaining)


def _path(uri: str) -> Path | None:
    path = to_fs_path(uri)
    return Path(path) if path else None


def _is_python(document: types.TextDocumentItem) -> bool:
    return document.language_id == "python" or document.uri.endswith(PYTHON_SUFFIXES)


def answered_or_logged(handler):
    """A request handler whose failure is logged and answered with nothing."""

    @functools.wraps(handler)
    async def contained(server: DoctorServer, params):
        try:
            return await handler(server, params)
        except Exception:
            server._log(f"torchdoctor: internal error:\n{traceback.format_exc()}")
            return None

    return contained


def build_server(lang: str | None) -> DoctorServer:
    server = DoctorServer(lang)

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    async def did_open(ls: DoctorServer, params: types.DidOpenTextDocumentParams) -> None:
        if _is_python(params.text_document):
            ls.files.add(params.text_document.uri)
            ls.schedule(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    async def did_change(ls: DoctorServer, params: types.DidChangeTextDocumentParams) -> None:
        if params.text_document.uri in ls.files:
            ls.schedule(params.text_document.uri, DEBOUNCE_SECONDS)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    async def did_save(ls: DoctorServer, params: types.DidSaveTextDocumentParams) -> None:
        saved_file(ls, params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    async def did_close(ls: DoctorServer, params: types.DidCloseTextDocumentParams) -> None:
        ls.files.discard(params.text_document.uri)
        ls.forget(params.text_document.uri)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_OPEN)
    async def notebook_open(ls: DoctorServer, params: types.DidOpenNotebookDocumentParams):
        ls.schedule(params.notebook_document.uri)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_CHANGE)
    async def notebook_change(ls: DoctorServer, params: types.DidChangeNotebookDocumentParams):
        ls.schedule(params.notebook_document.uri, DEBOUNCE_SECONDS)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_SAVE)
    async def notebook_save(ls: DoctorServer, params: types.DidSaveNotebookDocumentParams):
        saved_file(ls, params.notebook_document.uri)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_CLOSE)
    async def notebook_close(ls: DoctorServer, params: types.DidCloseNotebookDocumentParams):
        ls.forget(params.notebook_document.uri)

    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix, FIX_ALL]),
    )
    @answered_or_logged
    async def code_action(ls: DoctorServer, params: types.CodeActionParams):
        uri = params.text_document.uri
        shown = await ls.current(uri)
        if shown is None:
            return None
        lines = Lines(shown.text, ls.workspace.position_codec)
        span = (lines.to_checker(params.range.start), lines.to_checker(params.range.end))
        fix_all = None
        if not shown.in_notebook:  # a cell's fixes are its own; the notebook is one program

            def fix_all() -> str:
                return ls.analysis.fix_python(shown.text, shown.path)

        return code_actions(uri, lines, shown.findings, span, params.context.only, fix_all)

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    @answered_or_logged
    async def on_hover(ls: DoctorServer, params: types.HoverParams):
        shown = await ls.current(params.text_document.uri)
        if shown is None:
            return None
        lines = Lines(shown.text, ls.workspace.position_codec)
        return hover(shown.findings, *lines.to_checker(params.position), shown.lang)

    return server


def saved_file(server: DoctorServer, uri: str) -> None:
    """A saved file may change what its project says of the others: check every open one."""
    path = _path(uri)
    if path is not None:
        server.analysis.projects.forget(path)
    for open_uri in [*server.files, *server.workspace.notebook_documents]:
        server.schedule(open_uri)


def run(lang: str | None) -> int:
    """Serve over stdin and stdout until the editor says exit."""
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # a stray print must not break the protocol
    build_server(lang).start_io(stdin, stdout)
    return 0
